package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class FusedProductsTest extends ManagedArraysTest {

    private static final double U = RoundingBound.EPSILON / 2; // float32's unit roundoff

    /** The largest |act'(g)| over all g: SiLU's is 1.0998, GELU-tanh's 1.1289. */
    private static final double SLOPE = 1.13;

    private final CpuKernels kernels = new CpuKernels(true, true);

    @BeforeEach
    void kernelsBuiltAndLoadedWhereTheCpuHasAvx512() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    /** The CPU kernels as they are made with {@code -Dllmzoo.cpu.off=name}. */
    private static CpuKernels without(String name) {
        return SwitchedKernels.without(name);
    }

    /** A projection of a realistic scale (std 0.02), compressed to {@code format} unless FLOAT32. */
    private ProjectionWeight projection(int out, int in, boolean bias, String format) {
        return projection(Layout.OUT_IN, out, in, bias, format);
    }

    /** {@link #projection(int, int, boolean, String)} with the weight stored as {@code layout} says. */
    private ProjectionWeight projection(Layout layout, int out, int in, boolean bias, String format) {
        Shape shape = layout == Layout.OUT_IN ? new Shape(out, in) : new Shape(in, out);
        ProjectionWeight weight = Projections.of(layout,
                manager.randomNormal(0, 0.02f, shape, DataType.FLOAT32),
                bias ? manager.randomNormal(new Shape(out)) : null);
        if (!format.equals("FLOAT32")) {
            weight.compress(WeightFormat.valueOf(format));
        }
        return weight;
    }

    /**
     * Each core's columns of gate and up, activated before the hand-back, are the separate
     * products activated by the same kernels bit for bit (each output's sum and its activation are
     * the same operations whichever core computes them and whatever runs beside them).
     */
    @ParameterizedTest(name = "{0} rows={1} {2} bias={3}")
    @CsvSource({
        "FLOAT32, 1, SILU, false", "FLOAT32, 3, GELU_TANH, true", "FLOAT32, 8, SILU, true",
        "INT8, 1, SILU, false", "INT8, 5, GELU_TANH, true",
        "BFLOAT16, 1, SILU, false", "BFLOAT16, 8, SILU, true",
        "FLOAT16, 2, GELU_TANH, false",
    })
    void theGatedProductIsBothProductsActivatedBitForBit(String format, int rows, HiddenActivation activation,
            boolean bias) {
        ProjectionWeight gate = projection(1000, 256, bias, format); // over SplitProjection.MIN_ELEMENTS
        ProjectionWeight up = projection(1000, 256, bias, format);
        NDArray x = manager.randomNormal(new Shape(rows, 1, 256)); // a decode step (B, 1, in)
        NDArray fused = FusedProducts.gated(x, gate, up, activation, null, true, true);
        assertEquals(new Shape(rows, 1, 1000), fused.getShape());
        NDArray separate = without(FusedProducts.GATED_SWITCH).gatedProject(x, gate, up, activation, null, false);
        assertArrayEquals(separate.toFloatArray(), fused.toFloatArray(), 0f);
        assertArrayEquals(fused.toFloatArray(), kernels.gatedProject(x, gate, up, activation, null, false)
                .toFloatArray(), 0f, "the CPU kernels take the fused product");
    }

    /**
     * Against the reference (the engine's products and activation): each product is off by {@link
     * RoundingBound#ofProduct}, which moves {@code act(g) * u} by at most {@code SLOPE * dg * |u| +
     * |act(g)| * du}, and the activation itself rounds as {@code DecodeOpsTest} bounds it.
     */
    @ParameterizedTest(name = "rows={0} {1}")
    @CsvSource({"1, SILU", "4, GELU_TANH", "8, SILU"})
    void theFloat32GatedProductEqualsTheReference(int rows, HiddenActivation activation) {
        NDArray gw = manager.randomNormal(0, 0.02f, new Shape(768, 384), DataType.FLOAT32);
        NDArray uw = manager.randomNormal(0, 0.02f, new Shape(768, 384), DataType.FLOAT32);
        NDArray ub = manager.randomNormal(new Shape(768));
        ProjectionWeight gate = Projections.of(Layout.OUT_IN, gw, null);
        ProjectionWeight up = Projections.of(Layout.OUT_IN, uw, ub);
        NDArray x = manager.randomNormal(new Shape(rows, 1, 384)).muli(20); // gates of order 1
        float[] actual = kernels.gatedProject(x, gate, up, activation, null, false).toFloatArray();
        float[] expected = EngineKernels.INSTANCE.gatedProject(x, gate, up, activation, null, false).toFloatArray();
        float[] g = EngineKernels.INSTANCE.project(x, gate, null, false).toFloatArray();
        float[] u = EngineKernels.INSTANCE.project(x, up, null, false).toFloatArray();
        double dg = RoundingBound.ofProduct(x, gw, null, true);
        double du = RoundingBound.ofProduct(x, uw, ub, true);
        for (int i = 0; i < expected.length; i++) {
            double argument = activation == HiddenActivation.SILU
                    ? g[i]
                    : 2 * Math.sqrt(2 / Math.PI) * g[i] * (1 + 0.044715 * g[i] * g[i]);
            double activated = Math.abs(expected[i] / u[i]);
            double products = SLOPE * dg * (Math.abs(u[i]) + du) + (activated + SLOPE * dg) * du;
            double rounding = 2 * ((4 + 2) * U + 3 * U * Math.abs(argument)) * Math.abs(expected[i]);
            assertEquals(expected[i], actual[i], products + rounding + Float.MIN_NORMAL, "element " + i);
        }
    }

    /**
     * The product goes into the residual's memory: the residual array comes back holding {@code
     * residual + x W^T}, bit for bit the separate product plus the residual (at one row the kernels
     * add it where they would add a bias; at several each core adds its columns of the product, the
     * kernel having added a bias), for float32 and compressed weights, one row or a batch's decode
     * step, a batch's with a bias too.
     */
    @ParameterizedTest(name = "{0} rows={1} bias={2}")
    @CsvSource({"FLOAT32, 1, false", "INT8, 1, false", "BFLOAT16, 1, false", "FLOAT16, 1, false",
        "Q4_K, 1, false", "FLOAT32, 3, false", "INT8, 8, false", "BFLOAT16, 2, false", "INT4, 5, false",
        "Q4_K, 8, false", "FLOAT32, 2, true", "INT8, 8, true", "Q4_K, 4, true", "FLOAT16, 7, true"})
    void theResidualProductAddsIntoTheResidualBitForBit(String format, int rows, boolean bias) {
        ProjectionWeight down = projection(768, 2048, bias, format);
        NDArray x = manager.randomNormal(new Shape(rows, 1, 2048));
        NDArray residual = manager.randomNormal(new Shape(rows, 1, 768));
        float[] separate = without(FusedProducts.RESIDUAL_SWITCH)
                .projectAdd(x, down, residual.duplicate(), null, false).toFloatArray();
        NDArray stream = residual.duplicate();
        NDArray sum = kernels.projectAdd(x, down, stream, null, false);
        assertSame(stream, sum, "added in place");
        assertArrayEquals(separate, sum.toFloatArray(), 0f);
        if (format.equals("FLOAT32") && rows == 1 && !bias) {
            NDArray w = down.weight(null, x.getDevice(), false);
            float[] expected = EngineKernels.INSTANCE.projectAdd(x, down, residual.duplicate(), null, false)
                    .toFloatArray();
            assertArrayEquals(expected, sum.toFloatArray(),
                    RoundingBound.ofProduct(x, w, residual.reshape(768), true), "the reference's sum");
        }
    }

    /**
     * A projection with a bias (GPT-2's {@code c_proj}, float32 (in, out) read by rows, one run or
     * two, or compressed) goes into the residual's memory too, its bias added there by each core
     * before its columns' sums: the residual array comes back holding {@code residual + x W + b}.
     * Float32 against the reference to the bound of a product whose bias term is {@code |residual| +
     * |b|}; compressed against the separate kernel product plus the residual, the two evaluations
     * rounding {@code r + b}, then {@code + S}, against {@code S + b}, then {@code + r}: each rounding
     * off by at most half an ulp of its result.
     */
    @ParameterizedTest(name = "{0} {1} {2}x{3}")
    @CsvSource({
        "FLOAT32, IN_OUT, 768, 3072", "FLOAT32, IN_OUT, 256, 256", "FLOAT32, OUT_IN, 768, 768",
        "INT8, IN_OUT, 768, 3072", "BFLOAT16, IN_OUT, 768, 768", "FLOAT16, IN_OUT, 768, 3072"
    })
    void aBiasedProjectionAddsIntoTheResidualWithItsBias(String format, Layout layout, int out, int in) {
        ProjectionWeight proj = projection(layout, out, in, true, format);
        NDArray x = manager.randomNormal(new Shape(1, 1, in));
        NDArray residual = manager.randomNormal(new Shape(1, 1, out));
        NDArray b = proj.bias(null, x.getDevice(), false);
        NDArray stream = residual.duplicate();
        NDArray sum = kernels.projectAdd(x, proj, stream, null, false);
        assertSame(stream, sum, "added in place");
        float[] actual = sum.toFloatArray();
        if (format.equals("FLOAT32")) {
            NDArray w = proj.weight(null, x.getDevice(), false);
            float[] expected = EngineKernels.INSTANCE.projectAdd(x, proj, residual.duplicate(), null, false)
                    .toFloatArray();
            NDArray both = residual.reshape(out).abs().add(b.abs());
            assertArrayEquals(expected, actual,
                    RoundingBound.ofProduct(x, w, both, layout == Layout.OUT_IN), "the reference's sum");
            return;
        }
        float[] product = kernels.project(x, proj, null, false).toFloatArray(); // S + b, the kernel's
        float[] separate = without(FusedProducts.RESIDUAL_BIAS_SWITCH)
                .projectAdd(x, proj, residual.duplicate(), null, false).toFloatArray();
        float[] r = residual.toFloatArray();
        float[] bs = b.toFloatArray();
        for (int i = 0; i < out; i++) {
            double rounding = U * (Math.abs(product[i]) + Math.abs(separate[i]) + Math.abs(r[i] + bs[i])
                    + Math.abs(actual[i]));
            assertEquals(separate[i], actual[i], rounding + Float.MIN_NORMAL, "element " + i);
        }
    }

    /**
     * A decode step's gated product makes one array (the result) where the separate operations make
     * two (gate and up, the activation written over the gate), and the residual product none where
     * the separate one makes the product.
     */
    @Test
    void theFusedProductsMakeOneArrayAndNone() {
        ProjectionWeight gate = projection(1024, 256, false, "INT8");
        ProjectionWeight up = projection(1024, 256, false, "INT8");
        ProjectionWeight down = projection(256, 1024, false, "FLOAT32");
        CpuKernels separate = without(FusedProducts.GATED_SWITCH);
        CpuKernels unsummed = without(FusedProducts.RESIDUAL_SWITCH);
        try (NDManager step = manager.newSubManager()) {
            NDArray x = step.randomNormal(new Shape(1, 1, 256));
            NDArray residual = step.randomNormal(new Shape(1, 1, 256));
            int before = step.getManagedArrays().size();
            NDArray activated = kernels.gatedProject(x, gate, up, HiddenActivation.SILU, null, false);
            assertEquals(before + 1, step.getManagedArrays().size(), "the gated product");
            kernels.projectAdd(activated, down, residual, null, false);
            assertEquals(before + 1, step.getManagedArrays().size(), "the residual product");
            separate.gatedProject(x, gate, up, HiddenActivation.SILU, null, false);
            assertEquals(before + 3, step.getManagedArrays().size(), "gate and up");
            unsummed.projectAdd(activated, down, residual, null, false);
            assertEquals(before + 4, step.getManagedArrays().size(), "the product");
        }
    }

    /**
     * What the fused kernels do not take goes to the separate operations: more than 8 rows, gate and
     * up of different widths; for the residual more than 8 rows, a bias with its switch off, a
     * residual of another shape.
     */
    @Test
    void inputsTheFusedKernelsDoNotTakeGoToTheSeparateOperations() {
        ProjectionWeight gate = projection(512, 256, false, "FLOAT32");
        ProjectionWeight up = projection(512, 256, false, "FLOAT32");
        ProjectionWeight narrow = projection(384, 256, false, "FLOAT32");
        NDArray nine = manager.randomNormal(new Shape(9, 1, 256));
        NDArray one = manager.randomNormal(new Shape(1, 1, 256));
        HiddenActivation silu = HiddenActivation.SILU;
        assertNull(FusedProducts.gated(nine, gate, up, silu, null, true, true), "9 rows");
        assertNull(FusedProducts.gated(one, gate, narrow, silu, null, true, true), "widths 512 and 384");
        assertNull(FusedProducts.gated(one, gate, up, silu, null, false, true), "the few-row kernel off");
        ProjectionWeight down = projection(256, 512, false, "INT8");
        ProjectionWeight biased = projection(256, 512, true, "INT8");
        NDArray inner = manager.randomNormal(new Shape(1, 1, 512));
        NDArray residual = manager.randomNormal(new Shape(1, 1, 256));
        assertNull(FusedProducts.residual(manager.randomNormal(new Shape(9, 1, 512)), down,
                manager.randomNormal(new Shape(9, 1, 256)), null, true, true, true, true), "9 rows");
        assertNull(FusedProducts.residual(inner, biased, residual, null, true, true, false, true),
                "a bias, switched off");
        assertNull(FusedProducts.residual(
                inner, down, manager.randomNormal(new Shape(1, 256)), null, true, true, true, true),
                "a residual of another shape");
        assertNull(FusedProducts.residual(inner, down, residual, null, true, false, true, true),
                "the compressed kernel off");
        NDArray sum = without(FusedProducts.RESIDUAL_BIAS_SWITCH).projectAdd(inner, biased, residual, null, false);
        assertNotSame(residual, sum, "a new array");
        ProjectionWeight conv1d = projection(Layout.IN_OUT, 256, 512, true, "FLOAT32");
        assertNotSame(residual, without(FusedProducts.RESIDUAL_BIAS_SWITCH)
                .projectAdd(inner, conv1d, residual, null, false), "(in, out), switched off: a new array");
        assertArrayEquals(without(FusedProducts.GATED_SWITCH).gatedProject(nine, gate, up, silu, null, false)
                .toFloatArray(), kernels.gatedProject(nine, gate, up, silu, null, false).toFloatArray(), 0f,
                "9 rows: the separate operations");
    }

    @Test
    void aTrainingPassRecordsGradientsThroughTheReference() {
        ProjectionWeight gate = projection(512, 256, false, "FLOAT32");
        ProjectionWeight up = projection(512, 256, false, "FLOAT32");
        ProjectionWeight down = projection(256, 512, false, "FLOAT32");
        NDArray x = manager.randomNormal(new Shape(1, 1, 256));
        NDArray residual = manager.randomNormal(new Shape(1, 1, 256));
        x.setRequiresGradient(true);
        try (GradientCollector collector = Engine.getInstance().newGradientCollector()) {
            NDArray activated = kernels.gatedProject(x, gate, up, HiddenActivation.SILU, null, true);
            NDArray out = kernels.projectAdd(activated, down, residual.mul(1), null, true);
            collector.backward(out.sum());
        }
        assertTrue(x.getGradient().abs().sum().getFloat() > 0, "the input got a gradient");
    }
}
