package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import java.util.HashMap;
import java.util.Map;
import java.util.function.IntFunction;

/**
 * A model's inference passes over a {@link SlotKvCache}, whose rows each hold a sequence at a
 * length of its own (a decode loop that lets sequences join and leave): a decode step over the
 * first rows, each at its own position, and a prompt's chunk prefilled into one row, whose layers
 * may run a few at a time ({@link SlotPrefill}). The model's layers compute both; this class builds
 * their positions, masks and cache views.
 */
public final class SlotPasses {

    private final CausalLmBlock model;

    /** @param model the model, its parameters loaded */
    public SlotPasses(CausalLmBlock model) {
        this.model = model;
    }

    /**
     * Allocates an empty cache for the model, on {@code manager}'s device.
     *
     * @param manager the parent manager of the cache
     * @return an empty cache; its buffers are allocated by {@link SlotKvCache#reserve}
     */
    public SlotKvCache newCache(NDManager manager) {
        DecoderConfig config = model.config();
        return new SlotKvCache(manager, config.numLayers(), config.numKvHeads(), config.headDim(),
                config.maxPositions(), model.dataType(), model.kvCacheDataType());
    }

    /**
     * A decode step over rows {@code [0, n)} of a slot cache, each row one new token at its own
     * position ({@link SlotKvCache#length}).
     *
     * @param inputIds each row's new token (n, 1) int64; every result is attached to its manager
     * @param cache the cache; each row's new position is counted once the step succeeds
     * @return logits (n, 1, V)
     */
    public NDArray decode(NDArray inputIds, SlotKvCache cache) {
        NDManager modelManager = model.placementManager();
        NDManager manager = inputIds.getManager();
        int n = Math.toIntExact(inputIds.getShape().get(0));
        int[] past = cache.lengths(n);
        long[] positionValues = new long[n];
        for (int r = 0; r < n; r++) {
            positionValues[r] = past[r];
        }
        NDArray positions = manager.create(positionValues, new Shape(n, 1)); // (n, 1)
        NDArray h = model.embed(null, inputIds, positions, false); // (n, 1, E)
        DataType type = h.getDataType();
        AttentionContext context = new AttentionContext(
                positions, AttentionMask.rows(manager, past, 0, type),
                windowMasks(window -> AttentionMask.rows(manager, past, window, type)),
                cache.decodePass(n), modelManager);
        h = model.layersForward(h, context, 0, model.config().numLayers());
        cache.commitDecode(n);
        return model.lastLogits(h);
    }

    /**
     * The next {@code T} tokens of one row of a slot cache (a chunk of its prompt) in one pass.
     *
     * @param inputIds the tokens (1, T) int64; every result is attached to its manager
     * @param cache the cache; the row's new positions are counted once the pass succeeds
     * @param row the row
     * @return logits of the last position (1, 1, V)
     */
    public NDArray prefill(NDArray inputIds, SlotKvCache cache, int row) {
        SlotPrefill pass = startPrefill(inputIds, cache, row);
        pass.run(model.config().numLayers());
        return pass.logits();
    }

    /**
     * Starts the pass of {@link #prefill} without running its layers: the caller runs them a few at
     * a time ({@link SlotPrefill#run}), so a decode loop spreads a prompt chunk's layers over
     * several steps. The layers compute what one pass would.
     *
     * @param inputIds the tokens (1, T) int64; the pass's arrays are attached to its manager, which
     *     must outlive the pass
     * @param cache the cache; the row's new positions are counted once the last layer ran
     * @param row the row
     * @return the pass, before its first layer
     */
    public SlotPrefill startPrefill(NDArray inputIds, SlotKvCache cache, int row) {
        NDManager modelManager = model.placementManager();
        NDManager manager = inputIds.getManager();
        int t = Math.toIntExact(inputIds.getShape().get(1));
        int past = cache.length(row);
        NDArray positions = manager.arange(past, past + t, 1, DataType.INT64).expandDims(0); // (1, T)
        NDArray h = model.embed(null, inputIds, positions, false); // (1, T, E)
        DataType type = h.getDataType();
        AttentionContext context = new AttentionContext(
                positions, AttentionMask.build(manager, t, past, null, type),
                windowMasks(window -> AttentionMask.window(manager, t, past,
                        WindowLayerCache.keyPositions(0, past + t, Integer.MAX_VALUE), // a slot row keeps every position
                        window, null, type)),
                cache.prefillPass(row, t), modelManager);
        return new SlotPrefill(model, h, context, cache, row, t);
    }

    /** One mask per distinct sliding window of the model's layers (global layers take the causal one). */
    private Map<Integer, NDArray> windowMasks(IntFunction<NDArray> maskOf) {
        DecoderConfig config = model.config();
        Map<Integer, NDArray> masks = new HashMap<>();
        for (int i = 0; i < config.numLayers(); i++) {
            int window = config.slidingWindow(i);
            if (window > 0 && !masks.containsKey(window)) {
                masks.put(window, maskOf.apply(window));
            }
        }
        return masks;
    }
}
