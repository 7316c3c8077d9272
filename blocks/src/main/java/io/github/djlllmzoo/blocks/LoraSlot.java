package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.training.ParameterStore;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The LoRA pairs attached to one projection, by adapter name; a forward pass adds the update of
 * the adapter {@link LoraAdapter#selected()} names, or none.
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

    /** @return whether {@link #apply} adds an update: the selected adapter adapts this projection */
    boolean adapts() {
        if (adapters.isEmpty()) {
            return false;
        }
        String name = LoraAdapter.selected();
        return name != null && adapters.containsKey(name);
    }

    /**
     * @param store the parameter store, or {@code null}
     * @param x the projection's input (..., in)
     * @param y the frozen projection's output (..., out)
     * @param training whether this is a training pass
     * @return {@code y}, plus the selected adapter's update where it adapts this projection
     */
    NDArray apply(ParameterStore store, NDArray x, NDArray y, boolean training) {
        if (adapters.isEmpty()) {
            return y;
        }
        String name = LoraAdapter.selected();
        LoraWeights weights = name == null ? null : adapters.get(name);
        return weights == null ? y : y.add(weights.delta(store, x, training));
    }
}
