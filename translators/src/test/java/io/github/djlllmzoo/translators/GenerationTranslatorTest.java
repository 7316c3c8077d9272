package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.nn.Blocks;
import ai.djl.translate.TranslateException;
import ai.djl.translate.Translator;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The DJL translators on a small random GPT-2 with GPT-2's vocabulary and its real tokenizer
 * (skipped without the tokenizer fixture).
 */
class GenerationTranslatorTest {

    private static final String[] PROMPTS = {
        "Once upon a time", "Hello world", "The quick brown fox jumps over the lazy dog", "Llamas 🦙"
    };

    private static final GenerationTranslatorFactory FACTORY = new GenerationTranslatorFactory();

    private static Model model;
    private static GenerationTranslator translator;
    private static TextTokenizer tokenizer;
    private static Path tokenizerDir;

    @BeforeAll
    static void load() throws Exception {
        tokenizerDir = TinyModels.gpt2TokenizerDir();
        model = TinyModels.gpt2(TinyModels.GPT2_VOCAB, 128, 3);
        model.setProperty(GenerationTranslatorFactory.MODEL_DIR, tokenizerDir.toString());
        tokenizer = TextTokenizer.load(tokenizerDir);
        translator =
                (GenerationTranslator)
                        FACTORY.newInstance(GenerationRequest.class, GenerationResult.class, model, Map.of());
    }

    @AfterAll
    static void close() {
        if (tokenizer != null) {
            tokenizer.close();
        }
        if (model != null) {
            model.close();
        }
    }

    /** A predictor with a translator of its own, as a service thread would make one. */
    private static Predictor<GenerationRequest, GenerationResult> ownPredictor() throws TranslateException {
        return model.newPredictor(
                FACTORY.newInstance(GenerationRequest.class, GenerationResult.class, model, Map.of()));
    }

    private static GenerationConfig.Builder config(int maxNewTokens) {
        return GenerationConfig.builder().maxNewTokens(maxNewTokens).eosTokenIds(List.of(TinyModels.GPT2_EOS));
    }

    private static GenerationResult predict(GenerationRequest request) throws TranslateException {
        try (Predictor<GenerationRequest, GenerationResult> predictor = model.newPredictor(translator)) {
            return predictor.predict(request);
        }
    }

    /** Requests with prompts of different lengths, greedy and seeded sampling. */
    private static List<GenerationRequest> mixedRequests() {
        List<GenerationRequest> requests = new ArrayList<>();
        for (int i = 0; i < PROMPTS.length; i++) {
            GenerationConfig.Builder config = config(10 + 2 * i);
            if (i % 2 == 1) {
                config.doSample(true).temperature(0.8f).topP(0.95f).seed(1000L + i);
            }
            requests.add(GenerationRequest.of(PROMPTS[i], config.build()));
        }
        return requests;
    }

    private static void assertSameResult(GenerationResult expected, GenerationResult actual, String what) {
        assertEquals(expected.completions().size(), actual.completions().size(), what);
        for (int n = 0; n < expected.completions().size(); n++) {
            Completion e = expected.completions().get(n);
            Completion a = actual.completions().get(n);
            assertArrayEquals(e.tokenIds(), a.tokenIds(), what + " sequence " + n);
            assertEquals(e.text(), a.text(), what + " sequence " + n);
            assertEquals(e.finishReason(), a.finishReason(), what + " sequence " + n);
        }
    }

    @Test
    void stringPredictorReturnsTheGreedyContinuationOfThePrompt() throws Exception {
        Translator<String, String> translator =
                FACTORY.newInstance(String.class, String.class, model, Map.of("max_new_tokens", 12));
        String text;
        try (Predictor<String, String> predictor = model.newPredictor(translator)) {
            text = predictor.predict(PROMPTS[0]);
        }
        CausalLmBlock block = (CausalLmBlock) model.getBlock();
        long[] ids =
                new Generator(block, model.getNDManager())
                        .generateGreedy(tokenizer.encode(PROMPTS[0]), config(12).build())
                        .tokenIds();
        assertEquals(tokenizer.decode(ids), text);
        assertFalse(text.isEmpty());
    }

    @Test
    void batchPredictEqualsPredictingEachRequestAlone() throws Exception {
        List<GenerationRequest> requests = mixedRequests();
        List<GenerationResult> batched;
        try (Predictor<GenerationRequest, GenerationResult> predictor = model.newPredictor(translator)) {
            batched = predictor.batchPredict(requests);
        }
        for (int i = 0; i < requests.size(); i++) {
            assertSameResult(predict(requests.get(i)), batched.get(i), "request " + i);
        }
    }

    @Test
    void aStopStringEndsTheTextBeforeIt() throws Exception {
        GenerationResult free = predict(GenerationRequest.of(PROMPTS[2], config(24).build()));
        String text = free.text();
        int at = text.length() / 2;
        while (at < text.length() - 2 && (text.substring(at, at + 2).contains("\uFFFD") || text.substring(at, at + 2).isBlank())) {
            at++;
        }
        String stop = text.substring(at, at + 2);
        GenerationResult stopped =
                predict(GenerationRequest.of(PROMPTS[2], config(24).stopStrings(List.of(stop)).build()));
        assertEquals(FinishReason.STOP, stopped.finishReason());
        assertEquals(text.substring(0, text.indexOf(stop)), stopped.text());
        assertFalse(stopped.text().contains(stop));
    }

    @Test
    void streamedPiecesConcatenateToTheResultAndStreamingChangesNothing() throws Exception {
        for (long seed = 0; seed < 2; seed++) {
            for (List<String> stops : List.of(List.<String>of(), List.of("e", ". "))) {
                GenerationConfig config =
                        config(16).doSample(true).seed(seed).numReturnSequences(2).stopStrings(stops).build();
                GenerationRequest request = GenerationRequest.of(PROMPTS[3], config);
                List<StringBuilder> text = List.of(new StringBuilder(), new StringBuilder());
                List<List<Long>> tokens = List.of(new ArrayList<>(), new ArrayList<>());
                FinishReason[] finished = new FinishReason[2];
                GenerationListener listener =
                        new GenerationListener() {
                            @Override
                            public void onText(int sequence, String piece) {
                                assertFalse(piece.isEmpty());
                                assertTrue(finished[sequence] == null, "no text after the end");
                                text.get(sequence).append(piece);
                            }

                            @Override
                            public void onToken(int sequence, long tokenId) {
                                tokens.get(sequence).add(tokenId);
                            }

                            @Override
                            public void onFinish(int sequence, FinishReason reason) {
                                assertTrue(finished[sequence] == null, "one end per sequence");
                                finished[sequence] = reason;
                            }
                        };
                GenerationResult streamed = predict(request.withListener(listener));
                assertSameResult(predict(request), streamed, "seed " + seed + " stops " + stops);
                for (int n = 0; n < 2; n++) {
                    Completion completion = streamed.completions().get(n);
                    assertEquals(completion.text(), text.get(n).toString(), "seed " + seed + " sequence " + n);
                    assertEquals(completion.finishReason(), finished[n]);
                    assertArrayEquals(
                            completion.tokenIds(), tokens.get(n).stream().mapToLong(Long::longValue).toArray());
                }
            }
        }
    }

    @Test
    void eightThreadsWithTheirOwnPredictorsGetTheSingleThreadedResults() throws Exception {
        List<GenerationRequest> requests = mixedRequests();
        List<GenerationResult> expected = new ArrayList<>();
        for (GenerationRequest request : requests) {
            expected.add(predict(request));
        }
        int threads = 8;
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<List<GenerationResult>>> futures = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                int offset = t;
                futures.add(
                        pool.submit(
                                () -> {
                                    GenerationResult[] out = new GenerationResult[requests.size()];
                                    try (Predictor<GenerationRequest, GenerationResult> predictor = ownPredictor()) {
                                        for (int i = 0; i < requests.size(); i++) {
                                            int index = (i + offset) % requests.size();
                                            out[index] = predictor.predict(requests.get(index));
                                        }
                                    }
                                    return Arrays.asList(out);
                                }));
            }
            for (int t = 0; t < threads; t++) {
                List<GenerationResult> results = futures.get(t).get();
                for (int i = 0; i < requests.size(); i++) {
                    assertSameResult(expected.get(i), results.get(i), "thread " + t + " request " + i);
                }
            }
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void generationConfigJsonAndArgumentsSetTheDefaults(@TempDir Path dir) throws Exception {
        Files.copy(tokenizerDir.resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
        Files.writeString(
                dir.resolve("generation_config.json"),
                "{\"max_new_tokens\": 5, \"do_sample\": true, \"temperature\": 0.7, \"eos_token_id\": 50256}",
                StandardCharsets.UTF_8);
        Map<String, Object> arguments = new HashMap<>();
        arguments.put(GenerationTranslatorFactory.MODEL_DIR, dir.toString());
        GenerationTranslator fromFile =
                (GenerationTranslator) FACTORY.newInstance(GenerationRequest.class, GenerationResult.class, model, arguments);
        GenerationConfig defaults = fromFile.defaults();
        assertEquals(5, defaults.maxNewTokens());
        assertTrue(defaults.doSample());
        assertEquals(0.7f, defaults.temperature());
        try (Predictor<GenerationRequest, GenerationResult> predictor = model.newPredictor(fromFile)) {
            GenerationResult result = predictor.predict(GenerationRequest.of(PROMPTS[0]));
            assertTrue(result.tokenIds().length <= 5);
        }
        arguments.put("max_new_tokens", "3");
        arguments.put("do_sample", "false");
        arguments.put("seed", "12345678901234");
        arguments.put("stop_strings", "a,b");
        GenerationConfig overridden =
                ((GenerationTranslator) FACTORY.newInstance(GenerationRequest.class, GenerationResult.class, model, arguments))
                        .defaults();
        assertEquals(3, overridden.maxNewTokens());
        assertFalse(overridden.doSample());
        assertEquals(12345678901234L, overridden.seed());
        assertEquals(List.of("a", "b"), overridden.stopStrings());
    }

    @Test
    void translatorsOfOneModelShareOneTokenizer() throws Exception {
        GenerationTranslator other =
                (GenerationTranslator) FACTORY.newInstance(GenerationRequest.class, GenerationResult.class, model, Map.of());
        assertTrue(translator.tokenizer() == other.tokenizer());
    }

    @Test
    void theFactoryRejectsWhatItCannotServe(@TempDir Path empty) throws Exception {
        assertTrue(FACTORY.isSupported(String.class, String.class));
        assertFalse(FACTORY.isSupported(String.class, Integer.class));
        assertThrows(IllegalArgumentException.class, () -> FACTORY.newInstance(String.class, Integer.class, model, Map.of()));
        TranslateException noTokenizer =
                assertThrows(
                        TranslateException.class,
                        () -> FACTORY.newInstance(
                                String.class, String.class, model, Map.of(GenerationTranslatorFactory.MODEL_DIR, empty.toString())));
        assertTrue(noTokenizer.getMessage().contains("tokenizer"), noTokenizer.getMessage());
        try (Model other = Model.newInstance("identity", Device.cpu(), "PyTorch")) {
            other.setBlock(Blocks.identityBlock());
            IllegalArgumentException notCausalLm =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> FACTORY.newInstance(String.class, String.class, other, Map.of()));
            assertTrue(notCausalLm.getMessage().contains("CausalLmBlock"));
        }
    }
}
