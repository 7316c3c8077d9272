package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.LoraRowPairs;
import io.github.djlllmzoo.blocks.RoundingBound;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

class LoraUpdateTest extends ManagedArraysTest {

    /** Rows of the batch: adapters 0, 1 and 2 and the base model, two rows sharing adapter 1. */
    private static final int[] ADAPTER_OF_ROW = {1, -1, 0, 2, 1, -1};

    private final CpuKernels kernels = new CpuKernels(true, true);

    @BeforeEach
    void kernelsBuiltAndLoaded() {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    /**
     * Each row's down product {@code x . A_j} is a sum of {@code in} terms on both sides (off by
     * {@link RoundingBound#ofSums} of them), scaled with half an ulp of rounding each; the output adds
     * {@code r} terms {@code down_j B^T_jo} to y, a sum of {@code r + 1} terms, and carries each down
     * product's difference through {@code |B^T_jo|}. Rows of the base model are y itself, exactly.
     */
    @ParameterizedTest(name = "ranks={0},{1},{2} T={3} in={4} out={5}")
    @CsvSource({
        "4, 8, 16, 1, 768, 768", // a decode step of the Llama-110M shape, ranks 4, 8 and 16 side by side
        "8, 8, 8, 1, 768, 2048", // its gate/up projection at rank 8
        "16, 4, 8, 3, 100, 37", // widths not a multiple of a vector, three positions a row
        "8, 16, 4, 128, 768, 768", // a prefill: the positions split across the cores
    })
    void updateEqualsTheEnginesMaskedProducts(int rank0, int rank1, int rank2, int t, int in, int out) {
        int[] ranks = {rank0, rank1, rank2};
        LoraRowPairs pairs = pairs(ranks, in, out, ADAPTER_OF_ROW);
        NDArray x = manager.randomNormal(new Shape(ADAPTER_OF_ROW.length, t, in));
        NDArray y = manager.randomNormal(new Shape(ADAPTER_OF_ROW.length, t, out));
        NDArray own = y.duplicate();
        assertTrue(LoraUpdate.takes(x, own, pairs));
        float[] reference = EngineKernels.INSTANCE.loraUpdate(x, y, pairs).toFloatArray();
        NDArray result = kernels.loraUpdate(x, own, pairs);
        assertSame(own, result, "the update is added into y's memory");
        float[] kernel = result.toFloatArray();
        float[] bounds = bounds(x, y, pairs);
        float[] ys = y.toFloatArray();
        int perRow = t * out;
        for (int row = 0; row < ADAPTER_OF_ROW.length; row++) {
            if (ADAPTER_OF_ROW[row] < 0) {
                assertArrayEquals(Arrays.copyOfRange(ys, row * perRow, (row + 1) * perRow),
                        Arrays.copyOfRange(kernel, row * perRow, (row + 1) * perRow), "base row " + row);
                continue;
            }
            for (int i = row * perRow; i < (row + 1) * perRow; i++) {
                assertEquals(reference[i], kernel[i], bounds[i], "row " + row + " element " + i % perRow);
            }
        }
    }

    /** The kernel computes each position from its own row's columns alone: a row's result is its result alone. */
    @Test
    void rowInABatchEqualsTheRowAlone() {
        int[] ranks = {8, 4, 16};
        int in = 96;
        int out = 80;
        LoraRowPairs batchPairs = pairs(ranks, in, out, ADAPTER_OF_ROW);
        NDArray x = manager.randomNormal(new Shape(ADAPTER_OF_ROW.length, 2, in));
        NDArray y = manager.randomNormal(new Shape(ADAPTER_OF_ROW.length, 2, out));
        float[] batch = kernels.loraUpdate(x, y.duplicate(), batchPairs).toFloatArray();
        for (int row = 0; row < ADAPTER_OF_ROW.length; row++) {
            LoraRowPairs alonePairs = pairs(ranks, in, out, new int[] {ADAPTER_OF_ROW[row]});
            NDArray xRow = x.get(row).expandDims(0).duplicate(); // (1, 2, in), dense
            NDArray yRow = y.get(row).expandDims(0).duplicate();
            float[] alone = kernels.loraUpdate(xRow, yRow, alonePairs).toFloatArray();
            assertArrayEquals(alone, Arrays.copyOfRange(batch, row * 2 * out, (row + 1) * 2 * out), "row " + row);
        }
    }

    /** Arrays the kernel cannot read in place (a strided y, float16 pairs) are left to the engine's form. */
    @Test
    void stridedOutputsAndHalfPairsTakeTheEnginesForm() {
        LoraRowPairs pairs = pairs(new int[] {4, 8, 4}, 32, 24, ADAPTER_OF_ROW);
        NDArray x = manager.randomNormal(new Shape(ADAPTER_OF_ROW.length, 1, 32));
        NDArray strided = manager.randomNormal(new Shape(ADAPTER_OF_ROW.length, 1, 48)).get(":, :, ::2");
        assertFalse(LoraUpdate.takes(x, strided, pairs));
        float[] reference = EngineKernels.INSTANCE.loraUpdate(x, strided, pairs).toFloatArray();
        assertArrayEquals(reference, kernels.loraUpdate(x, strided, pairs).toFloatArray());

        LoraRowPairs half = halfPairs(new int[] {4, 8, 4}, 32, 24);
        NDArray xHalf = x.toType(DataType.FLOAT16, false);
        NDArray yHalf = manager.randomNormal(new Shape(ADAPTER_OF_ROW.length, 1, 24)).toType(DataType.FLOAT16, false);
        assertFalse(LoraUpdate.takes(xHalf, yHalf, half));
    }

    private LoraRowPairs pairs(int[] ranks, int in, int out, int[] adapterOfRow) {
        manager.getEngine().setRandomSeed(ranks[0] * 1000 + in); // the same pairs for a batch and its rows alone
        List<NDArray> as = new ArrayList<>();
        List<NDArray> bs = new ArrayList<>();
        float[] scalings = new float[ranks.length];
        for (int i = 0; i < ranks.length; i++) {
            as.add(manager.randomNormal(new Shape(ranks[i], in)).divi(Math.sqrt(in))); // (r, in)
            bs.add(manager.randomNormal(new Shape(out, ranks[i]))); // (out, r)
            scalings[i] = 16f / ranks[i]; // alpha 16
        }
        return LoraRowPairs.concatenate(manager, as, bs, scalings, adapterOfRow);
    }

    private LoraRowPairs halfPairs(int[] ranks, int in, int out) {
        List<NDArray> as = new ArrayList<>();
        List<NDArray> bs = new ArrayList<>();
        float[] scalings = new float[ranks.length];
        for (int i = 0; i < ranks.length; i++) {
            as.add(manager.randomNormal(new Shape(ranks[i], in)).toType(DataType.FLOAT16, false));
            bs.add(manager.randomNormal(new Shape(out, ranks[i])).toType(DataType.FLOAT16, false));
            scalings[i] = 2;
        }
        return LoraRowPairs.concatenate(manager, as, bs, scalings, ADAPTER_OF_ROW);
    }

    /** Each output element's bound (see {@link #updateEqualsTheEnginesMaskedProducts}), computed in Java. */
    private static float[] bounds(NDArray x, NDArray y, LoraRowPairs pairs) {
        float[] xs = x.toFloatArray();
        float[] ys = y.toFloatArray();
        float[] a = pairs.a().toFloatArray();
        float[] bt = pairs.bTransposed().toFloatArray();
        int in = Math.toIntExact(x.getShape().get(2));
        int out = Math.toIntExact(y.getShape().get(2));
        int t = Math.toIntExact(x.getShape().get(1));
        float[] bounds = new float[ys.length];
        for (int u = 0; u < ys.length / out; u++) {
            int row = u / t;
            int rank = pairs.rank(row);
            double scaling = pairs.scaling(row);
            double[] down = new double[rank];
            double[] downBound = new double[rank];
            for (int j = 0; j < rank; j++) {
                int column = pairs.firstColumn(row) + j;
                double sum = 0;
                double squares = 0;
                for (int k = 0; k < in; k++) {
                    double term = (double) xs[u * in + k] * a[column * in + k];
                    sum += term;
                    squares += term * term;
                }
                down[j] = scaling * sum;
                downBound[j] = scaling * RoundingBound.ofSums(in, Math.sqrt(squares)) + RoundingBound.EPSILON * Math.abs(down[j]);
            }
            for (int o = 0; o < out; o++) {
                double squares = (double) ys[u * out + o] * ys[u * out + o];
                double carried = 0;
                for (int j = 0; j < rank; j++) {
                    double weight = bt[(pairs.firstColumn(row) + j) * out + o];
                    squares += down[j] * weight * down[j] * weight;
                    carried += Math.abs(weight) * downBound[j];
                }
                bounds[u * out + o] = (float) (RoundingBound.ofSums(rank + 1, Math.sqrt(squares)) + carried);
            }
        }
        return bounds;
    }
}
