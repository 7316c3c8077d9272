package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.KeyValues;
import java.nio.ByteBuffer;

/**
 * Attention of one new token per sequence over the KV cache (a decode step) by a native
 * kernel ({@code cpu-kernels/src/main/native/decode_attention.c}): each sequence's keys and values
 * are read once, straight from the cache's buffers, the scores kept in a scratch row. The engine
 * computes it as two batched products, a scaling and a softmax over views of the cache, each a pass
 * with an array of its own, and reads the cache more slowly (docs/PERFORMANCE.md, "Attention of a
 * decode step by a kernel of our own").
 *
 * <p>The (sequence, key/value head) pairs are split across the cores ({@link CoreWorkers}), each
 * filling its own rows of one output. Used for inference where {@link NativeKernels} are loaded,
 * on float32 CPU arrays, unless {@code -Dllmzoo.cpu.off=decodeAttention}; the results agree with the
 * engine's to float rounding.
 *
 * <p>A decode step's new key and value that the cache left to be written ({@link KeyValues#pending()})
 * are written by the kernel as well, each (sequence, key/value head) pair's before it is attended
 * over: one native call instead of two indexed engine writes a layer.
 */
final class DecodeAttention {

    /** The switch that turns the kernel off: {@code -Dllmzoo.cpu.off=decodeAttention}. */
    static final String SWITCH = "decodeAttention";

    /**
     * The switch that leaves a decode step's new keys and values to the engine's indexed writes
     * instead of the kernel: {@code -Dllmzoo.cpu.off=decodeAttention.writeCache}.
     */
    static final String WRITE_SWITCH = "decodeAttention.writeCache";

    /** The widest head the kernel takes. */
    static final int MAX_HEAD_DIM = 256;

    /**
     * Bytes of keys and values read from which the work is split across the cores (GPT-2 small at
     * batch 1 from 43 cached positions): below it a hand-over costs about what it saves.
     */
    static final long SPLIT_MIN_BYTES = Long.getLong("llmzoo.decodeAttention.splitMinBytes", 1L << 18);

    private DecodeAttention() {}

    /**
     * Whether {@link #attend} computes this attention: the library loaded, one query per sequence,
     * float32 on the CPU, cache buffers held densely (float32, or float16 widened as they are read), heads of at most {@link #MAX_HEAD_DIM}, and no
     * mask or an additive one of shape (B or 1, 1, 1, length). Inference and the switch are the
     * caller's to check.
     *
     * @param q queries (B, H, 1, D)
     * @param keys the cache's key buffer (B, H_kv, capacity, D)
     * @param values the cache's value buffer, of the same shape
     * @param length the cached positions to attend to, the new one included
     * @param mask the additive mask, or {@code null}
     * @return whether {@link #attend} may be called with these arrays
     */
    static boolean applies(NDArray q, NDArray keys, NDArray values, int length, NDArray mask) {
        if (!NativeKernels.loaded()) {
            return false;
        }
        Shape qs = q.getShape();
        Shape cache = keys.getShape();
        if (qs.dimension() != 4 || cache.dimension() != 4 || qs.get(2) != 1 || !cache.equals(values.getShape())) {
            return false;
        }
        long b = qs.get(0);
        long heads = qs.get(1);
        long d = qs.get(3);
        long kvHeads = cache.get(1);
        boolean shapes = cache.get(0) == b
                && cache.get(3) == d
                && d <= MAX_HEAD_DIM
                && heads % kvHeads == 0
                && length >= 1
                && length <= cache.get(2)
                && keys.size() <= Integer.MAX_VALUE
                && (mask == null || maskFits(mask, b, length));
        return shapes
                && q.getDataType() == DataType.FLOAT32 // any layout: a view is copied dense
                && NativeKernels.denseCacheOnCpu(keys)
                && values.getDataType() == keys.getDataType()
                && NativeKernels.denseCacheOnCpu(values)
                && (mask == null || NativeKernels.denseFloat32OnCpu(mask));
    }

    /**
     * {@link #applies(NDArray, NDArray, NDArray, int, NDArray)} for keys and values in a cache,
     * whose pending new positions (if any) are not written yet.
     *
     * @param q queries (B, H, 1, D)
     * @param kv keys and values in a cache's buffers
     * @param mask the additive mask, or {@code null}
     * @return whether {@link #attend(NDArray, KeyValues, NDArray, AttentionScores, boolean)} may be called
     */
    static boolean applies(NDArray q, KeyValues kv, NDArray mask) {
        KeyValues.Pending pending = kv.pending();
        return pending == null
                ? applies(q, kv.keyBuffer(), kv.valueBuffer(), kv.length(), mask)
                : applies(q, pending.keyBuffer(), pending.valueBuffer(), kv.length(), mask);
    }

    /**
     * Attention over a cache's keys and values for arrays {@link #applies(NDArray, KeyValues,
     * NDArray)} accepts, writing the pending new keys and values into the buffers first where the
     * kernel can read them (dense, one position), else with the engine.
     *
     * @param q queries (B, H, 1, D); the result is attached to its manager
     * @param kv keys and values in a cache's buffers
     * @param mask the additive mask (B or 1, 1, 1, length), or {@code null}
     * @param scores the scale on {@code q·k} and the soft cap C (0: none)
     * @param writeCache whether the kernel may write the pending keys and values ({@link #WRITE_SWITCH})
     * @return the attended values (B, H, 1, D)
     */
    static NDArray attend(NDArray q, KeyValues kv, NDArray mask, AttentionScores scores, boolean writeCache) {
        KeyValues.Pending pending = kv.pending();
        int[] rowLengths = kv.rowLengths();
        if (pending == null || !writeCache || !writes(pending)) {
            return attend(q, kv.keyBuffer(), kv.valueBuffer(), kv.length(), rowLengths, mask, scores, null); // written first
        }
        NDArray out = attend(
                q, pending.keyBuffer(), pending.valueBuffer(), kv.length(), rowLengths, mask, scores, pending);
        kv.pendingWritten();
        return out;
    }

    /**
     * Whether the kernel can write these new keys and values: one dense float32 position each (into
     * a float16 cache rounded to nearest even, as the engine's conversion rounds).
     */
    static boolean writes(KeyValues.Pending pending) {
        Shape buffer = pending.keyBuffer().getShape();
        Shape fresh = new Shape(buffer.get(0), buffer.get(1), 1, buffer.get(3));
        return pending.keys().getShape().equals(fresh)
                && pending.values().getShape().equals(fresh)
                && slotsFit(pending, buffer.get(0), buffer.get(2))
                && NativeKernels.denseFloat32OnCpu(pending.keys())
                && NativeKernels.denseFloat32OnCpu(pending.values());
    }

    /** Whether every row's new position lies within the buffers' capacity. */
    private static boolean slotsFit(KeyValues.Pending pending, long rows, long capacity) {
        for (int b = 0; b < rows; b++) {
            int slot = pending.slotOf(b);
            if (slot < 0 || slot >= capacity) {
                return false;
            }
        }
        return true;
    }

    private static boolean maskFits(NDArray mask, long b, int length) {
        Shape m = mask.getShape();
        return m.dimension() == 4
                && (m.get(0) == b || m.get(0) == 1)
                && m.get(1) == 1
                && m.get(2) == 1
                && m.get(3) == length;
    }

    /**
     * {@code softmax(q k^T / sqrt(D) + mask) v} over the first {@code length} cached positions, for
     * arrays {@link #applies} accepts.
     *
     * @param q queries (B, H, 1, D); the result is attached to its manager
     * @param keys the cache's key buffer (B, H_kv, capacity, D)
     * @param values the cache's value buffer
     * @param length the cached positions to attend to
     * @param mask the additive mask (B or 1, 1, 1, length), or {@code null}
     * @return the attended values (B, H, 1, D)
     */
    static NDArray attend(NDArray q, NDArray keys, NDArray values, int length, NDArray mask) {
        return attend(q, keys, values, length, mask, AttentionScores.standard(q.getShape().get(3)));
    }

    /**
     * {@code softmax(cap(q k^T * scale) + mask) v} over the first {@code length} cached positions,
     * for arrays {@link #applies} accepts, where {@code cap(s)} is {@code tanh(s / C) * C} for
     * soft-capped scores (the kernel's tanh is within about 2 ulp), else {@code s}.
     *
     * @param q queries (B, H, 1, D); the result is attached to its manager
     * @param keys the cache's key buffer (B, H_kv, capacity, D)
     * @param values the cache's value buffer
     * @param length the cached positions to attend to
     * @param mask the additive mask (B or 1, 1, 1, length), or {@code null}
     * @param scores the scale on {@code q·k} and the soft cap C (0: none)
     * @return the attended values (B, H, 1, D)
     */
    static NDArray attend(
            NDArray q, NDArray keys, NDArray values, int length, NDArray mask, AttentionScores scores) {
        return attend(q, keys, values, length, null, mask, scores, null);
    }

    /**
     * The attention, writing {@code pending} (one position a row, or {@code null}) into the buffers
     * first; where {@code rowLengths} is given, sequence {@code b} attends over its first {@code
     * rowLengths[b]} positions (at most {@code length}, the mask's width).
     */
    private static NDArray attend(
            NDArray q, NDArray keys, NDArray values, int length, int[] rowLengths, NDArray mask,
            AttentionScores scores, KeyValues.Pending pending) {
        float scale = (float) scores.scale();
        float softcap = (float) scores.softcap();
        Shape qs = q.getShape();
        Shape cache = keys.getShape();
        NDArray out = q.getManager().create(qs, DataType.FLOAT32);
        ByteBuffer qb = NativeKernels.buffer(q);
        ByteBuffer kb = NativeKernels.buffer(keys);
        ByteBuffer vb = NativeKernels.buffer(values);
        ByteBuffer mb = mask == null ? null : NativeKernels.buffer(mask);
        ByteBuffer ob = NativeKernels.buffer(out);
        ByteBuffer fk = pending == null ? null : NativeKernels.buffer(pending.keys());
        ByteBuffer fv = pending == null ? null : NativeKernels.buffer(pending.values());
        int slot = pending == null ? -1 : pending.slot();
        int[] rowSlots = rowLengths == null ? null : rowSlots(pending, rowLengths);
        int heads = Math.toIntExact(qs.get(1));
        int kvHeads = Math.toIntExact(cache.get(1));
        int d = Math.toIntExact(qs.get(3));
        int capacity = Math.toIntExact(cache.get(2));
        int maskStride = mask == null || mask.getShape().get(0) == 1 ? 0 : length;
        int units = Math.toIntExact(qs.get(0) * kvHeads);
        int parts = Math.min(CoreWorkers.PARALLELISM, units);
        boolean half = keys.getDataType() == DataType.FLOAT16;
        boolean split = parts > 1 && 2L * keys.getDataType().getNumOfBytes() * units * length * d >= SPLIT_MIN_BYTES;
        if (split
                && CoreWorkers.inRanges(units, parts, (from, to) ->
                        attend(qb, kb, vb, mb, ob, fk, fv, slot, rowSlots, rowLengths, heads, kvHeads, d, capacity,
                                length, maskStride, scale, softcap, half, from, to))) {
            return out;
        }
        attend(qb, kb, vb, mb, ob, fk, fv, slot, rowSlots, rowLengths, heads, kvHeads, d, capacity, length,
                maskStride, scale, softcap, half, 0, units);
        return out;
    }

    /**
     * Each row's slot for its new key and value: the pending ones', else (nothing to write) the
     * last of its positions, which the kernel only checks.
     */
    private static int[] rowSlots(KeyValues.Pending pending, int[] rowLengths) {
        int[] slots = new int[rowLengths.length];
        for (int b = 0; b < slots.length; b++) {
            slots[b] = pending == null ? rowLengths[b] - 1 : pending.slotOf(b);
        }
        return slots;
    }

    private static native void attend(
            ByteBuffer q, ByteBuffer keys, ByteBuffer values, ByteBuffer mask, ByteBuffer out, ByteBuffer freshKeys,
            ByteBuffer freshValues, int slot, int[] rowSlots, int[] rowLengths, int heads, int kvHeads, int headDim,
            int capacity, int length, int maskStride, float scale, float softcap, boolean halfCache, int from, int to);
}
