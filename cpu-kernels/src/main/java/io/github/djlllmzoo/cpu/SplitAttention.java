package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.ScaledDotProductAttention;

/**
 * Attention split across the CPU's cores ({@link CoreWorkers}): by sequences when the batch has
 * several, else by key/value heads (each part keeps its query heads), each part computed as {@link
 * ScaledDotProductAttention} computes the whole. PyTorch computes a batched product of such small
 * matrices on one thread, so without this a batch's attention over its cache ran on one core with
 * the others idle (docs/PERFORMANCE.md, "Attention split across the cores").
 */
final class SplitAttention {

    /**
     * Multiply-adds of the scores ({@code B·H·T·S·D}) from which inference is split across the
     * cores (GPT-2 small's decode step from 86 cached positions at batch 8, from 683 at batch 1):
     * below it the hand-over saves nothing measurable.
     */
    static final long SPLIT_MIN_WORK = Long.getLong("llmzoo.attention.splitMinWork", 1L << 19);

    private SplitAttention() {}

    /**
     * Attention split across the cores, for inference.
     *
     * @param q queries (B, H, T, D); the result is attached to its manager
     * @param k keys (B, H_kv, S, D)
     * @param v values (B, H_kv, S, D)
     * @param mask additive mask broadcastable to (B, 1, T, S), or {@code null}
     * @return the attended values (B, H, T, D), or {@code null} where splitting does not pay (or
     *     the workers are busy)
     */
    static NDArray attend(NDArray q, NDArray k, NDArray v, NDArray mask) {
        return attend(q, k, v, mask, AttentionScores.standard(q.getShape().get(3)));
    }

    /**
     * Attention with the given scores split across the cores, for inference.
     *
     * @param q queries (B, H, T, D); the result is attached to its manager
     * @param k keys (B, H_kv, S, D)
     * @param v values (B, H_kv, S, D)
     * @param mask additive mask broadcastable to (B, 1, T, S), or {@code null}
     * @param scores how the products become scores
     * @return the attended values (B, H, T, D), or {@code null} where splitting does not pay
     */
    static NDArray attend(NDArray q, NDArray k, NDArray v, NDArray mask, AttentionScores scores) {
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
                        i -> ScaledDotProductAttention.attend(
                                qs.get(i), ks.get(i), vs.get(i), masks == null ? mask : masks.get(i), scores, 0, false));
        return outputs == null ? null : NDArrays.concat(new NDList(outputs), axis); // (B, H, T, D)
    }
}
