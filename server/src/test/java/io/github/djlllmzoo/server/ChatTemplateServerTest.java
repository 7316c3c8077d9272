package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.chat.ChatTemplateFamiliesTest;
import io.github.djlllmzoo.chat.Jinja2Reference;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.zoo.LocalModel;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The chat endpoint uses the checkpoint's own chat template: a tiny random GPT-2 (GPT-2's real
 * tokenizer; only the template matters here) carrying each family's {@code chat_template} in its
 * {@code tokenizer_config.json} answers a conversation exactly as the model answers the prompt
 * Python's Jinja2 renders from that template, and a template's refusal is a 400 naming the field.
 */
class ChatTemplateServerTest {

    private static final HttpClient CLIENT =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();

    private static final String SYSTEM = "Answer in one word.";
    private static final String QUESTION = "What colour is the sky?";

    @TempDir static Path dir;

    private static Path gpt2;

    @BeforeAll
    static void writeModel() throws Exception {
        gpt2 = RunningServer.gpt2(dir.resolve("gpt2"), 1024, 5);
    }

    static Stream<String> families() {
        return ChatTemplateFamiliesTest.FAMILIES.stream();
    }

    /** The GPT-2 checkpoint with the family's chat template added to its tokenizer_config.json. */
    private static Path withTemplate(String family, String name) throws Exception {
        return RunningServer.withTemplate(gpt2, family, dir.resolve(name));
    }

    private static HttpResponse<String> chat(OpenAiServer server, String... roleAndContent)
            throws Exception {
        JsonObject body = OpenAiServerTest.chat(8, roleAndContent);
        URI uri = server.uri().resolve("/v1/chat/completions");
        return CLIENT.send(
                HttpRequest.newBuilder(uri)
                        .timeout(Duration.ofSeconds(60))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    private static OpenAiServer start(LocalModel model) throws Exception {
        return OpenAiServer.start(model, ServerOptions.DEFAULTS.withAddress("127.0.0.1", 0));
    }

    /** Jinja2's rendering of system + user with the checkpoint's special tokens. */
    private static String jinja2Prompt(Path checkpoint, boolean withSystem) throws Exception {
        JsonObject config =
                JsonParser.parseString(
                                Files.readString(
                                        checkpoint.resolve(CheckpointFiles.TOKENIZER_CONFIG)))
                        .getAsJsonObject();
        JsonObject context = new JsonObject();
        for (String token : List.of("bos_token", "eos_token", "unk_token", "pad_token")) {
            if (config.has(token)) {
                context.add(token, config.get(token));
            }
        }
        JsonObject body =
                withSystem
                        ? OpenAiServerTest.chat(1, "system", SYSTEM, "user", QUESTION)
                        : OpenAiServerTest.chat(1, "user", QUESTION);
        context.add("messages", body.get("messages"));
        context.addProperty("add_generation_prompt", true);
        JsonObject c = new JsonObject();
        c.add("template", config.get("chat_template"));
        c.add("context", context);
        JsonArray cases = new JsonArray();
        cases.add(c);
        Jinja2Reference.Result result = Jinja2Reference.render(cases).get(0);
        assertEquals(null, result.error(), "Jinja2 refused the conversation");
        return result.output();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("families")
    void theChatEndpointAnswersThePromptJinja2RendersFromTheCheckpointsTemplate(String family)
            throws Exception {
        String unavailable = Jinja2Reference.unavailableReason();
        Assumptions.assumeTrue(
                unavailable == null, "skipped, no reference renderer: " + unavailable);
        Path checkpoint = withTemplate(family, family);
        boolean withSystem = !family.equals("gemma-2-it");
        String prompt = jinja2Prompt(checkpoint, withSystem);
        try (LocalModel model = LocalModel.load(checkpoint);
                Predictor<GenerationRequest, GenerationResult> predictor =
                        OpenAiServerTest.generationPredictor(model);
                OpenAiServer server = start(model)) {
            GenerationConfig greedy =
                    GenerationConfig.forCheckpoint(checkpoint, model.config())
                            .build()
                            .toBuilder()
                            .greedy()
                            .maxNewTokens(8)
                            .build();
            GenerationResult expected = predictor.predict(GenerationRequest.of(prompt, greedy));
            HttpResponse<String> response =
                    withSystem
                            ? chat(server, "system", SYSTEM, "user", QUESTION)
                            : chat(server, "user", QUESTION);
            assertEquals(200, response.statusCode(), response.body());
            JsonObject answer = JsonParser.parseString(response.body()).getAsJsonObject();
            assertEquals(
                    model.tokenizer().encode(prompt).length,
                    answer.getAsJsonObject("usage").get("prompt_tokens").getAsInt(),
                    "the prompt the model sees is Jinja2's: " + prompt);
            assertEquals(
                    expected.text(),
                    answer.getAsJsonArray("choices")
                            .get(0)
                            .getAsJsonObject()
                            .getAsJsonObject("message")
                            .get("content")
                            .getAsString());
        }
    }

    @Test
    void gemma2GivenASystemMessageIsA400NamingMessages0Role() throws Exception {
        Path checkpoint = withTemplate("gemma-2-it", "gemma-2-it-refusal");
        try (LocalModel model = LocalModel.load(checkpoint);
                OpenAiServer server = start(model)) {
            HttpResponse<String> response = chat(server, "system", SYSTEM, "user", QUESTION);
            assertEquals(400, response.statusCode(), response.body());
            JsonObject error =
                    JsonParser.parseString(response.body())
                            .getAsJsonObject()
                            .getAsJsonObject("error");
            assertEquals("messages[0].role", error.get("param").getAsString());
            assertTrue(
                    error.get("message").getAsString().contains("System role not supported"),
                    error.toString());
        }
    }
}
