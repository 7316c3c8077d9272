package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import java.util.Arrays;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Mistral's sliding window (query i sees keys i-W+1 .. i): the windowed layers' caches stay at W
 * slots however long the sequence grows, and decoding through them, one token or a chunk at a time,
 * crossing the window anywhere, gives the logits of a full recompute over the whole sequence.
 */
class SlidingWindowTest {

    private static final int WINDOW = 4;
    private static final int LENGTH = 48;
    private static final int LAYERS = 2;

    private static LlamaConfig config() throws Exception {
        JsonObject json =
                JsonParser.parseString(
                                "{\"model_type\": \"mistral\", \"num_hidden_layers\": 2,"
                                        + " \"vocab_size\": 50, \"hidden_size\": 32,"
                                        + " \"intermediate_size\": 48, \"num_attention_heads\": 4,"
                                        + " \"num_key_value_heads\": 2,"
                                        + " \"max_position_embeddings\": 64}")
                        .getAsJsonObject();
        json.addProperty("sliding_window", WINDOW);
        return LlamaConfig.parse(ConfigJson.of(null, json));
    }

    private static long[] ids() {
        Random random = new Random(7);
        long[] ids = new long[LENGTH];
        for (int i = 0; i < LENGTH; i++) {
            ids[i] = random.nextInt(50);
        }
        return ids;
    }

    @Test
    void windowedLayersKeepOnlyTheWindowOverALongGeneration() throws Exception {
        assertCachedEqualsFullRecompute(new int[] {2}, true);
    }

    @Test
    void chunksCrossingTheWindowEqualFullRecompute() throws Exception {
        // before and across the window, a chunk longer than it, chunks and steps past it
        assertCachedEqualsFullRecompute(new int[] {3, 6, 5, 1, 7, 1, 1, 9, 2}, false);
    }

    private static void assertCachedEqualsFullRecompute(int[] chunks, boolean checkMemory)
            throws Exception {
        LlamaConfig config = config();
        LlamaModel model = new LlamaModel(config);
        long[] ids = ids();
        try (NDManager manager = NDManager.newBaseManager()) {
            LlamaModelTest.setRandomWeights(model, manager);
            NDArray full =
                    model.forward(null, manager.create(ids, new Shape(1, LENGTH)), null, null, null, false, false);
            double maxError = 0;
            try (KvCache cache = model.newCache(manager, 1, 2)) {
                int done = 0;
                int chunk = 0;
                while (done < LENGTH) {
                    int t = Math.min(LENGTH - done, chunk < chunks.length ? chunks[chunk++] : 1);
                    long[] part = Arrays.copyOfRange(ids, done, done + t);
                    NDArray logits =
                            model.forward(null, manager.create(part, new Shape(1, t)), null, null, cache, false, false);
                    maxError =
                            Math.max(
                                    maxError,
                                    LlamaModelTest.maxAbsDiff(
                                            full.get(new NDIndex(":, {}:{}, :", done, done + t)), logits));
                    done += t;
                    if (checkMemory) {
                        for (int layer = 0; layer < LAYERS; layer++) {
                            int slots = cache.layerCapacity(layer);
                            assertTrue(slots <= WINDOW, done + " positions held in " + slots + " slots");
                        }
                    }
                }
                assertEquals(LENGTH, cache.length());
            }
            float bound = RoundingBound.ofLogits(config, LENGTH, full);
            assertTrue(maxError < bound, "max |cached - full| = " + maxError + ", bound " + bound);
        }
    }

    @Test
    void aDecodeStepPastTheWindowCanBeUndoneButOverwrittenPositionsCannot() throws Exception {
        LlamaConfig config = config();
        LlamaModel model = new LlamaModel(config);
        long[] ids = ids();
        try (NDManager manager = NDManager.newBaseManager()) {
            LlamaModelTest.setRandomWeights(model, manager);
            KvCache cache = model.newCache(manager, 1, WINDOW);
            int prefill = 3 * WINDOW;
            model.forward(null, manager.create(Arrays.copyOf(ids, prefill), new Shape(1, prefill)), null, null, cache, false, false);
            NDArray next = manager.create(new long[] {ids[prefill]}, new Shape(1, 1));
            NDArray first = model.forward(null, next, null, null, cache, false, false);
            cache.truncate(prefill);
            NDArray again = model.forward(null, next, null, null, cache, false, false);
            assertEquals(0.0, LlamaModelTest.maxAbsDiff(first, again));
            assertThrows(IllegalStateException.class, () -> cache.truncate(prefill - WINDOW));
            assertEquals(prefill + 1, cache.length());
        }
    }
}
