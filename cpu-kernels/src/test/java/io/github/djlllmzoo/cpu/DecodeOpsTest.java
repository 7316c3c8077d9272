package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.RotaryEmbedding;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class DecodeOpsTest extends ManagedArraysTest {

    private static final double U = RoundingBound.EPSILON / 2; // float32's unit roundoff

    private final CpuKernels kernels = new CpuKernels(true, true);

    @BeforeEach
    void kernelsBuiltAndLoadedWhereTheCpuHasAvx512() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    /**
     * The kernel and the engine each sum W squares (off by {@link RoundingBound#ofSums} of the
     * squares, relative to their sum; half of it after the square root), then round the epsilon's
     * addition, the root, the reciprocal and two products by half an ulp each.
     */
    @ParameterizedTest(name = "rows={0} W={1} 1+w={2}")
    @CsvSource({
        "1, 768, false", // a decode step of the Llama-110M shape
        "1, 768, true", // Gemma's 1 + w
        "8, 2048, false", // batch 8 of TinyLlama's width
        "3, 37, false", // a width not a multiple of 16
        "5, 7, true", // narrower than one vector
        "96, 64, true", // per-head q/k norms of a decode step (B * H rows of head_dim)
        "128, 768, false", // a prefill of the Llama-110M shape, its rows split across the cores
        "1031, 37, true", // an odd prefill of an odd width
    })
    void rmsNormEqualsTheReference(int rows, int width, boolean unitOffset) {
        NDArray x = manager.randomNormal(new Shape(rows, 1, width)).muli(3);
        NDArray weight = manager.randomNormal(new Shape(width));
        float eps = 1e-6f;
        assertTrue(DecodeOps.takesRmsNorm(x, weight));
        float[] kernel = kernels.rmsNorm(x, weight, eps, unitOffset, false).toFloatArray();
        float[] reference = EngineKernels.INSTANCE.rmsNorm(x, weight, eps, unitOffset, false).toFloatArray();
        float[] xs = x.toFloatArray();
        for (int r = 0; r < rows; r++) {
            double sum = 0;
            double fourth = 0;
            for (int k = 0; k < width; k++) {
                double square = (double) xs[r * width + k] * xs[r * width + k];
                sum += square;
                fourth += square * square;
            }
            double relative = RoundingBound.ofSums(width, Math.sqrt(fourth)) / sum / 2 + 2 * 5 * U;
            for (int k = 0; k < width; k++) {
                int i = r * width + k;
                assertEquals(reference[i], kernel[i], relative * Math.abs(reference[i]) + Float.MIN_NORMAL,
                        "row " + r + " element " + k);
            }
        }
    }

    /**
     * Each side sums W elements for the mean (the two means differ by {@link RoundingBound#ofSums}
     * over W), W squares of the centred values for the variance (relatively, {@code ofSums} of the
     * squares over their sum, half of it after the root), a mean off by {@code dm} moves each
     * centred value by {@code dm} and their mean square by {@code dm^2}; then a subtraction, the
     * epsilon's addition, the root, the reciprocal, two products and the bias's addition round by
     * half an ulp each. The engine may compute {@code x * (r w) + (b - mean r w)}, whose terms of
     * {@code |x r w|}, {@code |mean r w|} and {@code |b|} each round too.
     */
    @ParameterizedTest(name = "rows={0} W={1} mean={2}")
    @CsvSource({
        "1, 768, 0", // a decode step of GPT-2 small
        "128, 768, 0", // a prefill of GPT-2 small, its rows split across the cores
        "128, 768, 20", // rows far from zero: the centred values are what is left after cancelling
        "3, 37, 1", // a width not a multiple of 16
        "1031, 7, -2", // an odd prefill narrower than one vector
    })
    void layerNormEqualsTheReference(int rows, int width, float mean) {
        NDArray x = manager.randomNormal(new Shape(rows, 1, width)).muli(3).addi(mean);
        NDArray weight = manager.randomNormal(new Shape(width));
        NDArray bias = manager.randomNormal(new Shape(width));
        float eps = 1e-5f;
        assertTrue(DecodeOps.takesLayerNorm(x, weight, bias));
        float[] kernel = kernels.layerNorm(x, weight, bias, eps, false).toFloatArray();
        float[] reference = EngineKernels.INSTANCE.layerNorm(x, weight, bias, eps, false).toFloatArray();
        float[] xs = x.toFloatArray();
        float[] ws = weight.toFloatArray();
        float[] bs = bias.toFloatArray();
        for (int r = 0; r < rows; r++) {
            double sum = 0;
            double squares = 0;
            for (int k = 0; k < width; k++) {
                sum += xs[r * width + k];
                squares += (double) xs[r * width + k] * xs[r * width + k];
            }
            double m = sum / width;
            double centredSquares = 0;
            double fourth = 0;
            for (int k = 0; k < width; k++) {
                double c = xs[r * width + k] - m;
                centredSquares += c * c;
                fourth += c * c * c * c;
            }
            double dm = RoundingBound.ofSums(width, Math.sqrt(squares)) / width + 2 * U * Math.abs(m);
            double variance = centredSquares / width;
            double relativeRoot = (RoundingBound.ofSums(width, Math.sqrt(fourth)) / centredSquares
                    + dm * dm / variance) / 2 + 2 * 4 * U;
            double root = 1 / Math.sqrt(variance + eps);
            for (int k = 0; k < width; k++) {
                int i = r * width + k;
                double c = xs[i] - m;
                double scale = root * Math.abs(ws[k]);
                double bound = scale * (dm + 2 * U * Math.abs(c))
                        + scale * Math.abs(c) * (relativeRoot + 2 * 2 * U)
                        + 2 * U * (scale * (Math.abs(xs[i]) + Math.abs(m)) + Math.abs(bs[k]) + Math.abs(reference[i]));
                assertEquals(reference[i], kernel[i], bound + Float.MIN_NORMAL, "row " + r + " element " + k);
            }
        }
    }

    /**
     * Each element is {@code a + b} of two rounded products on both sides (fused or not): each
     * side within {@code 2u (|a| + |b|)} of the exact value.
     */
    @ParameterizedTest(name = "B={0} H={1} H_kv={2} T={3} D={4} per sequence={5} views={6}")
    @CsvSource({
        "1, 12, 12, 1, 64, false, false", // a decode step of the Llama-110M shape
        "4, 8, 2, 1, 128, true, false", // a batch, grouped query heads, each sequence its own position
        "2, 3, 1, 5, 10, true, false", // five positions, a half of 5 (not a multiple of 16)
        "8, 4, 4, 1, 40, false, false", // batch 8 sharing the positions, a half of 20
        "1, 12, 4, 128, 64, false, true", // a Llama-110M prefill: heads as views of the projections' rows
        "3, 6, 2, 37, 10, true, true", // a left-padded batch's prefill, its own positions per sequence
        "2, 4, 4, 9, 64, false, false", // a prefill's dense heads
    })
    void rotationEqualsTheReference(
            long b, long heads, long kvHeads, long t, int d, boolean perSequence, boolean views) {
        RotaryEmbedding rope = new RotaryEmbedding(d, 256, 10000, null);
        long sequences = perSequence ? b : 1;
        NDArray positions = manager.randomInteger(0, 256, new Shape(sequences, t), DataType.INT64);
        NDList cosSin = rope.cosSin(positions, manager, DataType.FLOAT32);
        NDArray q = views
                ? manager.randomNormal(new Shape(b, t, heads, d)).muli(3).transpose(0, 2, 1, 3)
                : manager.randomNormal(new Shape(b, heads, t, d)).muli(3);
        NDArray k = views
                ? manager.randomNormal(new Shape(b, t, kvHeads, d)).muli(3).transpose(0, 2, 1, 3)
                : manager.randomNormal(new Shape(b, kvHeads, t, d)).muli(3);
        NDArray[] inputs = {q.duplicate(), k.duplicate()}; // the kernel may rotate q and k in place
        NDArray[] reference = EngineKernels.INSTANCE.rotate(q, k, cosSin, false);
        NDArray[] kernel = kernels.rotate(q, k, cosSin, false);
        float[] cos = cosSin.get(0).toFloatArray();
        float[] sin = cosSin.get(1).toFloatArray();
        for (int j = 0; j < 2; j++) {
            assertTrue(DecodeOps.takesRotation(inputs[j], cosSin));
            assertEquals(inputs[j].getShape(), kernel[j].getShape());
            float[] x = inputs[j].toFloatArray();
            float[] expected = reference[j].toFloatArray();
            float[] actual = kernel[j].toFloatArray();
            long rowsPerSequence = inputs[j].getShape().get(1) * t;
            for (int i = 0; i < x.length; i++) {
                int row = i / d;
                int lane = i % d;
                int table = (int) (((perSequence ? row / rowsPerSequence : 0) * t + row % t) * d + lane);
                int swapped = row * d + (lane + d / 2) % d;
                double bound = 2 * 2 * U * (Math.abs(x[i] * cos[table]) + Math.abs(x[swapped] * sin[table]));
                assertEquals(expected[i], actual[i], bound + Float.MIN_NORMAL, (j == 0 ? "q" : "k") + " element " + i);
            }
        }
    }

    /**
     * Dense heads (a decode step's, and a prefill's split across the cores) rotated over themselves
     * hold exactly what the kernel writes into a new array: each head's halves are read before
     * either is written.
     */
    @ParameterizedTest(name = "B={0} H={1} T={2} D={3}")
    @CsvSource({
        "1, 12, 1, 64", // a decode step of the Llama-110M shape
        "8, 4, 1, 40", // batch 8, a half of 20
        "2, 16, 128, 64", // dense heads of a prefill, split across the cores
    })
    void rotationInPlaceEqualsTheNewArraysBitForBit(long b, long heads, long t, int d) {
        RotaryEmbedding rope = new RotaryEmbedding(d, 256, 10000, null);
        NDList cosSin = rope.cosSin(manager.randomInteger(0, 256, new Shape(1, t), DataType.INT64), manager,
                DataType.FLOAT32);
        NDArray x = manager.randomNormal(new Shape(b, heads, t, d)).muli(3);
        float[] apart = DecodeOps.rotate(x, cosSin).toFloatArray();
        NDArray rotated = DecodeOps.rotateInPlace(x, cosSin);
        assertSame(x, rotated);
        assertArrayEquals(apart, rotated.toFloatArray());
    }

    /** With the switch off, the kernels rotate into new arrays and leave q and k as they were. */
    @Test
    void theSwitchOffLeavesTheHeadsUnrotated() {
        System.setProperty(KernelSwitches.PROPERTY, DecodeOps.ROTATE_IN_PLACE_SWITCH);
        CpuKernels apart;
        try {
            apart = new CpuKernels(true, true);
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
        RotaryEmbedding rope = new RotaryEmbedding(64, 256, 10000, null);
        NDList cosSin = rope.cosSin(manager.create(new long[] {17}, new Shape(1, 1)), manager, DataType.FLOAT32);
        NDArray q = manager.randomNormal(new Shape(1, 12, 1, 64));
        NDArray k = manager.randomNormal(new Shape(1, 4, 1, 64));
        float[] qs = q.toFloatArray();
        float[] ks = k.toFloatArray();
        NDArray[] off = apart.rotate(q, k, cosSin, false);
        assertArrayEquals(qs, q.toFloatArray());
        assertArrayEquals(ks, k.toFloatArray());
        NDArray[] on = kernels.rotate(q, k, cosSin, false);
        assertSame(q, on[0]);
        assertSame(k, on[1]);
        assertArrayEquals(off[0].toFloatArray(), q.toFloatArray());
        assertArrayEquals(off[1].toFloatArray(), k.toFloatArray());
    }

    /**
     * The sigmoid's argument {@code a} is the input (SiLU) or three roundings of it (GELU-tanh),
     * so off by up to {@code 3u |a|}, which the sigmoid carries as at most {@code 3u |a|} relative;
     * the sigmoid itself (an exponential within 2 ulp, an addition, a division) is within about
     * {@code 4u}, and the products by the input and by up {@code u} each. Both sides: twice that.
     * Where the sigmoid falls below float32's normal range one side may give 0, the other a
     * subnormal: up to {@code Float.MIN_NORMAL} times the products.
     */
    @ParameterizedTest(name = "{0} n={1} up={2}")
    @CsvSource({
        "SILU, 2048, true", // Llama-110M's MLP, a decode step
        "SILU, 8, true",
        "SILU, 1001, false",
        "GELU_TANH, 3072, false", // GPT-2 small's c_fc
        "GELU_TANH, 3 , true",
        "GELU_TANH, 45056, true", // batch 8 of TinyLlama's MLP
        "SILU, 262144, true", // a Llama-110M prefill's MLP, split across the cores
        "GELU_TANH, 393221, false", // about a GPT-2 prefill's c_fc, not a multiple of 16
    })
    void activationEqualsTheReference(HiddenActivation activation, int n, boolean withUp) {
        NDArray gate = manager.randomNormal(new Shape(1, 1, n)).muli(3);
        NDArray up = withUp ? manager.randomNormal(new Shape(1, 1, n)) : null;
        assertTrue(DecodeOps.takesActivation(gate, up));
        float[] reference = EngineKernels.INSTANCE.activate(gate, up, activation, false).toFloatArray();
        float[] g = gate.toFloatArray();
        NDArray activated = kernels.activate(gate, up, activation, false);
        assertSame(gate, activated, "the result is written over the gate, no fresh array");
        float[] kernel = activated.toFloatArray();
        float[] u = withUp ? up.toFloatArray() : null;
        for (int i = 0; i < n; i++) {
            double argument = activation == HiddenActivation.SILU
                    ? g[i]
                    : 2 * Math.sqrt(2 / Math.PI) * g[i] * (1 + 0.044715 * g[i] * g[i]);
            double relative = 2 * ((4 + 2) * U + 3 * U * Math.abs(argument));
            double subnormal = Float.MIN_NORMAL * (1 + Math.abs(g[i] * (u == null ? 1 : u[i])));
            assertEquals(reference[i], kernel[i], relative * Math.abs(reference[i]) + subnormal,
                    activation + " element " + i + " of gate " + g[i]);
        }
    }

    @Test
    void aTrainingPassRecordsGradientsThroughTheReference() {
        NDArray x = manager.randomNormal(new Shape(1, 1, 32));
        NDArray weight = manager.randomNormal(new Shape(32));
        NDArray up = manager.randomNormal(new Shape(1, 1, 32));
        x.setRequiresGradient(true);
        weight.setRequiresGradient(true);
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            NDArray normed = kernels.rmsNorm(x, weight, 1e-6f, false, true);
            NDArray activated = kernels.activate(normed, up, HiddenActivation.SILU, true);
            collector.backward(activated.sum());
        }
        assertTrue(weight.getGradient().abs().sum().getFloat() > 0, "the norm's weight got a gradient");
        assertTrue(x.getGradient().abs().sum().getFloat() > 0, "the input got a gradient");
    }

    @Test
    void inputsTheKernelsCannotReadGoToTheReference() {
        NDArray weight = manager.randomNormal(new Shape(64));
        NDArray half = manager.randomNormal(new Shape(1, 1, 64)).toType(DataType.FLOAT16, false);
        assertFalse(DecodeOps.takesRmsNorm(half, weight), "a float16 input");
        assertFalse(DecodeOps.takesLayerNorm(half, weight, weight), "a float16 input");
        assertFalse(DecodeOps.takesLayerNorm(manager.randomNormal(new Shape(1, 1, 64)), weight,
                manager.randomNormal(new Shape(32))), "a narrower bias");
        assertFalse(DecodeOps.takesActivation(half, null), "a float16 input");
        NDArray strided = manager.randomNormal(new Shape(2, 3, 64)).transpose(1, 0, 2);
        assertFalse(DecodeOps.takesRmsNorm(strided, weight), "a transposed view");
        assertFalse(DecodeOps.takesRmsNorm(manager.randomNormal(new Shape(1, 1, 32)), weight), "a narrower input");
        NDArray x = manager.randomNormal(new Shape(1, 1, 64));
        assertFalse(DecodeOps.takesActivation(x, manager.randomNormal(new Shape(1, 2, 64))), "up of another shape");
        NDArray heads = manager.randomNormal(new Shape(2, 4, 1, 16));
        NDList cosSin = new RotaryEmbedding(16, 8, 10000, null)
                .cosSin(manager.create(new long[] {1, 2, 3}, new Shape(3, 1)), manager, DataType.FLOAT32);
        assertFalse(DecodeOps.takesRotation(heads, cosSin), "positions of three sequences for two");
        NDList three = new RotaryEmbedding(16, 8, 10000, null)
                .cosSin(manager.create(new long[] {1, 2, 3}, new Shape(1, 3)), manager, DataType.FLOAT32);
        NDArray everyOther = manager.randomNormal(new Shape(2, 4, 6, 16)).get(":, :, ::2, :"); // (2, 4, 3, 16)
        assertFalse(DecodeOps.takesRotation(everyOther, three), "heads that are neither dense nor rows transposed");
    }

    @Test
    void aTrainingPassThroughLayerNormRecordsGradientsThroughTheReference() {
        NDArray x = manager.randomNormal(new Shape(2, 3, 32));
        NDArray weight = manager.randomNormal(new Shape(32));
        NDArray bias = manager.randomNormal(new Shape(32));
        bias.setRequiresGradient(true);
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            collector.backward(kernels.layerNorm(x, weight, bias, 1e-5f, true).sum());
        }
        assertTrue(bias.getGradient().abs().sum().getFloat() > 0, "the norm's bias got a gradient");
    }

    @Test
    void theLayerNormSwitchLeavesTheNormToTheEngine() {
        NDArray x = manager.randomNormal(new Shape(4, 1, 40)).addi(7);
        NDArray weight = manager.randomNormal(new Shape(40));
        NDArray bias = manager.randomNormal(new Shape(40));
        System.setProperty(KernelSwitches.PROPERTY, DecodeOps.LAYER_NORM_SWITCH);
        try {
            CpuKernels off = new CpuKernels(true, true);
            assertTrue(off.toString().contains("layer norm off"), off.toString());
            float[] engine = EngineKernels.INSTANCE.layerNorm(x, weight, bias, 1e-5f, false).toFloatArray();
            assertArrayEquals(engine, off.layerNorm(x, weight, bias, 1e-5f, false).toFloatArray(),
                    "with the switch off the engine computes it, bit for bit");
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
    }

    @Test
    void theSwitchTurnsTheKernelsOff() {
        assertTrue(new CpuKernels().decodeOps(), "on by default");
        System.setProperty(KernelSwitches.PROPERTY, DecodeOps.SWITCH);
        try {
            assertFalse(new CpuKernels().decodeOps());
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
    }
}
