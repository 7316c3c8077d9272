package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.KeyValues;
import java.nio.ByteBuffer;

/**
 * Attention of several new positions per sequence (a prefill, a scoring pass) by a native
 * kernel ({@code cpu-kernels/src/main/native/prefill_attention.c}), its query heads split across
 * the cores ({@link CoreWorkers}): each query row reads only the keys from the first to the last
 * one its mask leaves visible (half of them under a causal mask), and the mask is read where it
 * is, not added into a copy of the scores per layer. The engine computes it on one core as two
 * batched products, a scaling, a mask addition and a softmax, each with an array of its own
 * (docs/PERFORMANCE.md, "A prefill's work outside the products").
 *
 * <p>Used for inference where {@link NativeKernels} are loaded, on float32 CPU arrays, unless
 * {@code -Dllmzoo.cpu.off=prefillAttention}; the results agree with the engine's to float rounding.
 * Inference and the switch are the caller's to check.
 */
final class PrefillAttention {

    /** The switch that turns the kernel off: {@code -Dllmzoo.cpu.off=prefillAttention}. */
    static final String SWITCH = "prefillAttention";

    /** The widest head the kernel takes. */
    static final int MAX_HEAD_DIM = 256;

    /**
     * Multiply-adds of the scores ({@code B·H·T·S·D}) from which the work is split across the
     * cores, as {@link SplitAttention#SPLIT_MIN_WORK}.
     */
    static final long SPLIT_MIN_WORK = SplitAttention.SPLIT_MIN_WORK;

    private PrefillAttention() {}

    /**
     * Whether {@link #attend} computes this attention: the library loaded, more than one query
     * per sequence, float32 on the CPU, heads of at most {@link #MAX_HEAD_DIM}, keys and values of
     * one shape (a cache's buffers held densely, float32 or float16 widened as they are read, else
     * float32 of any layout, copied dense), and no mask or an
     * additive float32 one of shape (B or 1, 1, T, S).
     *
     * @param q queries (B, H, T, D)
     * @param kv the keys and values (B, H_kv, S, D)
     * @param mask the additive mask, or {@code null}
     * @return whether {@link #attend} may be called with these arrays
     */
    static boolean applies(NDArray q, KeyValues kv, NDArray mask) {
        if (!NativeKernels.loaded()) {
            return false;
        }
        Shape qs = q.getShape();
        if (qs.dimension() != 4 || qs.get(2) < 2 || q.getDataType() != DataType.FLOAT32) {
            return false;
        }
        NDArray keys = kv.keyBuffer() != null ? kv.keyBuffer() : kv.keys();
        NDArray values = kv.keyBuffer() != null ? kv.valueBuffer() : kv.values();
        Shape ks = keys.getShape();
        long b = qs.get(0);
        long heads = qs.get(1);
        long t = qs.get(2);
        long d = qs.get(3);
        int s = kv.length();
        boolean shapes = ks.dimension() == 4
                && ks.equals(values.getShape())
                && ks.get(0) == b
                && ks.get(3) == d
                && d <= MAX_HEAD_DIM
                && heads % ks.get(1) == 0
                && s >= 1
                && s <= ks.get(2)
                && q.size() <= Integer.MAX_VALUE
                && keys.size() <= Integer.MAX_VALUE
                && (mask == null || maskFits(mask, b, t, s));
        boolean cached = kv.keyBuffer() != null;
        return shapes
                && (cached
                        ? NativeKernels.denseCacheOnCpu(keys) && NativeKernels.denseCacheOnCpu(values)
                                && keys.getDataType() == values.getDataType()
                        : onCpuAsFloat32(keys) && onCpuAsFloat32(values))
                && (mask == null || NativeKernels.denseFloat32OnCpu(mask));
    }

    private static boolean onCpuAsFloat32(NDArray array) {
        return array.getDataType() == DataType.FLOAT32 && CoreWorkers.inferenceOnCpu(array, false);
    }

    private static boolean maskFits(NDArray mask, long b, long t, long s) {
        Shape m = mask.getShape();
        return m.dimension() == 4
                && (m.get(0) == b || m.get(0) == 1)
                && m.get(1) == 1
                && m.get(2) == t
                && m.get(3) == s;
    }

    /**
     * {@code softmax(cap(q k^T * scale) + mask) v}, for arrays {@link #applies} accepts, where
     * {@code cap(s)} is {@code tanh(s / C) * C} for soft-capped scores, else {@code s}.
     *
     * @param q queries (B, H, T, D); the result is attached to its manager
     * @param kv the keys and values
     * @param mask the additive mask (B or 1, 1, T, S), or {@code null}
     * @param scores the scale on {@code q·k} and the soft cap C (0: none)
     * @return the attended values (B, H, T, D), a view of a (B, T, H, D) array: joining the heads
     *     back into rows then needs no copy
     */
    static NDArray attend(NDArray q, KeyValues kv, NDArray mask, AttentionScores scores) {
        Shape qs = q.getShape();
        boolean cached = kv.keyBuffer() != null;
        NDArray keys = cached ? kv.keyBuffer() : kv.keys();
        NDArray values = cached ? kv.valueBuffer() : kv.values();
        int b = Math.toIntExact(qs.get(0));
        int heads = Math.toIntExact(qs.get(1));
        int t = Math.toIntExact(qs.get(2));
        int d = Math.toIntExact(qs.get(3));
        int kvHeads = Math.toIntExact(keys.getShape().get(1));
        int capacity = Math.toIntExact(keys.getShape().get(2));
        int s = kv.length();
        float scale = (float) scores.scale();
        float softcap = (float) scores.softcap();
        long maskStride = mask == null || mask.getShape().get(0) == 1 ? 0 : (long) t * s;
        NDArray out = q.getManager().create(new Shape(b, t, heads, d), DataType.FLOAT32); // (B, T, H, D)
        // a view (the heads of a projection's rows) or a cache-free pass's keys come as a dense copy
        ByteBuffer qb = NativeKernels.buffer(q);
        ByteBuffer kb = NativeKernels.buffer(keys);
        ByteBuffer vb = NativeKernels.buffer(values);
        ByteBuffer mb = mask == null ? null : NativeKernels.buffer(mask);
        ByteBuffer ob = NativeKernels.buffer(out);
        boolean half = keys.getDataType() == DataType.FLOAT16;
        int units = b * heads;
        int parts = Math.min(CoreWorkers.PARALLELISM, units);
        boolean split = parts > 1 && q.size() * s >= SPLIT_MIN_WORK;
        boolean done = split
                && CoreWorkers.inRanges(units, parts, (from, to) ->
                        attend(qb, kb, vb, mb, ob, heads, kvHeads, t, s, d, capacity, maskStride, scale, softcap,
                                half, from, to));
        if (!done) {
            attend(qb, kb, vb, mb, ob, heads, kvHeads, t, s, d, capacity, maskStride, scale, softcap, half, 0,
                    units);
        }
        return out.transpose(0, 2, 1, 3); // (B, H, T, D)
    }

    private static native void attend(
            ByteBuffer q, ByteBuffer keys, ByteBuffer values, ByteBuffer mask, ByteBuffer out, int heads,
            int kvHeads, int positions, int length, int headDim, int capacity, long maskStride, float scale,
            float softcap, boolean halfCache, int from, int to);
}
