package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.WeightFormat;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class CompressedProductTest extends CompressedWeightsTest {

    /**
     * The kernel's product equals the engine's product of the weight widened to float32 (what the
     * reference path computes) to float32 rounding of the sums: the widening is exact in both.
     */
    @ParameterizedTest
    @CsvSource({
        "INT8, 1, 768, 1000", "INT8, 2, 64, 3", "INT8, 5, 96, 301", "INT8, 8, 2048, 512",
        "BFLOAT16, 1, 768, 1000", "BFLOAT16, 3, 64, 3", "BFLOAT16, 8, 96, 301",
        "FLOAT16, 1, 768, 1000", "FLOAT16, 4, 64, 3", "FLOAT16, 8, 96, 301",
        "INT4, 1, 768, 1000", "INT4, 2, 64, 3", "INT4, 5, 96, 301", "INT4, 8, 2048, 512", "INT4, 7, 4128, 33",
        "INT6, 1, 768, 1000", "INT6, 5, 96, 301", "INT6, 7, 4128, 33",
        // rows of x past L1: the inputs taken a tile at a time, a ragged last tile and output run
        "FLOAT16, 8, 2080, 77", "BFLOAT16, 6, 1056, 40", "INT8, 7, 4128, 33"
    })
    void theWideningKernelEqualsTheEnginesProductOfTheWidenedWeight(
            WeightFormat format, int rows, int in, int out) {
        CompressedWeight weight = compressed(out, in, format);
        NDArray widened = weight.toFloat32(manager); // (out, in)
        NDArray bias = manager.randomNormal(new Shape(out));
        NDArray x = manager.randomNormal(new Shape(rows, 1, in)); // a decode step: (B, 1, in)
        for (NDArray b : new NDArray[] {bias, null}) {
            assertTrue(CompressedProduct.applies(x, weight, b, rows));
            NDArray actual = CompressedProduct.multiply(x, weight, b, rows, 0); // the CPUs without VNNI/BF16
            assertEquals(new Shape(rows, 1, out), actual.getShape());
            float[] expected = x.getNDArrayInternal().linear(x, widened, b).singletonOrThrow().toFloatArray();
            assertArrayEquals(expected, actual.toFloatArray(), RoundingBound.ofProduct(x, widened, b, true),
                    format + " bias " + (b != null));
        }
    }

    /** The transposed-block int8 kernel goes with VNNI unless its switch is {@code false}. */
    @Test
    void theBlockedVnniKernelFollowsVnniAndItsSwitch() {
        assumeTrue(NativeKernels.loaded(), "no native kernels");
        boolean vnni = (CompressedProduct.features() & CompressedProduct.VNNI) != 0;
        assertEquals(vnni, (CompressedProduct.initialDotProducts() & CompressedProduct.VNNI_BLOCKS) != 0);
        System.setProperty(KernelSwitches.PROPERTY, CompressedProduct.VNNI_BLOCKS_SWITCH);
        try {
            assertEquals(CompressedProduct.features() & CompressedProduct.VNNI, CompressedProduct.initialDotProducts());
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
    }

    /**
     * bfloat16's {@code vdpbf16ps} kernel is never chosen (slower and less exact than widening), only
     * asked for by a test; turning the int8 dot product off leaves the widening kernel for every format.
     */
    @Test
    void theBfloat16DotKernelIsNeverChosenAndTheInt8OneFollowsItsSwitch() {
        assumeTrue(NativeKernels.loaded(), "no native kernels");
        assertEquals(0, CompressedProduct.initialDotProducts() & CompressedProduct.BF16);
        System.setProperty(KernelSwitches.PROPERTY, CompressedProduct.DOT_SWITCH);
        try {
            assertEquals(0, CompressedProduct.initialDotProducts());
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
    }

    /**
     * With an int8 dot product (AVX512_VNNI, AVX2's, NEON's), an int8, int4 or int6 product is the engine's
     * product of the widened weight with the input rounded to its own int8 grid (per group of 32, scale
     * max|x| / 127, ties to even, as the kernel quantizes): the integer sums are exact (int4's and
     * int6's codes unpacked to int8 exactly), so only float32 rounding of the scaled sums is left, whether the
     * rows take the transposed-block kernel ({@link CompressedProduct#VNNI_BLOCKS}) or the per-chunk one.
     */
    @ParameterizedTest
    @CsvSource({"INT8, 1, 768, 1000", "INT8, 2, 64, 3", "INT8, 5, 96, 301", "INT8, 8, 2048, 512",
        "INT8, 3, 4096, 64", "INT8, 8, 1568, 45", "INT8, 6, 4128, 70", "INT8, 5, 32, 5", "INT8, 7, 288, 17",
        "INT8, 8, 768, 2048",
        "INT4, 1, 768, 1000", "INT4, 2, 64, 3", "INT4, 5, 96, 301", "INT4, 8, 2048, 512", "INT4, 3, 4096, 64",
        "INT4, 6, 4128, 70", "INT4, 5, 32, 5", "INT4, 7, 288, 17", "INT4, 1, 32, 7",
        "INT6, 1, 768, 1000", "INT6, 2, 64, 3", "INT6, 5, 96, 301", "INT6, 8, 2048, 512", "INT6, 6, 4128, 70",
        "INT6, 5, 32, 5", "INT6, 7, 288, 17", "INT6, 1, 32, 7"})
    void theDotProductKernelEqualsTheProductWithTheInputOnItsInt8Grid(WeightFormat format, int rows, int in, int out) {
        assumeTrue((CompressedProduct.features() & CompressedProduct.VNNI) != 0, "no int8 dot product on this CPU");
        CompressedWeight weight = compressed(out, in, format);
        NDArray widened = weight.toFloat32(manager); // (out, in)
        NDArray bias = manager.randomNormal(new Shape(out));
        NDArray x = manager.randomNormal(new Shape(rows, 1, in));
        NDArray onGrid = manager.create(int8Grid(x.toFloatArray()), x.getShape());
        float[] expected = onGrid.getNDArrayInternal().linear(onGrid, widened, bias).singletonOrThrow().toFloatArray();
        var bound = RoundingBound.ofProduct(onGrid, widened, bias, true);
        for (int bits : new int[] {CompressedProduct.VNNI, CompressedProduct.VNNI | CompressedProduct.VNNI_BLOCKS}) {
            NDArray actual = CompressedProduct.multiply(x, weight, bias, rows, bits);
            assertArrayEquals(expected, actual.toFloatArray(), bound, format + " dot-product bits " + bits);
        }
    }

    /**
     * An int4 (int6) product goes through int8's kernels on its codes unpacked to {@code q - 8}
     * ({@code u - 32}): it is bit for bit the product of the int8 weight holding those codes and the
     * same scales (for int4, what a GGUF Q4_0 file loads as without {@code --dtype int4}), by the
     * widening kernel, the dot product per chunk, and the transposed blocks.
     */
    @ParameterizedTest
    @CsvSource({"INT4, 1, 768, 100", "INT4, 3, 96, 301", "INT4, 5, 32, 9", "INT4, 6, 4128, 70", "INT4, 8, 2048, 64",
        "INT6, 1, 768, 100", "INT6, 3, 96, 301", "INT6, 5, 32, 9", "INT6, 6, 4128, 70", "INT6, 8, 2048, 64",
        "INT6, 2, 352, 33"})
    void aPackedProductIsBitForBitTheInt8ProductOfItsUnpackedCodes(WeightFormat format, int rows, int in, int out) {
        CompressedWeight int4 = compressed(out, in, format);
        CompressedWeight int8 = unpacked(int4);
        NDArray bias = manager.randomNormal(new Shape(out));
        NDArray x = manager.randomNormal(new Shape(rows, 1, in));
        int vnni = CompressedProduct.features() & CompressedProduct.VNNI;
        for (int bits : new int[] {0, vnni, vnni == 0 ? 0 : vnni | CompressedProduct.VNNI_BLOCKS}) {
            assertArrayEquals(CompressedProduct.multiply(x, int8, bias, rows, bits).toFloatArray(),
                    CompressedProduct.multiply(x, int4, bias, rows, bits).toFloatArray(), 0f,
                    "dot-product bits " + bits);
        }
    }

    /**
     * The int8 weight of an int4 one's codes {@code q - 8} (Q4_0's packing undone), or an int6 one's
     * {@code u - 32} (its low nibbles as Q4_0's, then 8 bytes of high 2-bit pairs), and its scales.
     */
    private static CompressedWeight unpacked(CompressedWeight int4) {
        int out = int4.outFeatures();
        int in = int4.inFeatures();
        int half = CompressedWeight.GROUP / 2;
        boolean six = int4.format() == WeightFormat.INT6;
        int groupBytes = six ? half + CompressedWeight.GROUP / 4 : half;
        ByteBuffer packed = int4.codes();
        ByteBuffer codes = ByteBuffer.allocateDirect(out * in).order(ByteOrder.nativeOrder());
        for (int n = 0; n < out; n++) {
            for (int k = 0; k < in; k++) {
                int group = n * (in / CompressedWeight.GROUP) + k / CompressedWeight.GROUP;
                int j = k % CompressedWeight.GROUP;
                int b = packed.get(group * groupBytes + j % half) & 0xFF;
                int low = j < half ? b & 0xF : b >> 4;
                int high = six ? (packed.get(group * groupBytes + half + j % 8) >> (2 * (j / 8))) & 3 : 0;
                codes.put(n * in + k, (byte) (six ? (low | high << 4) - 32 : low - 8));
            }
        }
        ByteBuffer held = int4.directBuffers()[1].duplicate().clear();
        ByteBuffer scales = ByteBuffer.allocateDirect(held.capacity()).order(ByteOrder.nativeOrder());
        scales.put(held).clear();
        return CompressedWeight.ofCodes(WeightFormat.INT8, out, in, codes, scales);
    }

    /**
     * With AVX512_BF16, a bfloat16 product multiplies the codes by the input split into bfloat16 hi
     * and lo: |x - hi - lo| <= 2^-9 |x - hi| <= 2^-18 |x|, so it is off the engine's product of the
     * widened weight by at most 2^-18 sum|w x| beyond float32 rounding (hi alone would be 2^-9).
     */
    @ParameterizedTest
    @CsvSource({"1, 768, 1000", "2, 64, 3", "1, 96, 301", "2, 2048, 77", "2, 4128, 70"})
    void theBf16KernelEqualsTheEnginesProductToTheSplitInputsPrecision(int rows, int in, int out) {
        assumeTrue((CompressedProduct.features() & CompressedProduct.BF16) != 0, "no AVX512_BF16 on this CPU");
        CompressedWeight weight = compressed(out, in, WeightFormat.BFLOAT16);
        NDArray widened = weight.toFloat32(manager); // (out, in)
        NDArray x = manager.randomNormal(new Shape(rows, 1, in));
        NDArray actual = CompressedProduct.multiply(x, weight, null, rows, CompressedProduct.BF16);
        float[] expected = x.getNDArrayInternal().linear(x, widened, null).singletonOrThrow().toFloatArray();
        float[] xs = x.toFloatArray();
        float[] ws = widened.toFloatArray();
        double largest = 0;
        for (int r = 0; r < rows; r++) {
            for (int o = 0; o < out; o++) {
                double sum = 0;
                for (int k = 0; k < in; k++) {
                    sum += Math.abs((double) xs[r * in + k] * ws[o * in + k]);
                }
                largest = Math.max(largest, sum);
            }
        }
        float bound = (float) (largest * Math.scalb(1.0, -18)) + RoundingBound.ofProduct(x, widened, null, true);
        assertArrayEquals(expected, actual.toFloatArray(), bound);
    }

    /**
     * From 3 rows of x a bfloat16 product takes the widening kernel even where AVX512_BF16 is on:
     * bit for bit the product with the dot products off, the widened weight's float32 product.
     */
    @ParameterizedTest
    @CsvSource({"3, 96, 301", "4, 2048, 77", "7, 2080, 70", "8, 1056, 33"})
    void fromThreeRowsABf16ProductIsTheWideningKernels(int rows, int in, int out) {
        assumeTrue((CompressedProduct.features() & CompressedProduct.BF16) != 0, "no AVX512_BF16 on this CPU");
        CompressedWeight weight = compressed(out, in, WeightFormat.BFLOAT16);
        NDArray x = manager.randomNormal(new Shape(rows, 1, in));
        assertArrayEquals(CompressedProduct.multiply(x, weight, null, rows, 0).toFloatArray(),
                CompressedProduct.multiply(x, weight, null, rows, CompressedProduct.BF16).toFloatArray(), 0f);
    }

    /**
     * Weights multiplied in one pass (a layer's key and value, gate and up: one hand-over to the
     * cores) give each weight's own product bit for bit, each in the input's leading shape; the
     * pair is split across the cores even where one of its weights alone would not be.
     */
    @ParameterizedTest
    @CsvSource({"INT8, 1", "INT8, 3", "BFLOAT16, 1", "BFLOAT16, 8", "FLOAT16, 2", "INT4, 1", "INT4, 6", "INT6, 1",
        "INT6, 6"})
    void weightsMultipliedTogetherGiveEachWeightsOwnProduct(WeightFormat format, int rows) {
        CompressedWeight large = compressed(1024, 256, format); // over SplitProjection.MIN_ELEMENTS
        CompressedWeight small = compressed(97, 256, format); // under it, an odd column count
        NDArray bias = manager.randomNormal(new Shape(97));
        NDArray x = manager.randomNormal(new Shape(rows, 1, 256)); // (B, 1, in)
        for (int dots : new int[] {0, CompressedProduct.dotProducts()}) {
            NDArray[] both = CompressedProduct.multiplyAll(
                    x, new CompressedWeight[] {large, small}, new NDArray[] {null, bias}, rows, dots);
            assertEquals(new Shape(rows, 1, 1024), both[0].getShape());
            assertEquals(new Shape(rows, 1, 97), both[1].getShape());
            assertArrayEquals(CompressedProduct.multiply(x, large, null, rows, dots).toFloatArray(),
                    both[0].toFloatArray(), 0f, format + " large, dot products " + dots);
            assertArrayEquals(CompressedProduct.multiply(x, small, bias, rows, dots).toFloatArray(),
                    both[1].toFloatArray(), 0f, format + " small, dot products " + dots);
        }
    }

    /** The CPU kernels' pair of compressed projections is each projection's own product. */
    @ParameterizedTest
    @CsvSource({"INT8", "BFLOAT16", "FLOAT16", "INT4", "INT6"})
    void aPairOfCompressedProjectionsEqualsEachProjection(WeightFormat format) {
        ProjectionWeight first = Projections.of(
                Layout.OUT_IN, manager.randomNormal(0, 0.02f, new Shape(512, 256), DataType.FLOAT32),
                manager.randomNormal(new Shape(512)));
        ProjectionWeight second = Projections.of(
                Layout.OUT_IN, manager.randomNormal(0, 0.02f, new Shape(512, 256), DataType.FLOAT32), null);
        first.compress(format);
        second.compress(format);
        NDArray x = manager.randomNormal(new Shape(2, 1, 256));
        CpuKernels kernels = new CpuKernels(true, true);
        NDArray[] pair = kernels.projectPair(x, first, second, null, false);
        assertArrayEquals(kernels.project(x, first, null, false).toFloatArray(), pair[0].toFloatArray(), 0f);
        assertArrayEquals(kernels.project(x, second, null, false).toFloatArray(), pair[1].toFloatArray(), 0f);
        assertEquals(new Shape(2, 1, 512), pair[1].getShape());
    }

    /**
     * The dot-product kernels are offered exactly where the CPU reports the instructions: AVX-512's
     * by its VNNI and BF16 flags, the int8 one always by the AVX2 and NEON variants (vpmaddubsw,
     * sdot or smull), which have no bfloat16 one.
     */
    @Test
    void theDotProductKernelsFollowTheCpusFlags() throws Exception {
        assumeTrue(NativeKernels.loaded(), "no native kernels");
        if (NativeKernels.isa() != CpuIsa.AVX512) {
            assertEquals(CompressedProduct.VNNI, CompressedProduct.features());
            return;
        }
        Path cpuinfo = Path.of("/proc/cpuinfo");
        assumeTrue(Files.isReadable(cpuinfo), "no /proc/cpuinfo");
        String flags = Files.readAllLines(cpuinfo).stream()
                .filter(l -> l.startsWith("flags"))
                .findFirst()
                .orElse("");
        boolean bw = flags.contains(" avx512bw");
        int expected = (bw && flags.contains(" avx512_vnni") ? CompressedProduct.VNNI : 0)
                | (bw && flags.contains(" avx512_bf16") ? CompressedProduct.BF16 : 0);
        assertEquals(expected, CompressedProduct.features());
    }

    /** x rounded per group of 32 to {@code q * d}, q = rint(x / d) in [-127, 127], d = max|x| / 127. */
    static float[] int8Grid(float[] x) {
        float[] out = new float[x.length];
        for (int start = 0; start < x.length; start += CompressedWeight.GROUP) {
            float max = 0;
            for (int k = start; k < start + CompressedWeight.GROUP; k++) {
                max = Math.max(max, Math.abs(x[k]));
            }
            float d = max / 127f;
            float inverse = d > 0 ? 1f / d : 0f;
            for (int k = start; k < start + CompressedWeight.GROUP; k++) {
                out[k] = (float) Math.max(-127, Math.min(127, Math.rint(x[k] * inverse))) * d;
            }
        }
        return out;
    }

    /** A prefill's weight, widened natively, holds exactly the values the reference widens to. */
    @ParameterizedTest
    @CsvSource({"INT8, 64, 3", "INT8, 768, 1001", "BFLOAT16, 96, 301", "FLOAT16, 2048, 5", "INT4, 96, 301",
        "INT4, 768, 1001", "INT6, 96, 301", "INT6, 768, 1001"})
    void theNativeWideningIsTheReferencesExactly(WeightFormat format, int in, int out) {
        CompressedWeight weight = compressed(out, in, format);
        assertTrue(CompressedProduct.widens(weight));
        NDArray widened = CompressedProduct.widened(weight, manager);
        assertEquals(new Shape(out, in), widened.getShape());
        assertArrayEquals(weight.toFloatArray(), widened.toFloatArray(), format.toString());
    }

    @Test
    void widthsOutsideWholeGroupsRowCountsPastEightAndViewsAreLeftToTheEngine() {
        CompressedWeight weight = compressed(40, 64, WeightFormat.INT8);
        NDArray x = manager.randomNormal(new Shape(8, 64));
        assertTrue(CompressedProduct.applies(x, weight, null, 8));
        assertFalse(CompressedProduct.applies(manager.randomNormal(new Shape(9, 64)), weight, null, 9), "9 rows");
        assertFalse(CompressedProduct.applies(manager.randomNormal(new Shape(64, 8)).transpose(), weight, null, 8),
                "a transposed view");
        assertFalse(CompressedProduct.applies(x, weight, manager.randomNormal(new Shape(39)), 8), "bias size");
        assertFalse(CompressedProduct.applies(x.toType(DataType.FLOAT64, false), weight, null, 8), "float64");
        CompressedWeight ragged = compressed(40, 48, WeightFormat.BFLOAT16);
        assertFalse(CompressedProduct.applies(manager.randomNormal(new Shape(1, 48)), ragged, null, 1),
                "48 inputs: not whole groups of 32");
        assertFalse(CompressedProduct.widens(ragged), "48 inputs: widened by the reference");
    }
}
