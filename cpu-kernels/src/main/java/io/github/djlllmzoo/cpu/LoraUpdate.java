package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.LoraRowPairs;
import java.nio.ByteBuffer;

/**
 * One projection's LoRA update over a batch whose rows each have an adapter of their own, added into
 * the frozen projection's output in one native call ({@code cpu-kernels/src/main/native/lora_update.c}):
 * each row reads only its own adapter's rank columns of the concatenated pairs, a row without an
 * update nothing. The engine's form ({@code Kernels.loraUpdate}'s reference) is four calls with an
 * array each, over every adapter's columns with a mask; at a decode step's few rows their fixed cost,
 * not the arithmetic, is the time (84 adapted projections of a Llama-110M step: about 3.4 ms of calls).
 *
 * <p>Used for inference where {@link NativeKernels} are loaded, on float32 CPU arrays held densely
 * (pairs stored in another type are left to the engine), unless {@code -Dllmzoo.cpu.off=loraUpdate}.
 * Positions are split across the cores ({@link CoreWorkers}) from {@link #SPLIT_MIN_PRODUCTS}
 * multiply-adds on (a prefill's); a decode step's, a few hundred thousand at rank 8, stays on the
 * calling core, where a hand-over would cost about what it saves.
 */
final class LoraUpdate {

    /** The switch that leaves the update to the engine's form: {@code -Dllmzoo.cpu.off=loraUpdate}. */
    static final String SWITCH = "loraUpdate";

    /** Multiply-adds from which the positions are split across the cores. */
    static final long SPLIT_MIN_PRODUCTS = Long.getLong("llmzoo.loraUpdate.splitMinProducts", 1L << 21);

    private LoraUpdate() {}

    /**
     * Whether the kernel takes these arrays: float32, dense, on the CPU; x (B, ..., in) and y (B, ...,
     * out) with as many positions, B the pairs' rows, in and out the pairs' widths.
     *
     * @param x the projection's input
     * @param y the frozen projection's output
     * @param pairs the pairs and each row's adapter columns
     * @return whether {@link #addInto} computes the update
     */
    static boolean takes(NDArray x, NDArray y, LoraRowPairs pairs) {
        Shape xs = x.getShape();
        Shape ys = y.getShape();
        Shape as = pairs.a().getShape();
        Shape bs = pairs.bTransposed().getShape();
        if (!NativeKernels.loaded() || xs.dimension() < 2 || ys.dimension() < 2 || as.dimension() != 2
                || bs.dimension() != 2 || xs.get(0) != pairs.rows() || ys.get(0) != pairs.rows()) {
            return false;
        }
        long in = xs.get(xs.dimension() - 1);
        long out = ys.get(ys.dimension() - 1);
        return in == as.get(1) && out == bs.get(1) && as.get(0) == bs.get(0)
                && in > 0 && out > 0 && xs.size() / in == ys.size() / out
                && xs.size() <= DecodeOps.MAX_ELEMENTS && ys.size() <= DecodeOps.MAX_ELEMENTS
                && NativeKernels.denseFloat32OnCpu(x) && NativeKernels.denseFloat32OnCpu(y)
                && NativeKernels.denseFloat32OnCpu(pairs.a()) && NativeKernels.denseFloat32OnCpu(pairs.bTransposed());
    }

    /**
     * Adds each row's update into {@code y}'s memory.
     *
     * @param x the projection's input (B, ..., in) that {@link #takes} accepts
     * @param y the frozen projection's output (B, ..., out), updated in place
     * @param pairs the pairs and each row's adapter columns
     * @return {@code y}
     */
    static NDArray addInto(NDArray x, NDArray y, LoraRowPairs pairs) {
        int rows = pairs.rows();
        int in = Math.toIntExact(x.getShape().get(x.getShape().dimension() - 1));
        int out = Math.toIntExact(y.getShape().get(y.getShape().dimension() - 1));
        int positions = Math.toIntExact(x.getShape().size() / in / rows);
        int[] first = new int[rows];
        int[] ranks = new int[rows];
        float[] scalings = new float[rows];
        long products = 0;
        for (int row = 0; row < rows; row++) {
            first[row] = pairs.firstColumn(row);
            ranks[row] = pairs.rank(row);
            scalings[row] = pairs.scaling(row);
            products += (long) ranks[row] * positions * (in + out);
        }
        ByteBuffer xb = NativeKernels.buffer(x);
        ByteBuffer ab = NativeKernels.buffer(pairs.a());
        ByteBuffer bb = NativeKernels.buffer(pairs.bTransposed());
        ByteBuffer yb = NativeKernels.buffer(y);
        int totalRank = pairs.totalRank();
        int units = rows * positions;
        int parts = Math.min(CoreWorkers.PARALLELISM, units);
        // each position writes only its own row of y: the parts never touch the same memory
        if (parts < 2 || products < SPLIT_MIN_PRODUCTS || !CoreWorkers.inRanges(units, parts,
                (from, to) -> add(xb, ab, bb, yb, first, ranks, scalings, rows, positions, in, out, totalRank, from, to))) {
            add(xb, ab, bb, yb, first, ranks, scalings, rows, positions, in, out, totalRank, 0, units);
        }
        return y;
    }

    private static native void add(ByteBuffer x, ByteBuffer a, ByteBuffer bTransposed, ByteBuffer y, int[] first,
            int[] ranks, float[] scalings, int rows, int positions, int in, int out, int totalRank, int from, int to);
}
