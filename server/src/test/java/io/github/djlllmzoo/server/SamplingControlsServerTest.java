package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.translators.Completion;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.LogitAdjustments;
import io.github.djlllmzoo.translators.TokenLogprob;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * OpenAI's {@code logit_bias}, {@code presence_penalty}, {@code frequency_penalty} and top
 * alternatives in log-probabilities through the HTTP API, each answer compared with a DJL
 * predictor's over the same random GPT-2 with the same settings.
 */
class SamplingControlsServerTest {

    private static final String PROMPT = "Once upon a time";

    @TempDir static Path dir;

    private static RunningServer running;
    private static LocalModel model;
    private static OpenAiServer server;
    private static Predictor<GenerationRequest, GenerationResult> predictor;
    private static GenerationConfig defaults;

    @BeforeAll
    static void start() throws Exception {
        running = RunningServer.start(RunningServer.gpt2(dir, 256));
        model = running.model;
        server = running.server;
        predictor = OpenAiServerTest.generationPredictor(model);
        defaults = GenerationConfig.forCheckpoint(dir, model.config()).build();
    }

    @AfterAll
    static void stop() {
        if (predictor != null) {
            predictor.close();
        }
        if (running != null) {
            running.close();
        }
    }

    private static GenerationConfig.Builder greedy(int maxTokens) {
        return defaults.toBuilder().greedy().maxNewTokens(maxTokens);
    }

    private static long[] expectedIds(GenerationConfig config) throws Exception {
        return predictor.predict(GenerationRequest.of(PROMPT, config)).tokenIds();
    }

    private static JsonObject completion(int maxTokens) {
        JsonObject body = new JsonObject();
        body.addProperty("prompt", PROMPT);
        body.addProperty("max_tokens", maxTokens);
        body.addProperty("temperature", 0);
        return body;
    }

    private static long[] ids(String text) {
        return model.tokenizer().encode(text);
    }

    private static String text(JsonObject answer) {
        return ServerCalls.firstChoice(answer).get("text").getAsString();
    }

    private static String decode(long[] ids) {
        return model.tokenizer().decode(ids);
    }

    @Test
    void logitBiasBansAndForcesTokensAsThePredictorDoesWithTheSameBias() throws Exception {
        long[] plain = expectedIds(greedy(6).build());
        int first = (int) plain[0];
        long[] banned =
                expectedIds(
                        greedy(6)
                                .logitAdjustments(
                                        new LogitAdjustments(Map.of(first, -100f), 0f, 0f))
                                .build());
        assertTrue(java.util.Arrays.stream(banned).noneMatch(id -> id == first));
        JsonObject body = completion(6);
        JsonObject bias = new JsonObject();
        bias.addProperty(String.valueOf(first), -100);
        body.add("logit_bias", bias);
        assertEquals(decode(banned), text(ServerCalls.ok(server, "/v1/completions", body)));

        int forced = (int) ids(" dragon")[0];
        bias = new JsonObject();
        bias.addProperty(String.valueOf(forced), 100);
        body.add("logit_bias", bias);
        long[] all = new long[6];
        java.util.Arrays.fill(all, forced);
        assertArrayEquals(
                all,
                expectedIds(
                        greedy(6)
                                .logitAdjustments(
                                        new LogitAdjustments(Map.of(forced, 100f), 0f, 0f))
                                .build()));
        assertEquals(decode(all), text(ServerCalls.ok(server, "/v1/completions", body)));
    }

    /** How often the most frequent token occurs. */
    private static long mostRepeated(long[] ids) {
        return java.util.Arrays.stream(ids)
                .boxed()
                .collect(java.util.stream.Collectors.groupingBy(id -> id, java.util.stream.Collectors.counting()))
                .values()
                .stream()
                .mapToLong(Long::longValue)
                .max()
                .orElse(0);
    }

    @Test
    void presenceAndFrequencyPenaltiesGiveThePredictorsAnswerAndMakeItLessRepetitive()
            throws Exception {
        LogitAdjustments penalties = new LogitAdjustments(Map.of(), 2f, 2f);
        long[] plain = expectedIds(greedy(12).build());
        long[] expected = expectedIds(greedy(12).logitAdjustments(penalties).build());
        // this random model's greedy answer repeats itself (the precondition of the comparison)
        assertTrue(mostRepeated(plain) > 2, java.util.Arrays.toString(plain));
        assertTrue(
                mostRepeated(expected) < mostRepeated(plain),
                java.util.Arrays.toString(plain) + " vs " + java.util.Arrays.toString(expected));
        JsonObject body = completion(12);
        body.addProperty("presence_penalty", 2);
        body.addProperty("frequency_penalty", 2);
        assertEquals(decode(expected), text(ServerCalls.ok(server, "/v1/completions", body)));
        // the chat route takes them too
        JsonObject chat = OpenAiServerTest.chat(4, "user", PROMPT);
        chat.addProperty("presence_penalty", -0.5);
        chat.addProperty("frequency_penalty", 0.5);
        ServerCalls.ok(server, "/v1/chat/completions", chat);
    }

    @Test
    void completionsLogprobsNGiveTheNMostLikelyTokensOfEachPosition() throws Exception {
        GenerationResult expected =
                predictor.predict(
                        GenerationRequest.of(
                                PROMPT, greedy(5).returnLogprobs(true).topLogprobs(3).build()));
        JsonObject body = completion(5);
        body.addProperty("logprobs", 3);
        JsonObject logprobs =
                ServerCalls.firstChoice(ServerCalls.ok(server, "/v1/completions", body))
                        .getAsJsonObject("logprobs");
        JsonArray top = logprobs.getAsJsonArray("top_logprobs");
        Completion want = expected.completions().get(0);
        assertEquals(want.tokenIds().length, top.size());
        for (int i = 0; i < top.size(); i++) {
            JsonObject alternatives = top.get(i).getAsJsonObject();
            assertTrue(alternatives.size() <= 3 && alternatives.size() >= 1);
            for (TokenLogprob t : want.topLogprobs().get(i)) {
                String token = decode(new long[] {t.tokenId()});
                assertEquals(t.logprob(), alternatives.get(token).getAsFloat(), 1e-4, token);
            }
            // greedy: the chosen token is the most likely one, with its own log-probability
            String chosen = logprobs.getAsJsonArray("tokens").get(i).getAsString();
            assertEquals(
                    logprobs.getAsJsonArray("token_logprobs").get(i).getAsFloat(),
                    alternatives.get(chosen).getAsFloat(),
                    0f);
        }
    }

    @Test
    void chatTopLogprobsListTheAlternativesOfEveryTokenMostLikelyFirst() throws Exception {
        JsonObject body = OpenAiServerTest.chat(5, "user", PROMPT);
        body.addProperty("logprobs", true);
        body.addProperty("top_logprobs", 20);
        JsonArray content =
                ServerCalls.firstChoice(ServerCalls.ok(server, "/v1/chat/completions", body))
                        .getAsJsonObject("logprobs")
                        .getAsJsonArray("content");
        assertFalse(content.isEmpty());
        for (JsonElement e : content) {
            JsonObject token = e.getAsJsonObject();
            JsonArray top = token.getAsJsonArray("top_logprobs");
            assertEquals(20, top.size());
            JsonObject best = top.get(0).getAsJsonObject();
            assertEquals(token.get("token"), best.get("token"));
            assertEquals(token.get("logprob"), best.get("logprob"));
            assertTrue(best.has("bytes"));
            for (int i = 1; i < top.size(); i++) {
                assertTrue(
                        top.get(i - 1).getAsJsonObject().get("logprob").getAsFloat()
                                >= top.get(i).getAsJsonObject().get("logprob").getAsFloat());
            }
        }
    }

    @Test
    void outOfRangeValuesGet400NamingTheField() throws Exception {
        String[][] cases = {
            {"/v1/completions", "{\"prompt\": \"x\", \"logprobs\": 6}", "logprobs"},
            {"/v1/completions", "{\"prompt\": \"x\", \"logit_bias\": {\"abc\": 1}}", "logit_bias"},
            {"/v1/completions", "{\"prompt\": \"x\", \"logit_bias\": {\"60000\": 1}}", "logit_bias"},
            {"/v1/completions", "{\"prompt\": \"x\", \"logit_bias\": {\"5\": 101}}", "logit_bias"},
            {"/v1/completions", "{\"prompt\": \"x\", \"logit_bias\": [1]}", "logit_bias"},
            {"/v1/completions", "{\"prompt\": \"x\", \"presence_penalty\": 2.5}", "presence_penalty"},
            {"/v1/completions", "{\"prompt\": \"x\", \"frequency_penalty\": -3}", "frequency_penalty"},
            {
                "/v1/chat/completions",
                "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"logprobs\": true,"
                        + " \"top_logprobs\": 21}",
                "top_logprobs"
            },
            {
                "/v1/chat/completions",
                "{\"messages\": [{\"role\": \"user\", \"content\": \"x\"}], \"top_logprobs\": 2}",
                "top_logprobs"
            },
        };
        for (String[] c : cases) {
            JsonObject error =
                    ServerCalls.error(
                            server, c[0], JsonParser.parseString(c[1]).getAsJsonObject(), 400);
            assertEquals(c[2], error.get("param").getAsString(), c[1]);
            assertNotEquals("", error.get("message").getAsString());
        }
    }
}
