package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;

/**
 * One prefill pass over a chunk of a prompt into a row of a {@link SlotKvCache}
 * ({@link SlotPasses#startPrefill}), whose layers run a few at a time: a decode loop runs some
 * of them each step, between the running rows' decode steps, so what a joining prompt adds to a
 * step is bounded by layers as well as by tokens. The layers compute exactly what one pass would
 * (the same chunk, the same operations, in the same order), so a prompt's output does not depend on
 * how its layers were spread; the row's new positions are counted once the last layer ran.
 *
 * <p>Its arrays live on the manager of the pass's input, which the caller keeps open until it is
 * done with the pass (and closes to drop a pass it abandons: the row's positions were never
 * counted). Between two runs the caller may run other passes over other rows of the cache, and grow
 * the cache.
 */
public final class SlotPrefill {

    private final CausalLmBlock model;
    private final AttentionContext context;
    private final SlotKvCache cache;
    private final int row;
    private final int tokens;
    private NDArray h; // (1, T, E) the residual stream after the layers run so far
    private int nextLayer;

    SlotPrefill(CausalLmBlock model, NDArray h, AttentionContext context, SlotKvCache cache, int row, int tokens) {
        this.model = model;
        this.h = h;
        this.context = context;
        this.cache = cache;
        this.row = row;
        this.tokens = tokens;
    }

    /** @return the chunk's tokens (T) */
    public int tokens() {
        return tokens;
    }

    /** @return layers still to run */
    public int remainingLayers() {
        return model.config().numLayers() - nextLayer;
    }

    /** @return whether every layer ran ({@link #logits} may be read) */
    public boolean done() {
        return remainingLayers() == 0;
    }

    /**
     * Runs the next layers; once the last has run, the row's new positions count as stored.
     *
     * @param layers the most layers to run (≥ 1)
     */
    public void run(int layers) {
        if (layers < 1 || done()) {
            throw new IllegalStateException("cannot run " + layers + " more layers of a pass with "
                    + remainingLayers() + " left");
        }
        int to = nextLayer + Math.min(layers, remainingLayers());
        h = model.layersForward(h, context, nextLayer, to);
        nextLayer = to;
        if (done()) {
            cache.commitPrefill(row, tokens);
        }
    }

    /**
     * @return the logits of the chunk's last position (1, 1, V)
     * @throws IllegalStateException if layers are left to run
     */
    public NDArray logits() {
        if (!done()) {
            throw new IllegalStateException(remainingLayers() + " layers of the pass are still to run");
        }
        return model.lastLogits(h);
    }
}
