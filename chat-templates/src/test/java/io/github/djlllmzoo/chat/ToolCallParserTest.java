package io.github.djlllmzoo.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonParser;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** Each family's tool-call syntax read from replies, whole and streamed piece by piece. */
class ToolCallParserTest {

    private static final String QWEN_REPLY =
            "Let me look.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\":"
                    + " \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\","
                    + " \"arguments\": {\"zone\": \"CET\"}}\n</tool_call>";

    private static final String MISTRAL_REPLY =
            "[TOOL_CALLS] [{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}},"
                    + " {\"name\": \"get_time\", \"arguments\": {\"zone\": \"CET\"}}]";

    private static final String LLAMA_REPLY =
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}";

    private static void assertCall(ToolCall call, String name, String arguments) {
        assertEquals(name, call.name());
        assertEquals(JsonParser.parseString(arguments), JsonParser.parseString(call.arguments()));
    }

    @Test
    void qwenBlocksBecomeCallsAndTheTextBeforeThemContent() {
        ToolCallSyntax.ParsedReply reply = ToolCallSyntax.HERMES.parse(QWEN_REPLY);
        assertEquals("Let me look.", reply.content());
        assertEquals(2, reply.calls().size());
        assertCall(reply.calls().get(0), "get_weather", "{\"city\": \"Paris\"}");
        assertCall(reply.calls().get(1), "get_time", "{\"zone\": \"CET\"}");
        assertTrue(reply.calls().get(0).id().matches("call_[A-Za-z0-9]{24}"));
    }

    @Test
    void mistralsArrayBecomesCallsWithTheNineCharacterIdsItsTemplateWants() {
        ToolCallSyntax.ParsedReply reply = ToolCallSyntax.MISTRAL.parse(MISTRAL_REPLY);
        assertNull(reply.content());
        assertEquals(2, reply.calls().size());
        assertCall(reply.calls().get(1), "get_time", "{\"zone\": \"CET\"}");
        for (ToolCall call : reply.calls()) {
            assertTrue(call.id().matches("[A-Za-z0-9]{9}"), call.id());
        }
    }

    @Test
    void llamasJsonReplyWithOrWithoutPythonTagIsACallAndAnythingElseContent() {
        assertCall(
                ToolCallSyntax.LLAMA3_JSON.parse(LLAMA_REPLY).calls().get(0),
                "get_weather",
                "{\"city\": \"Paris\"}");
        assertCall(
                ToolCallSyntax.LLAMA3_JSON.parse("<|python_tag|>" + LLAMA_REPLY).calls().get(0),
                "get_weather",
                "{\"city\": \"Paris\"}");
        String prose = "The weather is {\"fine\"} today.";
        assertEquals(
                new ToolCallSyntax.ParsedReply(prose, List.of()),
                ToolCallSyntax.LLAMA3_JSON.parse(prose));
        String notACall = "{\"answer\": 42}";
        assertEquals(
                new ToolCallSyntax.ParsedReply(notACall, List.of()),
                ToolCallSyntax.LLAMA3_JSON.parse(notACall));
    }

    @Test
    void aCallThatDoesNotParseIsGivenBackAsContentAsWritten() {
        String broken = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": }\n</tool_call>";
        ToolCallSyntax.ParsedReply reply = ToolCallSyntax.HERMES.parse(broken);
        assertEquals(broken, reply.content());
        assertTrue(reply.calls().isEmpty());
        String unclosed = "[TOOL_CALLS] [{\"name\": \"f\", \"arguments\": {";
        assertEquals(unclosed, ToolCallSyntax.MISTRAL.parse(unclosed).content());
    }

    @Test
    void aQwenCallMissingItsClosingTagStillParsesAtTheEnd() {
        ToolCallSyntax.ParsedReply reply =
                ToolCallSyntax.HERMES.parse("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}");
        assertEquals(1, reply.calls().size());
        assertCall(reply.calls().get(0), "f", "{}");
    }

    @ParameterizedTest
    @ValueSource(strings = {"HERMES", "MISTRAL", "LLAMA3_JSON"})
    void streamedOneCharacterAtATimeTheCallsComeAsSoonAsTheyCloseAndNoMarkupLeaksIntoContent(
            String name) {
        ToolCallSyntax syntax = ToolCallSyntax.valueOf(name);
        String reply =
                switch (syntax) {
                    case HERMES -> QWEN_REPLY;
                    case MISTRAL -> MISTRAL_REPLY;
                    case LLAMA3_JSON -> LLAMA_REPLY + "; " + LLAMA_REPLY.replace("Paris", "Oslo");
                };
        ToolCallParser parser = syntax.parser();
        StringBuilder content = new StringBuilder();
        List<ToolCall> calls = new ArrayList<>();
        List<Integer> completedAt = new ArrayList<>();
        for (int i = 0; i < reply.length(); i++) {
            ToolCallParser.Delta delta = parser.append(reply.substring(i, i + 1));
            content.append(delta.content());
            assertEquals(calls.size(), delta.firstIndex());
            for (ToolCall call : delta.calls()) {
                calls.add(call);
                completedAt.add(i);
            }
        }
        ToolCallParser.Delta last = parser.finish();
        content.append(last.content());
        calls.addAll(last.calls());
        ToolCallSyntax.ParsedReply whole = syntax.parse(reply);
        assertEquals(whole.content() == null ? "" : whole.content(), content.toString().strip());
        assertEquals(2, calls.size());
        for (int i = 0; i < calls.size(); i++) {
            assertEquals(whole.calls().get(i).name(), calls.get(i).name());
            assertEquals(whole.calls().get(i).arguments(), calls.get(i).arguments());
        }
        assertTrue(last.calls().isEmpty(), "every call came before the reply ended");
        assertTrue(completedAt.get(0) < reply.length() - 1 || syntax == ToolCallSyntax.MISTRAL);
        assertTrue(!content.toString().contains("<") && !content.toString().contains("["));
    }

    @Test
    void plainTextStreamsThroughUnheldExceptWhatMayStartACall() {
        ToolCallParser parser = ToolCallSyntax.HERMES.parser();
        assertEquals("Hello <b>", parser.append("Hello <b>").content());
        assertEquals(" ", parser.append(" <tool_c").content());
        assertEquals("<tool_cat>", parser.append("at>").content());
    }

    @Test
    void theTemplatesTellTheirFamilysSyntaxAndTheOthersAreRefusedNamingTheFamily(
            @TempDir Path dir) throws Exception {
        Map<String, ToolCallSyntax> expected =
                Map.of(
                        "qwen2.5-instruct", ToolCallSyntax.HERMES,
                        "qwen3", ToolCallSyntax.HERMES,
                        "llama3.1-instruct", ToolCallSyntax.LLAMA3_JSON,
                        "llama3.2-instruct", ToolCallSyntax.LLAMA3_JSON,
                        "mistral-7b-instruct-v0.3", ToolCallSyntax.MISTRAL);
        for (Map.Entry<String, ToolCallSyntax> e : expected.entrySet()) {
            assertEquals(
                    e.getValue(),
                    ToolCallSyntax.forTemplate(
                            ChatTemplateFamiliesTest.template(e.getKey(), dir), "x"),
                    e.getKey());
        }
        for (String family :
                List.of("llama3", "gemma-2-it", "gemma-3-it", "phi-3-mini-4k-instruct", "tinyllama")) {
            ToolsUnsupportedException refused =
                    assertThrows(
                            ToolsUnsupportedException.class,
                            () ->
                                    ToolCallSyntax.forTemplate(
                                            ChatTemplateFamiliesTest.template(family, dir),
                                            "family-" + family));
            assertEquals("tools", refused.param());
            assertTrue(refused.getMessage().contains("family-" + family), refused.getMessage());
        }
        assertThrows(
                ToolsUnsupportedException.class,
                () -> ToolCallSyntax.forTemplate(ChatTemplate.of(null, Map.of()), "gpt2"));
    }

    @Test
    void aCallRenderedByEachFamilysTemplateParsesBackToTheSameCall(@TempDir Path dir)
            throws Exception {
        // where the assistant's turn starts and ends in each template's output
        Map<String, String[]> turn =
                Map.of(
                        "qwen2.5-instruct", new String[] {"<|im_start|>assistant\n", "<|im_end|>"},
                        "qwen3", new String[] {"<|im_start|>assistant\n", "<|im_end|>"},
                        "llama3.2-instruct",
                                new String[] {"assistant<|end_header_id|>\n\n", "<|eot_id|>"},
                        "mistral-7b-instruct-v0.3", new String[] {"[/INST]", "</s>"});
        String arguments = "{\"city\": \"Z\\u00fcrich \\\"old town\\\"\", \"days\": [1, 2]}";
        for (Map.Entry<String, String[]> e : turn.entrySet()) {
            ChatTemplate template = ChatTemplateFamiliesTest.template(e.getKey(), dir);
            ToolCallSyntax syntax = ToolCallSyntax.forTemplate(template, e.getKey());
            String rendered =
                    template.render(
                            List.of(
                                    new ChatMessage("user", "Weather?"),
                                    ChatMessage.assistantCalling(
                                            null,
                                            List.of(
                                                    new ToolCall(
                                                            "a1B2c3D4e", "get_weather", arguments)))),
                            List.of(ChatTemplateToolsTest.WEATHER),
                            false,
                            Map.of());
            int start = rendered.lastIndexOf(e.getValue()[0]) + e.getValue()[0].length();
            String reply = rendered.substring(start, rendered.indexOf(e.getValue()[1], start));
            ToolCallSyntax.ParsedReply parsed = syntax.parse(reply);
            assertEquals(1, parsed.calls().size(), e.getKey() + ": " + reply);
            assertCall(parsed.calls().get(0), "get_weather", arguments);
        }
    }
}
