package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDManager;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.TranslateException;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/**
 * Native memory and threads: many predictions leave the model's arrays and the process's native
 * memory flat, one model serves 16 threads with the single-threaded results, and closing a model
 * frees its arrays and makes later use a clear error.
 */
class NativeResourcesTest {

    private static final Path GPT2_TINY = Paths.get(System.getProperty("llmzoo.testdata"), "golden", "gpt2-tiny");

    /**
     * The bound on RSS growth over the measured calls, each RSS taken after a full GC (which gives
     * back the Java heap pages the calls' garbage touched, so what remains is native memory).
     */
    private static final long RSS_GROWTH_BOUND_BYTES = 50L << 20;

    /**
     * Calls before measuring: the allocators' and JIT's RSS grows over about the first thousand
     * calls and is flat after that (measured over 6,000 calls).
     */
    private static final int WARM_UP_CALLS = 1000;

    @Test
    void thousandsOfPredictionsKeepNativeMemoryFlat() throws Exception {
        long[] prompt = goldenPrompt();
        GenerationConfig config = budget(4);
        try (LocalModel model = LocalModel.load(GPT2_TINY);
                Predictor<GenerationRequest, GenerationResult> predictor = PredictorBadRequestTest.newPredictor(model)) {
            NDManager manager = model.model().getNDManager();
            long[] first = predictor.predict(GenerationRequest.ofIds(prompt, config)).tokenIds();
            for (int i = 0; i < WARM_UP_CALLS; i++) {
                predictor.predict(GenerationRequest.ofIds(prompt, config));
            }
            int arraysBefore = manager.getManagedArrays().size();
            long rssBefore = settledRssBytes();
            int calls = 2000;
            for (int i = 0; i < calls; i++) {
                long[] ids = predictor.predict(GenerationRequest.ofIds(prompt, config)).tokenIds();
                if (i % 500 == 0) {
                    assertArrayEquals(first, ids, "call " + i);
                }
            }
            long rssPeak = rssBytes();
            int arraysAfter = manager.getManagedArrays().size();
            long rssAfter = settledRssBytes();
            System.out.printf(
                    "%d predictions: managed arrays %d -> %d; RSS after a full GC %.1f MB -> %.1f MB (growth %.1f MB;"
                            + " %.1f MB before the GC, Java heap pages included)%n",
                    calls, arraysBefore, arraysAfter, rssBefore / 1e6, rssAfter / 1e6, (rssAfter - rssBefore) / 1e6, rssPeak / 1e6);
            assertEquals(arraysBefore, arraysAfter, "every array a prediction makes is closed with it");
            assertTrue(rssAfter - rssBefore < RSS_GROWTH_BOUND_BYTES, "RSS grew by " + (rssAfter - rssBefore) + " bytes");
        }
    }

    @Test
    void sixteenThreadsOnOneModelGetTheSingleThreadedResults() throws Exception {
        long[] golden = goldenPrompt();
        List<long[]> prompts = new ArrayList<>();
        for (int n = 0; n < 5; n++) {
            prompts.add(Arrays.copyOfRange(golden, n, golden.length));
        }
        GenerationConfig config = budget(6);
        try (LocalModel model = LocalModel.load(GPT2_TINY)) {
            List<long[]> expected = new ArrayList<>();
            try (Predictor<GenerationRequest, GenerationResult> predictor = PredictorBadRequestTest.newPredictor(model)) {
                for (long[] prompt : prompts) {
                    expected.add(predictor.predict(GenerationRequest.ofIds(prompt, config)).tokenIds());
                }
            }
            int arraysBefore = model.model().getNDManager().getManagedArrays().size();
            int threads = 16;
            int requests = 50;
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            try {
                List<Future<Integer>> done = new ArrayList<>();
                for (int t = 0; t < threads; t++) {
                    int thread = t;
                    done.add(
                            pool.submit(
                                    () -> {
                                        try (Predictor<GenerationRequest, GenerationResult> predictor = PredictorBadRequestTest.newPredictor(model)) {
                                            for (int r = 0; r < requests; r++) {
                                                int which = (thread + r) % prompts.size();
                                                long[] ids = predictor.predict(GenerationRequest.ofIds(prompts.get(which), config)).tokenIds();
                                                assertArrayEquals(expected.get(which), ids, "thread " + thread + " request " + r);
                                            }
                                        }
                                        return requests;
                                    }));
                }
                int total = 0;
                for (Future<Integer> f : done) {
                    total += f.get();
                }
                assertEquals(threads * requests, total);
            } finally {
                pool.shutdownNow();
            }
            assertEquals(arraysBefore, model.model().getNDManager().getManagedArrays().size(), "no arrays left behind by the threads");
        }
    }

    @Test
    void closingAZooModelFreesItsArraysAndLaterUseIsAClearError() throws Exception {
        Criteria<GenerationRequest, GenerationResult> criteria =
                Criteria.builder()
                        .setTypes(GenerationRequest.class, GenerationResult.class)
                        .optGroupId(LlmModelZoo.GROUP_ID)
                        .optArtifactId(LlmModelZoo.ANY_MODEL)
                        .optArgument("model", GPT2_TINY.toString())
                        .build();
        ZooModel<GenerationRequest, GenerationResult> model = criteria.loadModel();
        NDManager manager = model.getNDManager();
        Predictor<GenerationRequest, GenerationResult> predictor = model.newPredictor();
        GenerationRequest request = GenerationRequest.ofIds(goldenPrompt(), budget(3));
        predictor.predict(request);
        assertTrue(manager.getManagedArrays().size() > 0, "the open model holds its weights");
        model.close();
        assertFalse(manager.isOpen(), "closing the model closes its manager and frees its arrays");
        assertEquals(0, manager.getManagedArrays().size());
        Exception e = assertThrows(Exception.class, () -> predictor.predict(request));
        Throwable cause = rootCause(e);
        assertInstanceOf(IllegalStateException.class, cause, "use after close: " + e);
        assertTrue(cause.getMessage().contains("closed"), cause.getMessage());
        predictor.close();
    }

    @Test
    void closingALocalModelFreesItsArraysAndLaterUseIsAClearError() throws Exception {
        LocalModel model = LocalModel.load(GPT2_TINY);
        NDManager manager = model.model().getNDManager();
        var generator = model.generator();
        assertTrue(manager.getManagedArrays().size() > 0, "the open model holds its weights");
        model.close();
        model.close();
        assertTrue(model.isClosed());
        assertFalse(manager.isOpen(), "closing the model closes its manager and frees its arrays");
        assertEquals(0, manager.getManagedArrays().size());
        IllegalStateException e = assertThrows(IllegalStateException.class, model::generator);
        assertTrue(e.getMessage().contains(GPT2_TINY.toString()) && e.getMessage().contains("is closed"), e.getMessage());
        assertThrows(IllegalStateException.class, model::model);
        IllegalStateException stale = assertThrows(IllegalStateException.class, () -> generator.generateGreedy(goldenPrompt(), budget(3)));
        assertTrue(stale.getMessage().contains("closed"), stale.getMessage());
    }

    private static long[] goldenPrompt() throws IOException {
        JsonObject json = JsonParser.parseString(Files.readString(GPT2_TINY.resolve("golden.json"), StandardCharsets.UTF_8)).getAsJsonObject();
        return PredictorBadRequestTest.ids(json.getAsJsonArray("prompt_ids"));
    }

    private static GenerationConfig budget(int maxNewTokens) {
        return GenerationConfig.builder().maxNewTokens(maxNewTokens).eosTokenIds(List.of()).build();
    }

    private static Throwable rootCause(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    /** The resident set size after a full GC has returned the free Java heap to the system. */
    private static long settledRssBytes() throws IOException, InterruptedException {
        System.gc();
        Thread.sleep(300);
        return rssBytes();
    }

    /** The process's resident set size, from {@code /proc/self/status}. */
    private static long rssBytes() throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IOException("no VmRSS in /proc/self/status");
    }
}
