package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import ai.djl.translate.TranslateException;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.translators.FinishReason;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.GenerationTranslatorFactory;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Bad requests through one {@code Predictor<GenerationRequest, GenerationResult>} on the golden
 * GPT-2 checkpoint: each is rejected with a message naming the fault, and the same predictor then
 * still reproduces the golden greedy continuation.
 */
class PredictorBadRequestTest {

    private static final Path GPT2_TINY = Paths.get(System.getProperty("llmzoo.testdata"), "golden", "gpt2-tiny");

    private static LocalModel model;
    private static Predictor<GenerationRequest, GenerationResult> predictor;
    private static long[] prompt;
    private static long[] golden;
    private static int window;
    private static int vocab;

    @BeforeAll
    static void load() throws Exception {
        JsonObject json = JsonParser.parseString(Files.readString(GPT2_TINY.resolve("golden.json"), StandardCharsets.UTF_8)).getAsJsonObject();
        prompt = ids(json.getAsJsonArray("prompt_ids"));
        golden = ids(json.getAsJsonArray("greedy_ids"));
        model = LocalModel.load(GPT2_TINY);
        predictor = newPredictor(model);
        window = model.config().maxPositions();
        vocab = model.config().vocabSize();
    }

    @AfterAll
    static void close() {
        predictor.close();
        model.close();
    }

    /** After every test, bad request or not, the predictor still gives the golden continuation. */
    @AfterEach
    void predictorStillGivesTheGoldenContinuation() throws TranslateException {
        assertArrayEquals(golden, predictor.predict(GenerationRequest.ofIds(prompt, budget(golden.length))).tokenIds());
    }

    static Stream<Arguments> rejectedRequests() {
        long[] tooLong = new long[window() + 2];
        return Stream.of(
                Arguments.of("prompt longer than the context window", (Supplier<GenerationRequest>) () -> GenerationRequest.ofIds(tooLong, budget(4)), List.of(String.valueOf(tooLong.length), String.valueOf(window()))),
                Arguments.of("token id equal to the vocabulary size", (Supplier<GenerationRequest>) () -> GenerationRequest.ofIds(new long[] {3, vocab(), 5}, budget(4)), List.of("token id " + vocab(), String.valueOf(vocab()))),
                Arguments.of("negative token id", (Supplier<GenerationRequest>) () -> GenerationRequest.ofIds(new long[] {3, -1}, budget(4)), List.of("token id -1")),
                Arguments.of("text prompt to a model without a tokenizer", (Supplier<GenerationRequest>) () -> GenerationRequest.of("hello", budget(4)), List.of("tokenizer")),
                Arguments.of("stop strings on a model without a tokenizer", (Supplier<GenerationRequest>) () -> GenerationRequest.ofIds(prompt, budget(4).toBuilder().stopStrings(List.of("x")).build()), List.of("stop strings", "tokenizer")));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("rejectedRequests")
    void aBadRequestIsRejectedWithAMessageNamingTheFault(String name, Supplier<GenerationRequest> request, List<String> named) {
        String message = rejected(request.get());
        for (String part : named) {
            assertTrue(message.contains(part), name + ": the message should contain '" + part + "': " + message);
        }
    }

    @Test
    void aBatchWithOneBadRequestIsRejectedWhole() {
        String message = rejected(List.of(GenerationRequest.ofIds(prompt, budget(3)), GenerationRequest.ofIds(new long[] {vocab() + 7}, budget(3))));
        assertTrue(message.contains("token id " + (vocab() + 7)), message);
    }

    static Stream<Arguments> invalidConfigs() {
        return Stream.of(
                Arguments.of("maxNewTokens", (Supplier<GenerationConfig>) () -> budget(0)),
                Arguments.of("temperature", (Supplier<GenerationConfig>) () -> budget(4).toBuilder().doSample(true).temperature(-0.5f).build()),
                Arguments.of("temperature", (Supplier<GenerationConfig>) () -> budget(4).toBuilder().temperature(Float.NaN).build()),
                Arguments.of("topK", (Supplier<GenerationConfig>) () -> budget(4).toBuilder().topK(-1).build()),
                Arguments.of("topP", (Supplier<GenerationConfig>) () -> budget(4).toBuilder().topP(0f).build()),
                Arguments.of("topP", (Supplier<GenerationConfig>) () -> budget(4).toBuilder().topP(1.5f).build()),
                Arguments.of("topP", (Supplier<GenerationConfig>) () -> budget(4).toBuilder().topP(Float.NaN).build()),
                Arguments.of("minP", (Supplier<GenerationConfig>) () -> budget(4).toBuilder().minP(2f).build()),
                Arguments.of("repetitionPenalty", (Supplier<GenerationConfig>) () -> budget(4).toBuilder().repetitionPenalty(0f).build()),
                Arguments.of("numReturnSequences", (Supplier<GenerationConfig>) () -> budget(4).toBuilder().numReturnSequences(0).build()),
                Arguments.of("stopStrings", (Supplier<GenerationConfig>) () -> budget(4).toBuilder().stopStrings(List.of("ok", "")).build()));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("invalidConfigs")
    void invalidGenerationSettingsAreRejectedNamingTheField(String field, Supplier<GenerationConfig> config) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, config::get);
        assertTrue(e.getMessage().startsWith(field), e.getMessage());
    }

    @Test
    void invalidTranslatorArgumentsAreRejectedNamingTheField() {
        TranslateException e =
                assertThrows(
                        TranslateException.class,
                        () -> new GenerationTranslatorFactory().newInstance(GenerationRequest.class, GenerationResult.class, model.model(), Map.of("top_p", "1.5")));
        assertTrue(e.getMessage().contains("top_p"), e.getMessage());
    }

    @Test
    void anEmptyPromptStartsFromTheBosToken() throws TranslateException {
        int bos = model.bosTokenId();
        GenerationResult empty = predictor.predict(GenerationRequest.ofIds(new long[0], budget(6)));
        GenerationResult fromBos = predictor.predict(GenerationRequest.ofIds(new long[] {bos}, budget(6)));
        assertArrayEquals(fromBos.tokenIds(), empty.tokenIds());
        assertEquals(1, empty.promptTokens());
    }

    @Test
    void anEmptyPromptIsRejectedWhenTheModelHasNoBosToken(@TempDir Path tmp) throws Exception {
        Path dir = tmp.resolve("no-bos");
        Files.createDirectories(dir);
        Files.copy(GPT2_TINY.resolve("model.safetensors"), dir.resolve("model.safetensors"));
        JsonObject config = JsonParser.parseString(Files.readString(GPT2_TINY.resolve("config.json"))).getAsJsonObject();
        config.remove("bos_token_id");
        Files.writeString(dir.resolve("config.json"), config.toString());
        try (LocalModel noBos = LocalModel.load(dir);
                Predictor<GenerationRequest, GenerationResult> p = newPredictor(noBos)) {
            TranslateException e = assertThrows(TranslateException.class, () -> p.predict(GenerationRequest.ofIds(new long[0], budget(4))));
            IllegalArgumentException cause = assertInstanceOf(IllegalArgumentException.class, rootCause(e));
            assertTrue(cause.getMessage().contains("no tokens") && cause.getMessage().contains("bos_token_id"), cause.getMessage());
            assertArrayEquals(golden, p.predict(GenerationRequest.ofIds(prompt, budget(golden.length))).tokenIds());
        }
    }

    @Test
    void aTooLongPromptIsTruncatedToItsLastTokensOnlyWhenAsked() throws TranslateException {
        long[] tooLong = new long[window + 10];
        for (int i = 0; i < tooLong.length; i++) {
            tooLong[i] = (i * 37L) % vocab;
        }
        int budget = 5;
        GenerationConfig truncating = budget(budget).toBuilder().truncatePrompt(true).build();
        GenerationResult truncated = predictor.predict(GenerationRequest.ofIds(tooLong, truncating));
        long[] kept = Arrays.copyOfRange(tooLong, tooLong.length - (window - budget), tooLong.length);
        GenerationResult explicit = predictor.predict(GenerationRequest.ofIds(kept, budget(budget)));
        assertEquals(window - budget, truncated.promptTokens());
        assertArrayEquals(explicit.tokenIds(), truncated.tokenIds());
        assertEquals(budget, truncated.tokenIds().length);
        GenerationResult untouched = predictor.predict(GenerationRequest.ofIds(prompt, budget(golden.length).toBuilder().truncatePrompt(true).build()));
        assertArrayEquals(golden, untouched.tokenIds(), "a prompt that fits is not truncated");
    }

    @Test
    void aBudgetBeyondTheContextIsClampedAndEndsWithLength() throws TranslateException {
        GenerationResult result = predictor.predict(GenerationRequest.ofIds(prompt, budget(10 * window)));
        assertEquals(window - prompt.length, result.tokenIds().length);
        assertEquals(FinishReason.LENGTH, result.completions().get(0).finishReason());
        assertArrayEquals(golden, Arrays.copyOf(result.tokenIds(), golden.length), "the clamped run starts with the golden continuation");
    }

    @Test
    void generationReachingTheContextLimitEndsWithLength() throws TranslateException {
        long[] nearlyFull = new long[window - 2];
        for (int i = 0; i < nearlyFull.length; i++) {
            nearlyFull[i] = (i * 11L + 3) % vocab;
        }
        GenerationResult result = predictor.predict(GenerationRequest.ofIds(nearlyFull, budget(10)));
        assertEquals(2, result.tokenIds().length);
        assertEquals(FinishReason.LENGTH, result.completions().get(0).finishReason());
        long[] full = new long[window];
        System.arraycopy(nearlyFull, 0, full, 0, nearlyFull.length);
        GenerationResult none = predictor.predict(GenerationRequest.ofIds(full, budget(10)));
        assertEquals(0, none.tokenIds().length);
        assertEquals(FinishReason.LENGTH, none.completions().get(0).finishReason());
    }

    private static String rejected(GenerationRequest request) {
        return rejected(List.of(request));
    }

    private static String rejected(List<GenerationRequest> requests) {
        TranslateException e = assertThrows(TranslateException.class, () -> predictor.batchPredict(requests));
        Throwable cause = rootCause(e);
        assertInstanceOf(IllegalArgumentException.class, cause, "a bad request is an IllegalArgumentException: " + cause);
        return cause.getMessage();
    }

    private static Throwable rootCause(Throwable e) {
        Throwable t = e;
        while (t.getCause() != null && t.getCause() != t) {
            t = t.getCause();
        }
        return t;
    }

    private static GenerationConfig budget(int maxNewTokens) {
        return GenerationConfig.builder().maxNewTokens(maxNewTokens).eosTokenIds(List.of()).build();
    }

    private static int window() {
        return window;
    }

    private static int vocab() {
        return vocab;
    }

    static Predictor<GenerationRequest, GenerationResult> newPredictor(LocalModel local) throws TranslateException {
        return local.model().newPredictor(new GenerationTranslatorFactory().newInstance(GenerationRequest.class, GenerationResult.class, local.model(), Map.of()));
    }

    static long[] ids(JsonArray array) {
        long[] out = new long[array.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = array.get(i).getAsLong();
        }
        return out;
    }
}
