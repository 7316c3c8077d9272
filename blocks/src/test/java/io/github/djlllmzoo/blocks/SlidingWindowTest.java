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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Sliding windows (query i sees keys i-W+1 .. i) per layer, for every family that has them
 * (Mistral and Phi-3 on every layer, Qwen2 from {@code max_window_layers} on, Gemma 2 on the even
 * layers, Gemma 3 all but every {@code sliding_window_pattern}-th): the windowed layers' caches stay
 * at W slots however long the sequence grows while the global layers keep everything, and decoding
 * through them, one token or a chunk at a time, crossing the window anywhere, gives the logits of a
 * full recompute over the whole sequence.
 */
class SlidingWindowTest {

    private static final int WINDOW = 4;
    private static final int LENGTH = 48;
    private static final int LAYERS = 4;

    private static LlamaConfig config(String family) throws Exception {
        JsonObject json =
                JsonParser.parseString(
                                "{\"num_hidden_layers\": 4,"
                                        + " \"vocab_size\": 50, \"hidden_size\": 32,"
                                        + " \"intermediate_size\": 48, \"num_attention_heads\": 4,"
                                        + " \"num_key_value_heads\": 2, \"head_dim\": 8,"
                                        + " \"max_position_embeddings\": 64}")
                        .getAsJsonObject();
        json.addProperty("model_type", family);
        json.addProperty("sliding_window", WINDOW);
        switch (family) {
            case "qwen2" -> {
                json.addProperty("use_sliding_window", true);
                json.addProperty("max_window_layers", 1);
            }
            case "gemma2" -> {
                json.addProperty("attn_logit_softcapping", 5.0);
                json.addProperty("final_logit_softcapping", 3.0);
                json.addProperty("query_pre_attn_scalar", 16);
            }
            case "gemma3_text" -> {
                json.addProperty("sliding_window_pattern", 3);
                json.addProperty("rope_local_base_freq", 100.0);
                json.add("rope_scaling", JsonParser.parseString("{\"rope_type\": \"linear\", \"factor\": 2.0}"));
            }
            default -> { }
        }
        return LlamaConfig.parse(ConfigJson.of(null, json));
    }

    private static LlamaConfig config() throws Exception {
        return config("mistral");
    }

    private static long[] ids() {
        Random random = new Random(7);
        long[] ids = new long[LENGTH];
        for (int i = 0; i < LENGTH; i++) {
            ids[i] = random.nextInt(50);
        }
        return ids;
    }

    @ParameterizedTest
    @ValueSource(strings = {"mistral", "phi3", "qwen2", "gemma2", "gemma3_text"})
    void windowedLayersKeepOnlyTheWindowOverALongGeneration(String family) throws Exception {
        assertCachedEqualsFullRecompute(config(family), new int[] {2}, true);
    }

    @ParameterizedTest
    @ValueSource(strings = {"mistral", "phi3", "qwen2", "gemma2", "gemma3_text"})
    void chunksCrossingTheWindowEqualFullRecompute(String family) throws Exception {
        // before and across the window, a chunk longer than it, chunks and steps past it
        assertCachedEqualsFullRecompute(config(family), new int[] {3, 6, 5, 1, 7, 1, 1, 9, 2}, false);
    }

    private static void assertCachedEqualsFullRecompute(LlamaConfig config, int[] chunks, boolean checkMemory)
            throws Exception {
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
                        int windowed = 0;
                        for (int layer = 0; layer < LAYERS; layer++) {
                            int slots = cache.layerCapacity(layer);
                            if (config.slidingWindow(layer) > 0) {
                                windowed++;
                                assertTrue(slots <= WINDOW, done + " positions held in " + slots + " slots");
                            } else {
                                assertTrue(slots >= done, "a global layer holds " + slots + " of " + done);
                            }
                        }
                        assertTrue(windowed > 0, config.modelType() + " has windowed layers");
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
