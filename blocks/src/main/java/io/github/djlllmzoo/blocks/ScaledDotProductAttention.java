package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;

/**
 * {@code softmax(q k^T / sqrt(D) + mask) v}, shared by every attention block. Grouped-query
 * attention is computed without repeating keys and values: the query heads of one group are folded
 * into the query-length axis, so the cache holds only key/value heads.
 *
 * <p>In inference on the CPU, attention of at least {@link #SPLIT_MIN_WORK} multiply-adds is split
 * across the cores (see {@link CoreWorkers}): by sequences when the batch has several, else by
 * key/value heads (each part keeps its query heads). PyTorch computes a batched product of such
 * small matrices on one thread; at batch 8 attention over the cache took a fifth of a GPT-2
 * decode step with the other core idle.
 */
public final class ScaledDotProductAttention {

    /**
     * Multiply-adds of the scores ({@code B·H·T·S·D}) from which inference is split across the
     * cores: GPT-2 small's decode step from 86 cached positions at batch 8, from 683 at batch 1.
     * Below it the hand-over saved nothing measurable (batch 1, 128 to 256 positions: 1.2 to 1.5 ms
     * of attention per step either way).
     */
    static final long SPLIT_MIN_WORK = Long.getLong("llmzoo.attention.splitMinWork", 1L << 19);

    private ScaledDotProductAttention() {}

    /**
     * Attends.
     *
     * @param q queries (B, H, T, D)
     * @param k keys (B, H_kv, S, D), H divisible by H_kv
     * @param v values (B, H_kv, S, D)
     * @param mask additive mask broadcastable to (B, 1, T, S), or {@code null}
     * @param dropout dropout rate on the attention probabilities (training only)
     * @param training whether this is a training pass
     * @return the attended values (B, H, T, D)
     */
    public static NDArray attend(
            NDArray q, NDArray k, NDArray v, NDArray mask, float dropout, boolean training) {
        if (!training) {
            NDArray split = attendSplit(q, k, v, mask);
            if (split != null) {
                return split;
            }
        }
        return attendOnce(q, k, v, mask, dropout, training);
    }

    /**
     * Attends over keys and values from {@link KvCache#update} or {@link KeyValues#of}: a decode
     * step's attention by {@link DecodeAttention}'s kernel, reading the cache's buffers in place,
     * where it applies, else by {@link #attend} over views of them.
     *
     * @param q queries (B, H, T, D)
     * @param kv keys and values (B, H_kv, S, D)
     * @param mask additive mask broadcastable to (B, 1, T, S), or {@code null}
     * @param dropout dropout rate on the attention probabilities (training only)
     * @param training whether this is a training pass
     * @return the attended values (B, H, T, D)
     */
    public static NDArray attend(NDArray q, KeyValues kv, NDArray mask, float dropout, boolean training) {
        NDArray keys = kv.keyBuffer();
        NDArray values = kv.valueBuffer();
        if (keys != null
                && CoreWorkers.inferenceOnCpu(q, training)
                && DecodeAttention.applies(q, keys, values, kv.length(), mask)) {
            return DecodeAttention.attend(q, keys, values, kv.length(), mask);
        }
        return attend(q, kv.keys(), kv.values(), mask, dropout, training);
    }

    /**
     * Attention split across the cores, or {@code null} where it does not pay (or the workers are
     * busy).
     */
    static NDArray attendSplit(NDArray q, NDArray k, NDArray v, NDArray mask) {
        if (CoreWorkers.PARALLELISM < 2
                || q.size() * k.getShape().get(2) < SPLIT_MIN_WORK
                || !CoreWorkers.inferenceOnCpu(q, false)) {
            return null;
        }
        long b = q.getShape().get(0);
        long hKv = k.getShape().get(1);
        int axis = b > 1 ? 0 : 1; // sequences, else key/value heads
        long units = axis == 0 ? b : hKv;
        if (units < 2) {
            return null;
        }
        int parts = (int) Math.min(CoreWorkers.PARALLELISM, units);
        long[] bounds = CoreWorkers.bounds(units, parts);
        long[] queryBounds = bounds.clone();
        if (axis == 1) {
            long groups = q.getShape().get(1) / hKv;
            for (int i = 0; i < queryBounds.length; i++) {
                queryBounds[i] *= groups; // query heads h·G .. h·G+G-1 read key/value head h
            }
        }
        // The views belong to the step (the queries' manager), not to a longer-lived cache's.
        NDManager step = q.getManager();
        NDList qs = q.split(queryBounds, axis);
        NDList ks = k.split(bounds, axis);
        ks.attach(step);
        NDList vs = v.split(bounds, axis);
        vs.attach(step);
        boolean maskPerSequence = mask != null && axis == 0 && mask.getShape().get(0) == b;
        NDList masks = maskPerSequence ? mask.split(bounds, 0) : null;
        if (masks != null) {
            masks.attach(step);
        }
        NDArray[] outputs =
                CoreWorkers.run(
                        parts,
                        i -> attendOnce(qs.get(i), ks.get(i), vs.get(i), masks == null ? mask : masks.get(i), 0, false));
        return outputs == null ? null : NDArrays.concat(new NDList(outputs), axis); // (B, H, T, D)
    }

    /** Attention in one engine call per step (the training path). */
    static NDArray attendOnce(
            NDArray q, NDArray k, NDArray v, NDArray mask, float dropout, boolean training) {
        long b = q.getShape().get(0);
        long h = q.getShape().get(1);
        long t = q.getShape().get(2);
        long d = q.getShape().get(3);
        long hKv = k.getShape().get(1);
        long s = k.getShape().get(2);
        long groups = h / hKv;
        double scale = 1.0 / Math.sqrt(d);

        NDArray grouped = groups == 1 ? q : q.reshape(b, hKv, groups * t, d); // (B, Hkv, G*T, D)
        NDArray scores =
                grouped.matMul(k.transpose(0, 1, 3, 2)).muli(Scalars.of(scale, q)); // (B, Hkv, G*T, S)
        if (mask != null) {
            if (groups == 1) {
                scores = scores.add(mask); // (B, H, T, S)
            } else {
                NDArray perGroup = scores.reshape(b, hKv, groups, t, s); // (B, Hkv, G, T, S)
                scores = perGroup.add(mask.expandDims(1)).reshape(b, hKv, groups * t, s);
            }
        }
        NDArray probs = scores.softmax(-1);
        if (training && dropout > 0) {
            probs = probs.getNDArrayInternal().dropout(probs, dropout, true).singletonOrThrow();
        }
        NDArray out = probs.matMul(v); // (B, Hkv, G*T, D)
        return groups == 1 ? out : out.reshape(b, h, t, d);
    }
}
