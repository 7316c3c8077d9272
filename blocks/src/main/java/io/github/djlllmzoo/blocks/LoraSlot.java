package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.training.ParameterStore;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The LoRA pairs attached to one projection, by adapter name; a forward pass adds the update of
 * the adapter {@link LoraAdapter#selected()} names, or none; under a per-row selection ({@link
 * LoraAdapter#selectRows}) each row's own adapter's.
 */
final class LoraSlot {

    private final Map<String, LoraWeights> adapters = new ConcurrentHashMap<>();

    void put(String adapter, LoraWeights weights) {
        if (adapters.putIfAbsent(adapter, weights) != null) {
            throw new IllegalStateException("an adapter named '" + adapter + "' is already attached");
        }
    }

    void remove(String adapter) {
        adapters.remove(adapter);
    }

    /** @return the names of the adapters attached here */
    Set<String> names() {
        return adapters.keySet();
    }

    /** @return whether {@link #apply} adds an update: the selected adapter adapts this projection */
    boolean adapts() {
        if (adapters.isEmpty()) {
            return false;
        }
        LoraRows rows = LoraAdapter.selectedRows();
        if (rows != null) {
            return rows.adapts(adapters);
        }
        String name = LoraAdapter.selected();
        return name != null && adapters.containsKey(name);
    }

    /**
     * @param kernels the kernels that add a per-row selection's updates
     * @param store the parameter store, or {@code null}
     * @param x the projection's input (..., in)
     * @param y the frozen projection's output (..., out), or that output already added to a
     *     residual; not to be read afterwards (a per-row update may be added into it)
     * @param training whether this is a training pass
     * @return {@code y}, plus the selected adapter's update where it adapts this projection
     * @throws IllegalStateException if this is a training pass under a per-row selection
     */
    NDArray apply(Kernels kernels, ParameterStore store, NDArray x, NDArray y, boolean training) {
        if (adapters.isEmpty()) {
            return y;
        }
        LoraRows rows = LoraAdapter.selectedRows();
        if (rows != null) {
            if (training) {
                throw new IllegalStateException(
                        "an adapter per row is selected for inference; train one adapter at a time (LoraAdapter.select)");
            }
            return rows.apply(kernels, this, adapters, x, y);
        }
        String name = LoraAdapter.selected();
        LoraWeights weights = name == null ? null : adapters.get(name);
        return weights == null ? y : y.add(weights.delta(store, x, training));
    }
}
