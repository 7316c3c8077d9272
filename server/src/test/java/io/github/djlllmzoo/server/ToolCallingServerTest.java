package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.chat.ChatMessage;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.chat.ToolCall;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tool calling through the HTTP API on a random GPT-2 wearing real families' chat templates
 * (Qwen2.5, Mistral v0.3, Llama 3.2): tools rendered into the prompt, {@code tool_choice}
 * required and named constraining the reply to the family's call syntax so that every call parses
 * into a named function whose arguments an independent validator accepts, streamed {@code
 * delta.tool_calls}, assistant tool calls and tool results in the conversation, and 400s naming the
 * field for what cannot be served.
 */
class ToolCallingServerTest {

    private static final List<String> FAMILIES =
            List.of("qwen2.5-instruct", "mistral-7b-instruct-v0.3", "llama3.2-instruct");

    private static final String WEATHER_PARAMETERS =
            "{\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\", \"enum\":"
                    + " [\"Paris\", \"Oslo\", \"Lima\"]}, \"days\": {\"type\": \"integer\","
                    + " \"minimum\": 1, \"maximum\": 7}}, \"required\": [\"city\", \"days\"],"
                    + " \"additionalProperties\": false}";

    private static final String TIME_PARAMETERS =
            "{\"type\": \"object\", \"properties\": {\"zone\": {\"type\": \"string\", \"enum\":"
                    + " [\"CET\", \"UTC\"]}}, \"required\": [\"zone\"], \"additionalProperties\":"
                    + " false}";

    private static final Map<String, String> PARAMETERS =
            Map.of("get_weather", WEATHER_PARAMETERS, "get_time", TIME_PARAMETERS);

    @TempDir static Path dir;

    private static final Map<String, RunningServer> SERVERS = new LinkedHashMap<>();
    private static Path gpt2;

    @BeforeAll
    static void start() throws Exception {
        gpt2 = RunningServer.gpt2(dir.resolve("gpt2"), 2048);
        for (String family : List.of(
                "qwen2.5-instruct", "mistral-7b-instruct-v0.3", "llama3.2-instruct", "gemma-2-it")) {
            SERVERS.put(
                    family,
                    RunningServer.start(
                            RunningServer.withTemplate(gpt2, family, dir.resolve(family))));
        }
        SERVERS.put("gpt2", RunningServer.start(gpt2));
    }

    @AfterAll
    static void stop() {
        SERVERS.values().forEach(RunningServer::close);
    }

    private static OpenAiServer server(String family) {
        return SERVERS.get(family).server;
    }

    static JsonArray tools() {
        JsonArray tools = new JsonArray();
        for (Map.Entry<String, String> e : PARAMETERS.entrySet()) {
            JsonObject function = new JsonObject();
            function.addProperty("name", e.getKey());
            function.addProperty("description", "Looks up " + e.getKey().substring(4));
            function.add("parameters", JsonParser.parseString(e.getValue()));
            JsonObject tool = new JsonObject();
            tool.addProperty("type", "function");
            tool.add("function", function);
            tools.add(tool);
        }
        return tools;
    }

    private static JsonObject request(String toolChoice) {
        JsonObject body = OpenAiServerTest.chat(300, "user", "What is the weather in Oslo?");
        body.add("tools", tools());
        if (toolChoice != null) {
            body.add("tool_choice", JsonParser.parseString(toolChoice));
        }
        return body;
    }

    /** A call of one of {@code allowed} whose arguments are valid against its parameters. */
    private static void assertValidCall(JsonObject call, Set<String> allowed) {
        assertEquals("function", call.get("type").getAsString());
        assertFalse(call.get("id").getAsString().isEmpty());
        JsonObject function = call.getAsJsonObject("function");
        String name = function.get("name").getAsString();
        assertTrue(allowed.contains(name), name);
        String arguments = function.get("arguments").getAsString();
        JsonObject parsed = JsonParser.parseString(arguments).getAsJsonObject();
        // the two schemas checked by hand: exactly the required keys, enums, the integer range
        if (name.equals("get_weather")) {
            assertEquals(Set.of("city", "days"), parsed.keySet(), arguments);
            assertTrue(Set.of("Paris", "Oslo", "Lima").contains(parsed.get("city").getAsString()));
            assertTrue(
                    parsed.get("days").getAsJsonPrimitive().isNumber()
                            && parsed.get("days").getAsString().matches("[1-7]"),
                    arguments);
        } else {
            assertEquals(Set.of("zone"), parsed.keySet(), arguments);
            assertTrue(Set.of("CET", "UTC").contains(parsed.get("zone").getAsString()), arguments);
        }
    }

    @Test
    void requiredToolChoiceAlwaysGivesOneParsedCallWithValidArgumentsInEveryFamilysSyntax()
            throws Exception {
        for (String family : FAMILIES) {
            for (long seed = 1; seed <= 3; seed++) {
                JsonObject body = request("\"required\"");
                body.addProperty("temperature", 1.0);
                body.addProperty("seed", seed);
                body.addProperty("n", 4);
                body.addProperty("parallel_tool_calls", false);
                JsonObject answer = ServerCalls.ok(server(family), "/v1/chat/completions", body);
                for (JsonElement e : answer.getAsJsonArray("choices")) {
                    JsonObject choice = e.getAsJsonObject();
                    String label = family + ", seed " + seed + ": " + choice;
                    assertEquals("tool_calls", choice.get("finish_reason").getAsString(), label);
                    JsonArray calls = choice.getAsJsonObject("message").getAsJsonArray("tool_calls");
                    assertEquals(1, calls.size(), label);
                    assertValidCall(calls.get(0).getAsJsonObject(), PARAMETERS.keySet());
                }
            }
        }
    }

    @Test
    void autoWithAResponseFormatGivesEitherValidCallsOrAnAnswerInTheFormat() throws Exception {
        String family = FAMILIES.get(0);
        JsonObject format = JsonParser.parseString(
                        "{\"type\": \"json_schema\", \"json_schema\": {\"name\": \"reply\", \"strict\": true,"
                                + " \"schema\": {\"type\": \"object\", \"additionalProperties\": false,"
                                + " \"required\": [\"answer\"], \"properties\": {\"answer\":"
                                + " {\"type\": \"string\", \"maxLength\": 10}}}}}")
                .getAsJsonObject();
        int callReplies = 0;
        int answers = 0;
        for (long seed = 1; seed <= 3; seed++) {
            JsonObject body = request(null);
            body.add("response_format", format);
            body.addProperty("temperature", 1.0);
            body.addProperty("seed", seed);
            body.addProperty("n", 4);
            JsonObject answer = ServerCalls.ok(server(family), "/v1/chat/completions", body);
            for (JsonElement e : answer.getAsJsonArray("choices")) {
                JsonObject choice = e.getAsJsonObject();
                String label = family + ", seed " + seed + ": " + choice;
                JsonObject message = choice.getAsJsonObject("message");
                if (choice.get("finish_reason").getAsString().equals("tool_calls")) {
                    JsonArray calls = message.getAsJsonArray("tool_calls");
                    assertFalse(calls.isEmpty(), label);
                    for (JsonElement call : calls) {
                        assertValidCall(call.getAsJsonObject(), PARAMETERS.keySet());
                    }
                    callReplies++;
                } else {
                    assertEquals("stop", choice.get("finish_reason").getAsString(), label);
                    JsonObject reply = JsonParser.parseString(message.get("content").getAsString()).getAsJsonObject();
                    assertEquals(Set.of("answer"), reply.keySet(), label);
                    assertTrue(reply.get("answer").getAsString().length() <= 10, label);
                    answers++;
                }
            }
        }
        assertEquals(12, callReplies + answers);
        // a bias towards '<', which only a call can begin with (Qwen's <tool_call>), makes every reply a
        // call: the constraint leaves the call open beside the formatted answer
        int angle = JsonParser.parseString(Files.readString(gpt2.resolve("tokenizer.json")))
                .getAsJsonObject().getAsJsonObject("model").getAsJsonObject("vocab").get("<").getAsInt();
        JsonObject body = request(null);
        body.add("response_format", format);
        body.add("logit_bias", JsonParser.parseString("{\"" + angle + "\": 100}"));
        body.addProperty("temperature", 1.0);
        body.addProperty("seed", 7);
        body.addProperty("n", 4);
        JsonObject answer = ServerCalls.ok(server(family), "/v1/chat/completions", body);
        for (JsonElement e : answer.getAsJsonArray("choices")) {
            JsonObject choice = e.getAsJsonObject();
            assertEquals("tool_calls", choice.get("finish_reason").getAsString(), choice.toString());
            for (JsonElement call : choice.getAsJsonObject("message").getAsJsonArray("tool_calls")) {
                assertValidCall(call.getAsJsonObject(), PARAMETERS.keySet());
            }
        }
    }

    @Test
    void aNamedToolChoiceCallsThatFunctionAndParallelCallsAllParse() throws Exception {
        for (String family : FAMILIES) {
            JsonObject body =
                    request("{\"type\": \"function\", \"function\": {\"name\": \"get_time\"}}");
            body.addProperty("temperature", 1.0);
            body.addProperty("seed", 9);
            body.addProperty("n", 4);
            for (JsonElement e :
                    ServerCalls.ok(server(family), "/v1/chat/completions", body)
                            .getAsJsonArray("choices")) {
                JsonArray calls =
                        e.getAsJsonObject().getAsJsonObject("message").getAsJsonArray("tool_calls");
                assertEquals(1, calls.size(), family);
                assertValidCall(calls.get(0).getAsJsonObject(), Set.of("get_time"));
            }
        }
        // several calls where the family writes them: each one that closed parses and validates
        JsonObject body = request("\"required\"");
        body.addProperty("temperature", 1.0);
        body.addProperty("seed", 4);
        body.addProperty("n", 4);
        for (JsonElement e :
                ServerCalls.ok(server("qwen2.5-instruct"), "/v1/chat/completions", body)
                        .getAsJsonArray("choices")) {
            JsonObject message = e.getAsJsonObject().getAsJsonObject("message");
            assertTrue(message.getAsJsonArray("tool_calls").size() >= 1, message.toString());
            for (JsonElement call : message.getAsJsonArray("tool_calls")) {
                assertValidCall(call.getAsJsonObject(), PARAMETERS.keySet());
            }
        }
    }

    @Test
    void streamedDeltaToolCallsAreTheCallsOfTheWholeAnswer() throws Exception {
        for (String family : FAMILIES) {
            JsonObject body = request("\"required\"");
            body.addProperty("temperature", 1.0);
            body.addProperty("seed", 21);
            body.addProperty("parallel_tool_calls", false);
            JsonArray whole =
                    ServerCalls.firstChoice(
                                    ServerCalls.ok(server(family), "/v1/chat/completions", body))
                            .getAsJsonObject("message")
                            .getAsJsonArray("tool_calls");
            body.addProperty("stream", true);
            List<JsonObject> streamed = new ArrayList<>();
            String finishReason = null;
            for (JsonObject chunk : ServerCalls.chunks(server(family), "/v1/chat/completions", body)) {
                JsonObject choice = ServerCalls.firstChoice(chunk);
                JsonObject delta = choice.getAsJsonObject("delta");
                if (delta.has("tool_calls")) {
                    for (JsonElement call : delta.getAsJsonArray("tool_calls")) {
                        assertEquals(streamed.size(), call.getAsJsonObject().get("index").getAsInt());
                        streamed.add(call.getAsJsonObject());
                    }
                }
                if (!choice.get("finish_reason").isJsonNull()) {
                    finishReason = choice.get("finish_reason").getAsString();
                }
            }
            assertEquals("tool_calls", finishReason, family);
            assertEquals(whole.size(), streamed.size(), family);
            for (int i = 0; i < streamed.size(); i++) {
                assertEquals(
                        whole.get(i).getAsJsonObject().get("function"),
                        streamed.get(i).get("function"),
                        family);
            }
        }
    }

    @Test
    void toolsAndToolMessagesRenderThroughTheTemplateAndAutoLeavesPlainRepliesAsContent()
            throws Exception {
        List<JsonObject> tools = new ArrayList<>();
        tools().forEach(t -> tools.add(t.getAsJsonObject()));
        for (String family : FAMILIES) {
            ChatTemplate template = ChatTemplate.forCheckpoint(dir.resolve(family));
            String callId = "a1B2c3D4e";
            List<ChatMessage> messages =
                    List.of(
                            new ChatMessage("user", "Weather in Oslo?"),
                            ChatMessage.assistantCalling(
                                    null,
                                    List.of(
                                            new ToolCall(
                                                    callId,
                                                    "get_weather",
                                                    "{\"city\": \"Oslo\", \"days\": 1}"))),
                            ChatMessage.toolResult(callId, "{\"celsius\": 3}"));
            long[] prompt =
                    template.encode(
                            template.render(messages, tools, true, Map.of()),
                            SERVERS.get(family).model.tokenizer());
            JsonObject body = OpenAiServerTest.chat(4, "user", "Weather in Oslo?");
            JsonObject assistant = new JsonObject();
            assistant.addProperty("role", "assistant");
            assistant.add("content", null);
            assistant.add(
                    "tool_calls",
                    JsonParser.parseString(
                            "[{\"id\": \"" + callId + "\", \"type\": \"function\", \"function\":"
                                    + " {\"name\": \"get_weather\", \"arguments\": \"{\\\"city\\\":"
                                    + " \\\"Oslo\\\", \\\"days\\\": 1}\"}}]"));
            JsonObject tool = new JsonObject();
            tool.addProperty("role", "tool");
            tool.addProperty("tool_call_id", callId);
            tool.addProperty("content", "{\"celsius\": 3}");
            body.getAsJsonArray("messages").add(assistant);
            body.getAsJsonArray("messages").add(tool);
            body.add("tools", tools());
            JsonObject answer = ServerCalls.ok(server(family), "/v1/chat/completions", body);
            assertEquals(
                    prompt.length,
                    answer.getAsJsonObject("usage").get("prompt_tokens").getAsInt(),
                    family);
            // greedy text of a random model is no call: content, as generated
            JsonObject choice = ServerCalls.firstChoice(answer);
            assertFalse(choice.getAsJsonObject("message").has("tool_calls"), family);
            assertTrue(List.of("stop", "length").contains(choice.get("finish_reason").getAsString()));
        }
    }

    @Test
    void whatCannotBeServedGets400NamingTheFieldAndTheFamily() throws Exception {
        JsonObject noTemplate =
                ServerCalls.error(server("gpt2"), "/v1/chat/completions", request(null), 400);
        assertEquals("tools", noTemplate.get("param").getAsString());
        assertTrue(noTemplate.get("message").getAsString().contains("'gpt2'"), noTemplate.toString());
        JsonObject noToolSupport =
                ServerCalls.error(server("gemma-2-it"), "/v1/chat/completions", request(null), 400);
        assertEquals("tools", noToolSupport.get("param").getAsString());
        assertTrue(noToolSupport.get("message").getAsString().contains("no tool support"));

        OpenAiServer qwen = server("qwen2.5-instruct");
        Map<String, JsonObject> cases = new LinkedHashMap<>();
        cases.put(
                "tool_choice.function.name",
                request("{\"type\": \"function\", \"function\": {\"name\": \"nope\"}}"));
        cases.put("tool_choice", request("\"sometimes\""));
        JsonObject noTools = OpenAiServerTest.chat(4, "user", "x");
        noTools.addProperty("tool_choice", "required");
        cases.put("tool_choice ", noTools);
        JsonObject badName = request(null);
        badName.getAsJsonArray("tools")
                .get(0)
                .getAsJsonObject()
                .getAsJsonObject("function")
                .addProperty("name", "has space");
        cases.put("tools[0].function.name", badName);
        JsonObject toolWithoutId = OpenAiServerTest.chat(4, "user", "x", "tool", "42");
        cases.put("messages[1].tool_call_id", toolWithoutId);
        JsonObject unsupported = request("\"required\"");
        unsupported.getAsJsonArray("tools")
                .get(1)
                .getAsJsonObject()
                .getAsJsonObject("function")
                .getAsJsonObject("parameters")
                .getAsJsonObject("properties")
                .add("tags", JsonParser.parseString("{\"type\": \"array\", \"uniqueItems\": true}"));
        cases.put("tools[1].function.parameters", unsupported);
        for (Map.Entry<String, JsonObject> c : cases.entrySet()) {
            JsonObject error = ServerCalls.error(qwen, "/v1/chat/completions", c.getValue(), 400);
            assertEquals(c.getKey().strip(), error.get("param").getAsString(), error.toString());
        }
        JsonObject keyword =
                ServerCalls.error(qwen, "/v1/chat/completions", unsupported, 400);
        assertTrue(
                keyword.get("message").getAsString().contains("uniqueItems")
                        && keyword.get("message").getAsString().contains("$.properties.tags"),
                keyword.toString());
    }
}
