package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * An adapter per row of the batch (each row's name, or {@code null} for the model's own weights),
 * as {@link LoraAdapter#selectRows} chooses them: each projection adds to each row the update of
 * that row's adapter, so requests for different adapters decode in one batch.
 *
 * <p>A projection's update for the whole batch is one product per side over the concatenated
 * pairs of the adapters its rows use, the other adapters' columns masked out per row between the
 * two: {@code ((x [A_1; ...; A_n]^T) * m) [B_1, ..., B_n]^T}, where row {@code b}'s mask holds its
 * own adapter's {@code alpha / r} on that adapter's rank columns and zeros elsewhere (and only
 * zeros for a row whose adapter does not adapt the projection). Each pair is read once per step
 * however many rows use it, and the products are the plain matrix products a single adapter's
 * update makes. The concatenations and masks are made at a projection's first pass and kept
 * until the selection closes, so a decode step under the same selection makes four engine calls
 * for the update. Gathering each row's pair into batched products (S-LoRA's and Punica's form,
 * {@code B r (in + out)} elements kept per projection) took half the time of this form alone on
 * a CPU, but the model's steps with it were slower: 0.80-0.81x the base model's throughput at 8
 * rows over 4 adapters and the base (Llama-110M shape, rank 8), against 0.86-0.87x with this form
 * (docs/fine-tuning.md).
 *
 * <p>Inference only: one thread uses it, the one that selected it.
 */
final class LoraRows implements AutoCloseable {

    private final List<String> names;
    private final Map<LoraSlot, Update> updates = new IdentityHashMap<>();
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
     * @param slot the projection's slot (the key its update is kept under)
     * @param adapters its pairs by adapter name
     * @param x the projection's input (B, ..., in), one row per selected name
     * @param y the frozen projection's output (B, ..., out)
     * @return {@code y} plus each row's update, or {@code y} itself where no row's adapter adapts
     *     the projection
     * @throws IllegalStateException if the batch has not one row per selected name
     */
    NDArray apply(LoraSlot slot, Map<String, LoraWeights> adapters, NDArray x, NDArray y) {
        Shape shape = x.getShape();
        if (shape.dimension() < 2 || shape.get(0) != names.size()) {
            throw new IllegalStateException(
                    "the LoRA selection names an adapter for each of " + names.size()
                            + " rows, but a projection's input has shape " + shape);
        }
        Update update = updates.computeIfAbsent(slot, s -> update(adapters, x));
        if (update == null) {
            return y;
        }
        boolean rows3 = shape.dimension() == 3; // the masks are (B, 1, R): other ranks pass as (B, T, in)
        NDArray in = rows3 ? x : x.reshape(names.size(), -1, shape.get(shape.dimension() - 1));
        NDArray down = in.matMul(update.a).muli(update.mask); // (B, T, R), other adapters' columns zero
        NDArray delta = down.matMul(update.b); // (B, T, out)
        return y.add(rows3 ? delta : delta.reshape(y.getShape())); // (B, ..., out)
    }

    /** One projection's concatenated pairs and row masks, or {@code null} if no row's adapter adapts it. */
    private Update update(Map<String, LoraWeights> adapters, NDArray x) {
        Map<String, LoraWeights> used = new LinkedHashMap<>();
        for (String name : names) {
            LoraWeights pair = name == null ? null : adapters.get(name);
            if (pair != null) {
                used.putIfAbsent(name, pair);
            }
        }
        if (used.isEmpty()) {
            return null;
        }
        if (manager == null) {
            // the pairs' own manager (the model's), which outlives the step that first asks
            manager = used.values().iterator().next().a().getArray().getManager().newSubManager(x.getDevice());
        }
        NDList as = new NDList(used.size());
        NDList bs = new NDList(used.size());
        Map<String, Integer> firstColumn = new LinkedHashMap<>();
        int rank = 0;
        for (Map.Entry<String, LoraWeights> e : used.entrySet()) {
            as.add(e.getValue().a().getArray()); // (r, in)
            bs.add(e.getValue().b().getArray()); // (out, r)
            firstColumn.put(e.getKey(), rank);
            rank += (int) e.getValue().aShape().get(0);
        }
        float[] mask = new float[names.size() * rank];
        for (int row = 0; row < names.size(); row++) {
            LoraWeights pair = used.get(names.get(row));
            if (pair != null) {
                int from = row * rank + firstColumn.get(names.get(row));
                Arrays.fill(mask, from, from + (int) pair.aShape().get(0), pair.scaling());
            }
        }
        NDArray a = as.size() == 1 ? as.head().duplicate() : NDArrays.concat(as, 0); // (R, in)
        NDArray b = bs.size() == 1 ? bs.head().duplicate() : NDArrays.concat(bs, 1); // (out, R)
        a.attach(manager);
        b.attach(manager);
        DataType type = a.getDataType();
        NDArray m = manager.create(mask, new Shape(names.size(), 1, rank)); // (B, 1, R)
        NDArray aT = a.transpose(); // views made once, not at every pass
        NDArray bT = b.transpose();
        aT.attach(manager);
        bT.attach(manager);
        return new Update(aT, bT, m.getDataType() == type ? m : m.toType(type, false));
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

    /**
     * One projection's update for the batch: its rows' adapters' A and B concatenated, as {@code
     * [A_1; ...; A_n]^T}, (in, R), and {@code [B_1, ..., B_n]^T}, (R, out), and the row masks, (B,
     * 1, R): row {@code b}'s holds its adapter's {@code alpha / r} on that adapter's rank columns,
     * zeros elsewhere.
     */
    private record Update(NDArray a, NDArray b, NDArray mask) {}
}
