package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import ai.djl.inference.Predictor;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.translators.Completion;
import io.github.djlllmzoo.translators.FinishReason;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.BindException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.function.BooleanSupplier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server on a loopback port, driven by {@link HttpClient}, on a random GPT-2 (GPT-2's real
 * tokenizer, 32 wide, one layer) whose expected answers come from a DJL {@link Predictor} over the
 * same model, run alone.
 */
class OpenAiServerTest {

    private static final int WINDOW = 4096;

    @TempDir static Path dir;

    private static LocalModel model;
    private static OpenAiServer server;
    private static Predictor<GenerationRequest, GenerationResult> predictor;
    private static GenerationConfig defaults;
    private static final HttpClient CLIENT =
            HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(10))
                    .build();

    @BeforeAll
    static void start() throws Exception {
        RunningServer.gpt2(dir, WINDOW, 3);
        model = LocalModel.load(dir);
        server =
                OpenAiServer.start(
                        model,
                        ServerOptions.DEFAULTS
                                .withAddress("127.0.0.1", 0)
                                .withScheduling(40, 8, Duration.ofMillis(5)));
        predictor = generationPredictor(model);
        defaults = GenerationConfig.forCheckpoint(dir, model.config()).build();
    }

    /** A DJL predictor of the model's generation translator: the server's expected answers. */
    static Predictor<GenerationRequest, GenerationResult> generationPredictor(LocalModel model) {
        return model.newGenerationPredictor();
    }

    @AfterAll
    static void stop() {
        if (predictor != null) {
            predictor.close();
        }
        if (server != null) {
            server.close();
        }
        if (model != null) {
            model.close();
        }
    }

    // ---- expectations from the Predictor, alone ----

    private static GenerationResult expected(String prompt, GenerationConfig config)
            throws Exception {
        return predictor.predict(GenerationRequest.of(prompt, config));
    }

    private static GenerationConfig greedy(int maxTokens) {
        return defaults.toBuilder().greedy().maxNewTokens(maxTokens).build();
    }

    private static String finishReason(FinishReason reason) {
        return reason == FinishReason.LENGTH ? "length" : "stop";
    }

    // ---- HTTP ----

    private static HttpRequest.Builder request(OpenAiServer target, String path) {
        return HttpRequest.newBuilder(target.uri().resolve(path)).timeout(Duration.ofSeconds(60));
    }

    private static HttpRequest postRequest(OpenAiServer target, String path, String body) {
        return request(target, path)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
    }

    private static HttpResponse<String> post(OpenAiServer target, String path, String body)
            throws Exception {
        return CLIENT.send(postRequest(target, path, body), HttpResponse.BodyHandlers.ofString());
    }

    private static JsonObject postOk(String path, JsonObject body) throws Exception {
        HttpResponse<String> response = post(server, path, body.toString());
        assertEquals(200, response.statusCode(), response.body());
        return JsonParser.parseString(response.body()).getAsJsonObject();
    }

    private static HttpResponse<String> get(OpenAiServer target, String path) throws Exception {
        return CLIENT.send(
                request(target, path).GET().build(), HttpResponse.BodyHandlers.ofString());
    }

    /** The {@code data:} payloads of a server-sent event stream, up to {@code [DONE]}. */
    private static List<JsonObject> events(String path, JsonObject body) throws Exception {
        HttpResponse<InputStream> response =
                CLIENT.send(
                        postRequest(server, path, body.toString()),
                        HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, response.statusCode());
        assertEquals(
                "text/event-stream",
                response.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        List<JsonObject> out = new ArrayList<>();
        try (BufferedReader reader =
                new BufferedReader(
                        new InputStreamReader(response.body(), StandardCharsets.UTF_8))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                if (line.isEmpty()) {
                    continue;
                }
                assertTrue(line.startsWith("data: "), line);
                String data = line.substring("data: ".length());
                if (data.equals("[DONE]")) {
                    for (String rest = reader.readLine(); rest != null; rest = reader.readLine()) {
                        assertEquals("", rest, "nothing follows data: [DONE]");
                    }
                    return out;
                }
                out.add(JsonParser.parseString(data).getAsJsonObject());
            }
        }
        fail("the stream ended without data: [DONE]");
        return out;
    }

    private static JsonObject completion(String prompt, int maxTokens) {
        JsonObject body = new JsonObject();
        body.addProperty("prompt", prompt);
        body.addProperty("max_tokens", maxTokens);
        body.addProperty("temperature", 0);
        return body;
    }

    /** A chat request body: greedy, {@code maxTokens} at most, the messages as role, content pairs. */
    static JsonObject chat(int maxTokens, String... roleAndContent) {
        JsonArray messages = new JsonArray();
        for (int i = 0; i < roleAndContent.length; i += 2) {
            JsonObject message = new JsonObject();
            message.addProperty("role", roleAndContent[i]);
            message.addProperty("content", roleAndContent[i + 1]);
            messages.add(message);
        }
        JsonObject body = new JsonObject();
        body.add("messages", messages);
        body.addProperty("max_tokens", maxTokens);
        body.addProperty("temperature", 0);
        return body;
    }

    private static JsonObject choice(JsonObject answer, int index) {
        return answer.getAsJsonArray("choices").get(index).getAsJsonObject();
    }

    private static void await(BooleanSupplier condition, String what) throws InterruptedException {
        long deadline = System.nanoTime() + Duration.ofSeconds(20).toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                fail("timed out waiting until " + what);
            }
            Thread.sleep(10);
        }
    }

    // ---- tests ----

    @Test
    void greedyCompletionsEqualThePredictorsInOpenAiShape() throws Exception {
        for (String prompt : List.of("Hello, my name is", "The quick brown fox", "1, 2, 3,")) {
            GenerationResult expected = expected(prompt, greedy(12));
            JsonObject answer = postOk("/v1/completions", completion(prompt, 12));
            assertTrue(answer.get("id").getAsString().startsWith("cmpl-"));
            assertEquals("text_completion", answer.get("object").getAsString());
            assertEquals(server.modelId(), answer.get("model").getAsString());
            assertTrue(answer.get("created").getAsLong() > 0);
            JsonObject choice = choice(answer, 0);
            assertEquals(0, choice.get("index").getAsInt());
            assertEquals(expected.text(), choice.get("text").getAsString(), prompt);
            assertEquals(
                    finishReason(expected.finishReason()),
                    choice.get("finish_reason").getAsString());
            JsonObject usage = answer.getAsJsonObject("usage");
            assertEquals(expected.promptTokens(), usage.get("prompt_tokens").getAsInt());
            assertEquals(expected.tokenIds().length, usage.get("completion_tokens").getAsInt());
            assertEquals(
                    expected.promptTokens() + expected.tokenIds().length,
                    usage.get("total_tokens").getAsInt());
        }
        long[] ids = model.tokenizer().encode("Token ids work too");
        JsonObject byIds = completion("", 6);
        JsonArray array = new JsonArray();
        for (long id : ids) {
            array.add(id);
        }
        byIds.add("prompt", array);
        assertEquals(
                expected("Token ids work too", greedy(6)).text(),
                choice(postOk("/v1/completions", byIds), 0).get("text").getAsString());
    }

    @Test
    void chatWithoutATemplateUsesTheRoleLinesFallbackAndEqualsThePredictor() throws Exception {
        GenerationResult expected =
                expected("system: Be brief.\nuser: Hello there\nassistant:", greedy(10));
        JsonObject answer =
                postOk(
                        "/v1/chat/completions",
                        chat(10, "system", "Be brief.", "user", "Hello there"));
        assertTrue(answer.get("id").getAsString().startsWith("chatcmpl-"));
        assertEquals("chat.completion", answer.get("object").getAsString());
        JsonObject message = choice(answer, 0).getAsJsonObject("message");
        assertEquals("assistant", message.get("role").getAsString());
        assertEquals(expected.text(), message.get("content").getAsString());
        assertEquals(
                expected.promptTokens(),
                answer.getAsJsonObject("usage").get("prompt_tokens").getAsInt());
    }

    @Test
    void streamedChunksConcatenateToTheWholeAnswer() throws Exception {
        JsonObject body = completion("Once upon a time", 16);
        JsonObject whole = postOk("/v1/completions", body);
        body.addProperty("stream", true);
        JsonObject options = new JsonObject();
        options.addProperty("include_usage", true);
        body.add("stream_options", options);
        List<JsonObject> chunks = events("/v1/completions", body);
        StringBuilder text = new StringBuilder();
        String finish = null;
        for (JsonObject chunk : chunks.subList(0, chunks.size() - 1)) {
            assertEquals("text_completion", chunk.get("object").getAsString());
            assertEquals(chunks.get(0).get("id"), chunk.get("id"));
            JsonObject choice = choice(chunk, 0);
            text.append(choice.get("text").getAsString());
            if (!choice.get("finish_reason").isJsonNull()) {
                finish = choice.get("finish_reason").getAsString();
            }
        }
        assertTrue(chunks.size() > 3, "one chunk per piece of text");
        assertEquals(choice(whole, 0).get("text").getAsString(), text.toString());
        assertEquals(choice(whole, 0).get("finish_reason").getAsString(), finish);
        JsonObject last = chunks.get(chunks.size() - 1);
        assertEquals(0, last.getAsJsonArray("choices").size());
        assertEquals(whole.get("usage"), last.get("usage"));

        JsonObject chatBody = chat(12, "user", "Tell me a story");
        String answer =
                choice(postOk("/v1/chat/completions", chatBody), 0)
                        .getAsJsonObject("message")
                        .get("content")
                        .getAsString();
        chatBody.addProperty("stream", true);
        List<JsonObject> chatChunks = events("/v1/chat/completions", chatBody);
        assertEquals(
                "assistant",
                choice(chatChunks.get(0), 0).getAsJsonObject("delta").get("role").getAsString());
        StringBuilder content = new StringBuilder();
        for (JsonObject chunk : chatChunks) {
            assertEquals("chat.completion.chunk", chunk.get("object").getAsString());
            JsonElement piece = choice(chunk, 0).getAsJsonObject("delta").get("content");
            if (piece != null) {
                content.append(piece.getAsString());
            }
        }
        assertEquals(answer, content.toString());
        assertEquals(
                "length",
                choice(chatChunks.get(chatChunks.size() - 1), 0)
                        .get("finish_reason")
                        .getAsString());
    }

    @Test
    void aStopStringEndsTheTextBeforeItWithFinishReasonStopStreamedOrNot() throws Exception {
        String prompt = "The meaning of life is";
        String free = expected(prompt, greedy(16)).text();
        String stop = free.substring(free.length() / 2, free.length() / 2 + 2);
        GenerationResult expected =
                expected(prompt, greedy(16).toBuilder().stopStrings(List.of(stop)).build());
        assertEquals(FinishReason.STOP, expected.finishReason());
        JsonObject body = completion(prompt, 16);
        body.addProperty("stop", stop);
        JsonObject choice = choice(postOk("/v1/completions", body), 0);
        assertEquals(expected.text(), choice.get("text").getAsString());
        assertFalse(choice.get("text").getAsString().contains(stop));
        assertEquals("stop", choice.get("finish_reason").getAsString());
        body.addProperty("stream", true);
        StringBuilder streamed = new StringBuilder();
        for (JsonObject chunk : events("/v1/completions", body)) {
            streamed.append(choice(chunk, 0).get("text").getAsString());
        }
        assertEquals(expected.text(), streamed.toString());
    }

    @Test
    void seededSamplingOfSeveralChoicesEqualsThePredictorAndLogprobsAreTheModels()
            throws Exception {
        String prompt = "In a village far away";
        GenerationConfig sampling =
                defaults.toBuilder()
                        .doSample(true)
                        .temperature(0.9f)
                        .topK(40)
                        .topP(1f)
                        .seed(11L)
                        .maxNewTokens(8)
                        .numReturnSequences(3)
                        .returnLogprobs(true)
                        .build();
        GenerationResult expected = expected(prompt, sampling);
        JsonObject body = completion(prompt, 8);
        body.addProperty("temperature", 0.9);
        body.addProperty("top_k", 40);
        body.addProperty("seed", 11);
        body.addProperty("n", 3);
        body.addProperty("logprobs", 0);
        JsonObject answer = postOk("/v1/completions", body);
        int tokens = 0;
        for (int n = 0; n < 3; n++) {
            Completion want = expected.completions().get(n);
            JsonObject choice = choice(answer, n);
            assertEquals(n, choice.get("index").getAsInt());
            assertEquals(want.text(), choice.get("text").getAsString());
            JsonArray logprobs =
                    choice.getAsJsonObject("logprobs").getAsJsonArray("token_logprobs");
            assertEquals(want.tokenIds().length, logprobs.size());
            for (int i = 0; i < logprobs.size(); i++) {
                assertEquals(want.logprobs()[i], logprobs.get(i).getAsFloat(), 1e-4, "token " + i);
            }
            tokens += want.tokenIds().length;
        }
        assertEquals(tokens, answer.getAsJsonObject("usage").get("completion_tokens").getAsInt());
        assertNotEquals(choice(answer, 0).get("text"), choice(answer, 1).get("text"));
    }

    @Test
    void chatLogprobsAreTheModelsLogProbabilitiesOfTheAnswersTokens() throws Exception {
        GenerationResult expected =
                expected(
                        "user: Count with me\nassistant:",
                        greedy(6).toBuilder().returnLogprobs(true).build());
        JsonObject body = chat(6, "user", "Count with me");
        body.addProperty("logprobs", true);
        JsonObject choice = choice(postOk("/v1/chat/completions", body), 0);
        assertEquals(
                expected.text(), choice.getAsJsonObject("message").get("content").getAsString());
        JsonArray content = choice.getAsJsonObject("logprobs").getAsJsonArray("content");
        float[] logprobs = expected.completions().get(0).logprobs();
        assertEquals(logprobs.length, content.size());
        for (int i = 0; i < logprobs.length; i++) {
            JsonObject token = content.get(i).getAsJsonObject();
            assertEquals(logprobs[i], token.get("logprob").getAsFloat(), 1e-4, "token " + i);
            assertEquals(
                    model.tokenizer().decode(new long[] {expected.tokenIds()[i]}),
                    token.get("token").getAsString());
        }
    }

    @Test
    void thirtyTwoConcurrentClientsEachGetTheAnswerTheyWouldGetAlone() throws Exception {
        int clients = 32;
        List<String> prompts = new ArrayList<>();
        List<GenerationResult> expected = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            String prompt = "Client " + i + " says" + " hello".repeat(i % 7);
            prompts.add(prompt);
            expected.add(expected(prompt, greedy(4 + i % 9)));
        }
        GenerationScheduler.Stats before = server.stats();
        List<CompletableFuture<HttpResponse<String>>> answers = new ArrayList<>();
        for (int i = 0; i < clients; i++) {
            JsonObject body = completion(prompts.get(i), 4 + i % 9);
            answers.add(
                    CLIENT.sendAsync(
                            postRequest(server, "/v1/completions", body.toString()),
                            HttpResponse.BodyHandlers.ofString()));
        }
        for (int i = 0; i < clients; i++) {
            HttpResponse<String> response = answers.get(i).join();
            assertEquals(200, response.statusCode(), response.body());
            JsonObject choice =
                    choice(JsonParser.parseString(response.body()).getAsJsonObject(), 0);
            assertEquals(expected.get(i).text(), choice.get("text").getAsString(), "client " + i);
        }
        GenerationScheduler.Stats after = server.stats();
        assertEquals(clients, after.completed() - before.completed());
        long batches = after.batches() - before.batches();
        assertTrue(
                batches < clients,
                "concurrent requests share batches: " + batches + " batches for " + clients);
    }

    @Test
    void aClientThatDisconnectsMidStreamFreesItsSlotAndStopsItsGeneration() throws Exception {
        try (OpenAiServer small = smallServer()) {
            int maxTokens = WINDOW - 16;
            HttpResponse<InputStream> stream = startLongStream(small, maxTokens);
            stream.body().close();
            await(() -> small.stats().active() == 0, "the disconnected request frees its slot");
            assertEquals(1, small.stats().cancelled());
            // the one worker runs this only after the cancelled generation has stopped
            HttpResponse<String> next =
                    post(small, "/v1/completions", completion("Still there?", 3).toString());
            assertEquals(200, next.statusCode(), next.body());
            GenerationScheduler.Stats stats = small.stats();
            assertEquals(1, stats.completed());
            long cancelledTokens =
                    stats.generatedTokens()
                            - JsonParser.parseString(next.body())
                                    .getAsJsonObject()
                                    .getAsJsonObject("usage")
                                    .get("completion_tokens")
                                    .getAsLong();
            assertTrue(
                    cancelledTokens < maxTokens / 2,
                    "generation stopped early: " + cancelledTokens + " tokens");
        }
    }

    @Test
    void overCapacityGets429WithRetryAfterInsteadOfQueueing() throws Exception {
        try (OpenAiServer small = smallServer()) {
            HttpResponse<InputStream> holder = startLongStream(small, WINDOW - 16);
            HttpResponse<String> refused =
                    post(small, "/v1/completions", completion("Me too", 3).toString());
            assertEquals(429, refused.statusCode());
            assertEquals("1", refused.headers().firstValue("Retry-After").orElse(null));
            JsonObject error =
                    JsonParser.parseString(refused.body())
                            .getAsJsonObject()
                            .getAsJsonObject("error");
            assertEquals("rate_limit_error", error.get("type").getAsString());
            assertEquals(1, small.stats().rejected());
            holder.body().close();
            await(() -> small.stats().active() == 0, "the slot is free again");
        }
    }

    @Test
    void startingOnAPortInUseThrowsABindExceptionNamingHostAndPort() throws Exception {
        ServerOptions taken = ServerOptions.DEFAULTS.withAddress("127.0.0.1", server.port());
        BindException e = assertThrows(BindException.class, () -> OpenAiServer.start(model, taken));
        assertTrue(
                e.getMessage().startsWith("cannot listen on 127.0.0.1:" + server.port() + ": "),
                e.getMessage());
        assertTrue(e.getMessage().contains("already in use"), e.getMessage());
        assertEquals(200, get(server, "/health").statusCode(), "the running server goes on");
    }

    @Test
    void closingTheServerEndsTheStreamsOfRunningAndWaitingRequests() throws Exception {
        OpenAiServer small =
                OpenAiServer.start(
                        model,
                        ServerOptions.DEFAULTS
                                .withAddress("127.0.0.1", 0)
                                .withScheduling(2, 1, Duration.ZERO));
        HttpResponse<InputStream> running;
        CompletableFuture<HttpResponse<String>> waiting;
        try {
            running = startLongStream(small, WINDOW - 16);
            JsonObject body = completion("Waiting in line", WINDOW - 16);
            body.addProperty("stream", true);
            waiting =
                    CLIENT.sendAsync(
                            postRequest(small, "/v1/completions", body.toString()),
                            HttpResponse.BodyHandlers.ofString());
            await(() -> small.stats().queued() == 1, "the second request waits for the one worker");
        } finally {
            small.close();
        }
        String rest = new String(running.body().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(rest.contains("\"error\""), "the running stream ends with an error event: " + rest);
        assertFalse(rest.contains("[DONE]"));
        String queued = waiting.get(20, java.util.concurrent.TimeUnit.SECONDS).body();
        assertTrue(queued.startsWith("data: {\"error\""), queued);
        assertEquals(2, small.stats().cancelled());
    }

    private static OpenAiServer smallServer() throws Exception {
        return OpenAiServer.start(
                model,
                ServerOptions.DEFAULTS
                        .withAddress("127.0.0.1", 0)
                        .withScheduling(1, 1, Duration.ZERO));
    }

    /** A long streamed request, its first chunk read: it is admitted and generating. */
    private static HttpResponse<InputStream> startLongStream(OpenAiServer target, int maxTokens)
            throws Exception {
        JsonObject body = completion("A long story:", maxTokens);
        body.addProperty("stream", true);
        body.addProperty("ignore_eos", true);
        HttpResponse<InputStream> response =
                CLIENT.send(
                        postRequest(target, "/v1/completions", body.toString()),
                        HttpResponse.BodyHandlers.ofInputStream());
        assertEquals(200, response.statusCode());
        InputStream in = response.body();
        StringBuilder line = new StringBuilder();
        for (int c = in.read(); c != '\n'; c = in.read()) {
            if (c < 0) {
                throw new IOException("the stream ended before its first chunk");
            }
            line.append((char) c);
        }
        assertTrue(line.toString().startsWith("data: {"), line.toString());
        return response;
    }

    @Test
    void badRequestsGet400WithAnOpenAiErrorAndTheServerGoesOn() throws Exception {
        String longPrompt = "hello ".repeat(WINDOW + 10);
        Object[][] cases = {
            {"/v1/completions", "{not json", 400, null},
            {"/v1/completions", "[1, 2]", 400, null},
            {"/v1/completions", "{}", 400, "prompt"},
            {
                "/v1/completions",
                "{\"prompt\": \"x\", \"temperature\": \"hot\"}",
                400,
                "temperature"
            },
            {"/v1/completions", "{\"prompt\": \"x\", \"n\": 99}", 400, "n"},
            {"/v1/completions", "{\"prompt\": \"x\", \"max_tokens\": 0}", 400, "max_tokens"},
            {"/v1/completions", "{\"prompt\": \"x\", \"logprobs\": 6}", 400, "logprobs"},
            {
                "/v1/completions",
                "{\"prompt\": \"x\", \"stream\": true, \"logprobs\": 0}",
                400,
                "logprobs"
            },
            {"/v1/completions", "{\"prompt\": [1, 2, 60000]}", 400, "prompt"},
            {"/v1/completions", "{\"prompt\": \"" + longPrompt + "\"}", 400, "prompt"},
            {"/v1/completions", "{\"prompt\": \"x\", \"stop\": [\"\"]}", 400, "stop"},
            {"/v1/completions", "{\"prompt\": \"x\", \"model\": \"not-this-one\"}", 404, "model"},
            {"/v1/chat/completions", "{\"messages\": []}", 400, "messages"},
            {
                "/v1/chat/completions",
                "{\"messages\": [{\"role\": \"user\"}]}",
                400,
                "messages[0].content"
            },
            {
                "/v1/chat/completions",
                "{\"messages\": [{\"role\": \"robot\", \"content\": \"beep\"}]}",
                400,
                "messages[0].role"
            },
            {
                "/v1/chat/completions",
                "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"},"
                        + " {\"role\": \"tool\", \"content\": \"42\"}]}",
                400,
                "messages[1].tool_call_id"
            },
            {
                "/v1/completions",
                "{\"prompt\": \"x\", \"stop\": [\"a\", \"b\", \"c\", \"d\", \"e\"]}",
                400,
                "stop"
            },
            {
                "/v1/completions",
                "{\"prompt\": \"x\", \"stream_options\": {\"include_usage\": true}}",
                400,
                "stream_options"
            },
            {
                "/v1/chat/completions",
                "{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}], \"stream\": false,"
                        + " \"stream_options\": {\"include_usage\": true}}",
                400,
                "stream_options"
            },
        };
        for (Object[] c : cases) {
            HttpResponse<String> response = post(server, (String) c[0], (String) c[1]);
            String label =
                    c[0]
                            + " "
                            + ((String) c[1]).substring(0, Math.min(60, ((String) c[1]).length()));
            assertEquals(c[2], response.statusCode(), label + ": " + response.body());
            assertTrue(
                    response.headers()
                            .firstValue("Content-Type")
                            .orElse("")
                            .startsWith("application/json"),
                    label);
            JsonObject error =
                    JsonParser.parseString(response.body())
                            .getAsJsonObject()
                            .getAsJsonObject("error");
            assertEquals("invalid_request_error", error.get("type").getAsString(), label);
            assertFalse(error.get("message").getAsString().isBlank(), label);
            assertEquals(c[3] == null, error.get("param").isJsonNull(), label);
            if (c[3] != null) {
                assertEquals(c[3], error.get("param").getAsString(), label);
            }
            assertTrue(error.has("code"), label);
        }
        assertEquals(200, get(server, "/health").statusCode());
        assertEquals(0, server.stats().failed());
    }

    @Test
    void malformedJsonIsDescribedInWordsWithItsPlaceAndNoJavaExceptionNames() throws Exception {
        String[][] cases = {
            {"{\"prompt\": \"x\"", "unexpected end of input at line 1 column "},
            {"{\"prompt\": \"x\",}", "at line 1 column "},
            {"{prompt: \"x\"}", "unexpected text at line 1 column "},
            {"{\"prompt\": \"x\"} trailing", "unexpected text at line 1 column "},
            {"{\"prompt\": \"\\q\"}", "at line 1 column "},
        };
        for (String[] c : cases) {
            HttpResponse<String> response = post(server, "/v1/completions", c[0]);
            assertEquals(400, response.statusCode(), c[0] + ": " + response.body());
            String message =
                    JsonParser.parseString(response.body())
                            .getAsJsonObject()
                            .getAsJsonObject("error")
                            .get("message")
                            .getAsString();
            assertTrue(
                    message.startsWith("the request body is not valid JSON: "),
                    c[0] + ": " + message);
            assertTrue(message.contains(c[1]), c[0] + ": " + message);
            for (String internal : List.of("Exception", "java.", "gson", "http", "path $")) {
                assertFalse(message.contains(internal), c[0] + ": " + message);
            }
        }
    }

    @Test
    void aDeveloperMessageIsReadAsASystemMessage() throws Exception {
        JsonObject asSystem = postOk("/v1/chat/completions", chat(8, "system", "Be brief.", "user", "Hi"));
        JsonObject asDeveloper =
                postOk("/v1/chat/completions", chat(8, "developer", "Be brief.", "user", "Hi"));
        assertEquals(choice(asSystem, 0).get("message"), choice(asDeveloper, 0).get("message"));
        assertEquals(asSystem.get("usage"), asDeveloper.get("usage"));
    }

    @Test
    void unknownRoutesGet404WithAnOpenAiError() throws Exception {
        for (HttpResponse<String> response :
                List.of(
                        get(server, "/v1/nothing"),
                        get(server, "/"),
                        post(server, "/v1/models", "{}"),
                        get(server, "/v1/models/not-this-one"))) {
            assertEquals(404, response.statusCode(), response.body());
            JsonObject error =
                    JsonParser.parseString(response.body())
                            .getAsJsonObject()
                            .getAsJsonObject("error");
            assertEquals("invalid_request_error", error.get("type").getAsString());
        }
    }

    @Test
    void modelsAndHealthDescribeTheServer() throws Exception {
        JsonObject models =
                JsonParser.parseString(get(server, "/v1/models").body()).getAsJsonObject();
        assertEquals("list", models.get("object").getAsString());
        JsonObject entry = models.getAsJsonArray("data").get(0).getAsJsonObject();
        assertEquals(dir.getFileName().toString(), entry.get("id").getAsString());
        assertEquals("model", entry.get("object").getAsString());
        JsonObject one =
                JsonParser.parseString(get(server, "/v1/models/" + server.modelId()).body())
                        .getAsJsonObject();
        assertEquals(entry, one);
        JsonObject health = JsonParser.parseString(get(server, "/health").body()).getAsJsonObject();
        assertEquals("ok", health.get("status").getAsString());
        assertEquals(40, health.get("max_concurrency").getAsInt());
        assertArrayEquals(
                new long[] {server.stats().generatedTokens()},
                new long[] {health.get("generated_tokens").getAsLong()});
    }
}
