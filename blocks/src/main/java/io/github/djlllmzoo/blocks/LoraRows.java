package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.ArrayList;
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
 * <p>A projection's update for the whole batch is two batched products over its pairs gathered
 * per row (S-LoRA's and Punica's form): {@code (x_b A_b^T) (s_b B_b^T)} for every row {@code b} at
 * once, zeros standing in for a row whose adapter does not adapt the projection. The gathered
 * pairs are made at a projection's first pass and kept until the selection closes, so a decode
 * step under the same selection makes three engine calls for the update, one fewer than a single
 * adapter's. Measured against one product per side over the adapters' concatenated pairs with
 * the other adapters' columns masked out per row (each pair read once, but four calls and every
 * adapter's rank computed for every row), the gathered form took 0.55-0.65x the time on a CPU
 * at 8 rows over 4 adapters (docs/fine-tuning.md). What it keeps: {@code B r (in + out)}
 * elements per adapted projection.
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
        NDArray rows = shape.dimension() == 3 ? x : x.reshape(names.size(), -1, shape.get(shape.dimension() - 1));
        NDArray delta = rows.matMul(update.a).matMul(update.b); // (B, T, r) then (B, T, out)
        return y.add(shape.dimension() == 3 ? delta : delta.reshape(y.getShape())); // (B, ..., out)
    }

    /** One projection's pairs gathered per row, or {@code null} if no row's adapter adapts it. */
    private Update update(Map<String, LoraWeights> adapters, NDArray x) {
        Map<String, LoraWeights> used = new LinkedHashMap<>();
        int rank = 0;
        for (String name : names) {
            LoraWeights pair = name == null ? null : adapters.get(name);
            if (pair != null && used.putIfAbsent(name, pair) == null) {
                rank = Math.max(rank, (int) pair.aShape().get(0));
            }
        }
        if (used.isEmpty()) {
            return null;
        }
        LoraWeights any = used.values().iterator().next();
        if (manager == null) {
            // the pairs' own manager (the model's), which outlives the step that first asks
            manager = any.a().getArray().getManager().newSubManager(x.getDevice());
        }
        DataType type = any.a().getArray().getDataType();
        long in = any.aShape().get(1);
        long out = any.bShape().get(0);
        try (NDManager scratch = manager.newSubManager()) { // what the stacks are made of
            Map<String, NDArray[]> padded = new LinkedHashMap<>(); // adapter -> {A^T, s B^T}, zeros past its rank
            for (Map.Entry<String, LoraWeights> e : used.entrySet()) {
                LoraWeights pair = e.getValue();
                NDArray aT = pair.a().getArray().transpose(); // (in, r), a view of the model's array
                NDArray bT = pair.b().getArray().transpose(); // (r, out)
                aT.attach(scratch);
                bT.attach(scratch);
                long r = pair.aShape().get(0);
                NDArray a = scratch.zeros(new Shape(in, rank), type);
                NDArray b = scratch.zeros(new Shape(rank, out), type);
                a.set(new NDIndex(":, :{}", r), aT);
                b.set(new NDIndex(":{}", r), bT.mul(pair.scaling()));
                padded.put(e.getKey(), new NDArray[] {a, b});
            }
            NDArray[] none = {scratch.zeros(new Shape(in, rank), type), scratch.zeros(new Shape(rank, out), type)};
            NDList as = new NDList(names.size());
            NDList bs = new NDList(names.size());
            for (String name : names) {
                NDArray[] pair = padded.getOrDefault(name, none);
                as.add(pair[0]);
                bs.add(pair[1]);
            }
            NDArray a = NDArrays.stack(as); // (B, in, r)
            NDArray b = NDArrays.stack(bs); // (B, r, out)
            a.attach(manager);
            b.attach(manager);
            return new Update(a, b);
        }
    }

    /** Frees the pairs gathered for the batch. */
    @Override
    public void close() {
        updates.clear();
        if (manager != null) {
            manager.close();
            manager = null;
        }
    }

    /**
     * One projection's pairs for the batch, row {@code b}'s its adapter's (zeros for a row without
     * one): {@code A^T}, (B, in, r), and {@code (alpha / r) B^T}, (B, r, out), {@code r} the largest
     * rank of the rows' adapters, a smaller one padded with zeros.
     */
    private record Update(NDArray a, NDArray b) {}
}
