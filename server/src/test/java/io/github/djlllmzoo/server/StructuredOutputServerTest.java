package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code response_format} through the HTTP API on a random GPT-2 (GPT-2's real 50,257-token
 * vocabulary) sampling at temperature 1: every answer to the constrained module's reference
 * schemas ({@code constrained/src/test/resources/schemas.json}, every supported keyword) that ends
 * parses and is valid for Python's {@code jsonschema}, and every answer to a bounded schema ends;
 * {@code json_object} answers are objects; unsupported keywords and malformed formats are 400s
 * naming the field, the keyword and its path.
 */
class StructuredOutputServerTest {

    /** Answers per schema (one request of {@code n} choices). */
    private static final int SAMPLES = 4;

    /** Enough for every bounded reference schema's longest output in GPT-2 tokens. */
    private static final int MAX_TOKENS = 1500;

    @TempDir static Path dir;

    private static RunningServer running;

    @BeforeAll
    static void start() throws Exception {
        running = RunningServer.start(RunningServer.gpt2(dir, 2048));
    }

    @AfterAll
    static void stop() {
        if (running != null) {
            running.close();
        }
    }

    private static JsonObject request(JsonObject format, int n, long seed) {
        JsonObject body = OpenAiServerTest.chat(MAX_TOKENS, "user", "Fill in the record.");
        body.addProperty("temperature", 1.0);
        body.addProperty("n", n);
        body.addProperty("seed", seed);
        body.add("response_format", format);
        return body;
    }

    private static JsonObject jsonSchemaFormat(String name, JsonElement schema) {
        JsonObject spec = new JsonObject();
        spec.addProperty("name", name);
        spec.add("schema", schema);
        spec.addProperty("strict", true);
        JsonObject format = new JsonObject();
        format.addProperty("type", "json_schema");
        format.add("json_schema", spec);
        return format;
    }

    @Test
    void everyAnswerToEveryReferenceSchemaThatEndsIsValidAndBoundedOnesAlwaysEnd()
            throws Exception {
        String unavailable = SchemaValidator.unavailableReason();
        Assumptions.assumeTrue(unavailable == null, "skipped, no validator: " + unavailable);
        Path schemas =
                Paths.get(System.getProperty("llmzoo.home"), "constrained/src/test/resources/schemas.json");
        JsonArray cases = new JsonArray();
        List<String> labels = new ArrayList<>();
        int ended = 0;
        int seed = 0;
        for (JsonElement e : JsonParser.parseString(Files.readString(schemas)).getAsJsonArray()) {
            JsonObject reference = e.getAsJsonObject();
            String name = reference.get("name").getAsString();
            boolean bounded = reference.get("bounded").getAsBoolean();
            JsonObject format = jsonSchemaFormat(name.replaceAll("[^A-Za-z0-9_-]", "_"), reference.get("schema"));
            JsonObject answer =
                    ServerCalls.ok(
                            running.server, "/v1/chat/completions", request(format, SAMPLES, ++seed));
            for (JsonElement c : answer.getAsJsonArray("choices")) {
                JsonObject choice = c.getAsJsonObject();
                String text = choice.getAsJsonObject("message").get("content").getAsString();
                String reason = choice.get("finish_reason").getAsString();
                if (bounded) {
                    assertEquals("stop", reason, name + " ends within its bound: " + text);
                }
                if (reason.equals("stop")) {
                    JsonObject check = new JsonObject();
                    check.add("schema", reference.get("schema"));
                    check.addProperty("text", text);
                    cases.add(check);
                    labels.add(name + ": " + text);
                    ended++;
                }
            }
        }
        List<String> errors = SchemaValidator.validate(cases);
        for (int i = 0; i < errors.size(); i++) {
            assertEquals(null, errors.get(i), labels.get(i));
        }
        assertTrue(ended >= 40 * SAMPLES / 2, ended + " answers ended");
    }

    @Test
    void jsonObjectAnswersAreObjectsAndStreamedOnesConcatenateToOne() throws Exception {
        JsonObject format = new JsonObject();
        format.addProperty("type", "json_object");
        JsonObject answer =
                ServerCalls.ok(running.server, "/v1/chat/completions", request(format, 4, 3));
        for (JsonElement c : answer.getAsJsonArray("choices")) {
            JsonObject choice = c.getAsJsonObject();
            String text = choice.getAsJsonObject("message").get("content").getAsString();
            assertTrue(text.strip().startsWith("{"), text);
            if (choice.get("finish_reason").getAsString().equals("stop")) {
                assertTrue(JsonParser.parseString(text).isJsonObject(), text);
            }
        }
        JsonObject bounded =
                jsonSchemaFormat(
                        "point",
                        JsonParser.parseString(
                                "{\"type\": \"object\", \"properties\": {\"x\": {\"type\":"
                                        + " \"integer\", \"minimum\": 0, \"maximum\": 9}, \"ok\":"
                                        + " {\"type\": \"boolean\"}}, \"required\": [\"x\", \"ok\"],"
                                        + " \"additionalProperties\": false}"));
        JsonObject body = request(bounded, 1, 8);
        String whole =
                ServerCalls.firstChoice(ServerCalls.ok(running.server, "/v1/chat/completions", body))
                        .getAsJsonObject("message")
                        .get("content")
                        .getAsString();
        body.addProperty("stream", true);
        StringBuilder streamed = new StringBuilder();
        for (JsonObject chunk : ServerCalls.chunks(running.server, "/v1/chat/completions", body)) {
            JsonObject delta = ServerCalls.firstChoice(chunk).getAsJsonObject("delta");
            if (delta.has("content")) {
                streamed.append(delta.get("content").getAsString());
            }
        }
        assertEquals(whole, streamed.toString());
        JsonObject point = JsonParser.parseString(whole).getAsJsonObject();
        assertEquals(List.of("x", "ok"), List.copyOf(point.keySet()));
    }

    @Test
    void unsupportedKeywordsAndMalformedFormatsGet400NamingFieldKeywordAndPath() throws Exception {
        JsonObject unsupported =
                jsonSchemaFormat(
                        "tags",
                        JsonParser.parseString(
                                "{\"type\": \"object\", \"properties\": {\"tags\": {\"type\":"
                                        + " \"array\", \"uniqueItems\": true}}}"));
        JsonObject error =
                ServerCalls.error(
                        running.server,
                        "/v1/chat/completions",
                        request(unsupported, 1, 1),
                        400);
        assertEquals("response_format.json_schema.schema", error.get("param").getAsString());
        String message = error.get("message").getAsString();
        assertTrue(message.contains("uniqueItems") && message.contains("$.properties.tags"), message);

        String[][] cases = {
            {"{\"type\": \"xml\"}", "response_format.type"},
            {"{\"type\": \"json_schema\"}", "response_format.json_schema"},
            {"{\"type\": \"json_schema\", \"json_schema\": {\"schema\": {}}}", "response_format.json_schema.name"},
            {"{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"a\", \"schema\": 3}}", "response_format.json_schema.schema"},
            {"\"json\"", "response_format"},
        };
        for (String[] c : cases) {
            JsonObject body = request(JsonParser.parseString(c[0]).isJsonObject()
                    ? JsonParser.parseString(c[0]).getAsJsonObject() : null, 1, 1);
            if (!JsonParser.parseString(c[0]).isJsonObject()) {
                body.add("response_format", JsonParser.parseString(c[0]));
            }
            assertEquals(
                    c[1],
                    ServerCalls.error(running.server, "/v1/chat/completions", body, 400)
                            .get("param")
                            .getAsString(),
                    c[0]);
        }
    }
}
