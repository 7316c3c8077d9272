package io.github.djlllmzoo.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tools in the chat templates of the families that read them (Qwen2.5, Qwen3, Llama 3.1 and 3.2,
 * Mistral v0.3): the function specifications in {@code tools}, an assistant turn's {@code
 * tool_calls} and the {@code tool} message answering it render as Python's Jinja2 renders them
 * with transformers' {@code apply_chat_template(messages, tools=...)}.
 */
class ChatTemplateToolsTest {

    static final List<String> TOOL_FAMILIES =
            List.of(
                    "qwen2.5-instruct",
                    "qwen3",
                    "llama3.1-instruct",
                    "llama3.2-instruct",
                    "mistral-7b-instruct-v0.3");

    /** Fixed, so that Llama's templates do not render today's date. */
    private static final Map<String, Object> VARIABLES = Map.of("date_string", "26 Jul 2024");

    static final JsonObject WEATHER =
            JsonParser.parseString(
                            "{\"type\": \"function\", \"function\": {\"name\": \"get_weather\","
                                + " \"description\": \"The weather in a city\", \"parameters\":"
                                + " {\"type\": \"object\", \"properties\": {\"city\": {\"type\":"
                                + " \"string\"}, \"days\": {\"type\": \"integer\", \"minimum\": 1,"
                                + " \"maximum\": 7.5}}, \"required\": [\"city\"]}}}")
                    .getAsJsonObject();

    /** Mistral's template wants ids of nine letters and digits. */
    private static final String CALL_ID = "a1B2c3D4e";

    private static final String ARGUMENTS = "{\"city\": \"Z\u00fcrich\", \"days\": 2}";

    private static List<ChatMessage> calledAndAnswered() {
        return List.of(
                new ChatMessage("system", "You are terse."),
                new ChatMessage("user", "Weather in Z\u00fcrich?"),
                ChatMessage.assistantCalling(
                        null, List.of(new ToolCall(CALL_ID, "get_weather", ARGUMENTS))),
                ChatMessage.toolResult(CALL_ID, "{\"celsius\": 21}"));
    }

    private static List<ChatMessage> askOnly() {
        return List.of(new ChatMessage("user", "Weather in Z\u00fcrich?"));
    }

    private static JsonObject jinja2Case(String family, List<ChatMessage> messages)
            throws Exception {
        JsonObject config = ChatTemplateFamiliesTest.tokenizerConfig(family);
        JsonObject context = new JsonObject();
        for (String token : List.of("bos_token", "eos_token", "unk_token", "pad_token")) {
            JsonElement value = config.get(token);
            if (value != null && !value.isJsonNull()) {
                context.add(token, value);
            }
        }
        JsonArray list = new JsonArray();
        for (ChatMessage m : messages) {
            JsonObject message = new JsonObject();
            message.addProperty("role", m.role());
            message.addProperty("content", m.content() == null ? "" : m.content());
            if (!m.toolCalls().isEmpty()) {
                JsonArray calls = new JsonArray();
                for (ToolCall call : m.toolCalls()) {
                    JsonObject function = new JsonObject();
                    function.addProperty("name", call.name());
                    function.add("arguments", JsonParser.parseString(call.arguments()));
                    JsonObject item = new JsonObject();
                    item.addProperty("id", call.id());
                    item.addProperty("type", "function");
                    item.add("function", function);
                    calls.add(item);
                }
                message.add("tool_calls", calls);
            }
            if (m.toolCallId() != null) {
                message.addProperty("tool_call_id", m.toolCallId());
            }
            list.add(message);
        }
        context.add("messages", list);
        JsonArray tools = new JsonArray();
        tools.add(WEATHER);
        context.add("tools", tools);
        context.addProperty("add_generation_prompt", true);
        context.addProperty("date_string", (String) VARIABLES.get("date_string"));
        JsonObject c = new JsonObject();
        c.add("template", config.get("chat_template"));
        c.add("context", context);
        return c;
    }

    @TestFactory
    Stream<DynamicTest> toolsCallsAndResultsRenderAsJinja2RendersThem(@TempDir Path dir)
            throws Exception {
        String unavailable = Jinja2Reference.unavailableReason();
        Assumptions.assumeTrue(
                unavailable == null, "skipped, no reference renderer: " + unavailable);
        Map<String, List<ChatMessage>> conversations =
                Map.of("asked", askOnly(), "called and answered", calledAndAnswered());
        JsonArray request = new JsonArray();
        List<String[]> cases = new ArrayList<>();
        for (String family : TOOL_FAMILIES) {
            for (String conversation : conversations.keySet()) {
                request.add(jinja2Case(family, conversations.get(conversation)));
                cases.add(new String[] {family, conversation});
            }
        }
        List<Jinja2Reference.Result> expected = Jinja2Reference.render(request);
        List<DynamicTest> tests = new ArrayList<>();
        for (int i = 0; i < cases.size(); i++) {
            String family = cases.get(i)[0];
            List<ChatMessage> messages = conversations.get(cases.get(i)[1]);
            Jinja2Reference.Result reference = expected.get(i);
            tests.add(
                    DynamicTest.dynamicTest(
                            family + ": " + cases.get(i)[1],
                            () -> {
                                assertEquals(null, reference.error(), "Jinja2 refused the case");
                                assertEquals(
                                        reference.output(),
                                        ChatTemplateFamiliesTest.template(family, dir)
                                                .render(
                                                        messages,
                                                        List.of(WEATHER),
                                                        true,
                                                        VARIABLES));
                            }));
        }
        return tests.stream();
    }

    @Test
    void eachFamilyShowsTheFunctionAndRendersTheCallInItsOwnSyntax(@TempDir Path dir)
            throws Exception {
        Map<String, String> callSyntax =
                Map.of(
                        "qwen2.5-instruct",
                        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + ARGUMENTS,
                        "qwen3",
                        "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": " + ARGUMENTS,
                        "llama3.1-instruct",
                        "{\"name\": \"get_weather\", \"parameters\": " + ARGUMENTS + "}<|eot_id|>",
                        "llama3.2-instruct",
                        "{\"name\": \"get_weather\", \"parameters\": " + ARGUMENTS + "}<|eot_id|>",
                        "mistral-7b-instruct-v0.3",
                        "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": "
                                + ARGUMENTS
                                + ", \"id\": \""
                                + CALL_ID
                                + "\"}]");
        for (String family : TOOL_FAMILIES) {
            String prompt =
                    ChatTemplateFamiliesTest.template(family, dir)
                            .render(calledAndAnswered(), List.of(WEATHER), true, VARIABLES);
            assertTrue(prompt.contains("\"The weather in a city\""), family + ": " + prompt);
            assertTrue(prompt.contains(callSyntax.get(family)), family + ": " + prompt);
            // Llama's templates write a tool's text result through tojson, quoted
            assertTrue(prompt.contains("celsius") && prompt.contains("21"), family + ": " + prompt);
        }
    }

    @Test
    void withoutToolsTheTemplatesRenderAsBefore(@TempDir Path dir) throws Exception {
        for (String family : TOOL_FAMILIES) {
            ChatTemplate template = ChatTemplateFamiliesTest.template(family, dir);
            assertEquals(
                    template.render(askOnly(), true, VARIABLES),
                    template.render(askOnly(), List.of(), true, VARIABLES),
                    family);
        }
    }

    @Test
    void theFallbackFormatRefusesToolsNamingTheField() {
        ChatTemplateException e =
                assertThrows(
                        ChatTemplateException.class,
                        () ->
                                ChatTemplate.of(null, Map.of())
                                        .render(askOnly(), List.of(WEATHER), true, Map.of()));
        assertEquals("tools", e.param());
    }
}
