package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;

/**
 * An adapter per row of the batch (each row's name, or {@code null} for the model's own weights),
 * as {@link LoraAdapter#selectRows} chooses them: each projection adds to each row the update of
 * that row's adapter, so requests for different adapters decode in one batch.
 *
 * <p>A projection's update for the whole batch is {@link Kernels#loraUpdate} over the concatenated
 * pairs of the adapters its rows use ({@link LoraRowPairs}): the engine's form is one product per
 * side, the other adapters' columns masked out per row between the two, {@code ((x [A_1; ...;
 * A_n]^T) * m) [B_1, ..., B_n]^T}, four engine calls; the CPU kernels compute each row's own
 * adapter's columns in one native call. Each pair is read once per step however many rows use it.
 * The concatenations and masks are made at a projection's first pass and kept until the selection
 * closes. Gathering each row's pair into batched engine products (S-LoRA's and Punica's form,
 * {@code B r (in + out)} elements kept per projection) took half the time of the masked form alone on
 * a CPU, but the model's steps with it were slower: 0.80-0.81x the base model's throughput at 8
 * rows over 4 adapters and the base (Llama-110M shape, rank 8), against 0.86-0.87x with the masked
 * form (docs/fine-tuning.md).
 *
 * <p>Inference only: one thread uses it, the one that selected it.
 */
final class LoraRows implements AutoCloseable {

    private final List<String> names;
    private final Map<LoraSlot, LoraRowPairs> updates = new IdentityHashMap<>();
    private NDManager manager;

    /** @param names each row's adapter name, {@code null} for none */
    LoraRows(List<String> names) {
        this.names = Collections.unmodifiableList(new ArrayList<>(names));
    }

    /** @return each row's adapter name, {@code null} for none */
    List<String> names() {
        return names;
    }

    /**
     * @param adapters a projection's pairs by adapter name
     * @return whether some row's adapter adapts that projection
     */
    boolean adapts(Map<String, LoraWeights> adapters) {
        for (String name : names) {
            if (name != null && adapters.containsKey(name)) {
                return true;
            }
        }
        return false;
    }

    /**
     * @param kernels the kernels that add the update ({@link Kernels#loraUpdate})
     * @param slot the projection's slot (the key its pairs are kept under)
     * @param adapters its pairs by adapter name
     * @param x the projection's input (B, ..., in), one row per selected name
     * @param y the frozen projection's output (B, ..., out); not to be read afterwards (the kernels
     *     may add the update into it)
     * @return {@code y} plus each row's update, or {@code y} itself where no row's adapter adapts
     *     the projection
     * @throws IllegalStateException if the batch has not one row per selected name
     */
    NDArray apply(Kernels kernels, LoraSlot slot, Map<String, LoraWeights> adapters, NDArray x, NDArray y) {
        Shape shape = x.getShape();
        if (shape.dimension() < 2 || shape.get(0) != names.size()) {
            throw new IllegalStateException(
                    "the LoRA selection names an adapter for each of " + names.size()
                            + " rows, but a projection's input has shape " + shape);
        }
        LoraRowPairs pairs = updates.computeIfAbsent(slot, s -> pairs(adapters, x));
        return pairs == null ? y : kernels.loraUpdate(x, y, pairs); // (B, ..., out)
    }

    /** One projection's concatenated pairs, or {@code null} if no row's adapter adapts it. */
    private LoraRowPairs pairs(Map<String, LoraWeights> adapters, NDArray x) {
        List<String> used = new ArrayList<>();
        int[] adapterOfRow = new int[names.size()];
        for (int row = 0; row < names.size(); row++) {
            String name = names.get(row);
            adapterOfRow[row] = -1;
            if (name != null && adapters.containsKey(name)) {
                if (!used.contains(name)) {
                    used.add(name);
                }
                adapterOfRow[row] = used.indexOf(name);
            }
        }
        if (used.isEmpty()) {
            return null;
        }
        if (manager == null) {
            // the pairs' own manager (the model's), which outlives the step that first asks
            manager = adapters.get(used.get(0)).a().getArray().getManager().newSubManager(x.getDevice());
        }
        List<NDArray> as = new ArrayList<>(used.size());
        List<NDArray> bs = new ArrayList<>(used.size());
        float[] scalings = new float[used.size()];
        for (int i = 0; i < used.size(); i++) {
            LoraWeights pair = adapters.get(used.get(i));
            as.add(pair.a().getArray()); // (r, in)
            bs.add(pair.b().getArray()); // (out, r)
            scalings[i] = pair.scaling();
        }
        return LoraRowPairs.concatenate(manager, as, bs, scalings, adapterOfRow);
    }

    /** Frees the concatenated pairs and masks. */
    @Override
    public void close() {
        updates.clear();
        if (manager != null) {
            manager.close();
            manager = null;
        }
    }
}
