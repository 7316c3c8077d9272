package io.github.djlllmzoo.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;

/**
 * The chat templates of the model families the zoo runs, each as published in its checkpoint's
 * {@code tokenizer_config.json} (see {@code src/test/resources/chat-templates/README.md}), rendered
 * by {@link ChatTemplate} (Jinjava) exactly as Python's Jinja2 renders them with Hugging Face's
 * settings, over conversations that reach every branch a plain chat can: system or not, several
 * turns, an assistant turn last, with and without the generation prompt, Qwen3's {@code
 * enable_thinking}, and conversations a template refuses. Jinja2 runs at test time ({@link
 * Jinja2Reference}); where it is absent those comparisons are skipped and the structural tests
 * below still hold the templates to what their models expect.
 */
public class ChatTemplateFamiliesTest {

    /** The families' templates, by resource name. */
    public static final List<String> FAMILIES =
            List.of(
                    "qwen2.5-instruct",
                    "qwen3",
                    "gemma-2-it",
                    "gemma-3-it",
                    "phi-3-mini-4k-instruct",
                    "mistral-7b-instruct-v0.3");

    private static final String SYSTEM = "You are terse.";

    static final Map<String, List<ChatMessage>> CONVERSATIONS = conversations();

    private static Map<String, List<ChatMessage>> conversations() {
        Map<String, List<ChatMessage>> c = new LinkedHashMap<>();
        c.put("user", List.of(new ChatMessage("user", "Hello there!")));
        c.put(
                "system, user",
                List.of(new ChatMessage("system", SYSTEM), new ChatMessage("user", "Hello there!")));
        List<ChatMessage> turns =
                List.of(
                        new ChatMessage("user", "  Hi there  "),
                        new ChatMessage("assistant", " Hello! How can I help?\n"),
                        new ChatMessage("user", "Tell me a joke.\nA short one."));
        c.put("user, assistant, user", turns);
        List<ChatMessage> withSystem = new ArrayList<>();
        withSystem.add(new ChatMessage("system", SYSTEM));
        withSystem.addAll(turns);
        c.put("system, user, assistant, user", withSystem);
        c.put(
                "assistant last",
                List.of(new ChatMessage("user", "2+2?"), new ChatMessage("assistant", "4")));
        c.put(
                "reasoning in assistant turns",
                List.of(
                        new ChatMessage("user", "Q1"),
                        new ChatMessage("assistant", "<think>\nfirst thought\n</think>\n\nA1"),
                        new ChatMessage("user", "Q2"),
                        new ChatMessage("assistant", "<think>\nsecond thought\n</think>\n\nA2")));
        c.put(
                "markup and unicode in content",
                List.of(
                        new ChatMessage(
                                "user",
                                "Grüße — \"quotes\", <b>tags</b>, {{ not a template }} {% x %}")));
        c.put(
                "two user turns in a row",
                List.of(new ChatMessage("user", "a"), new ChatMessage("user", "b")));
        return c;
    }

    /** The template variables each family's cases run with, besides add_generation_prompt. */
    private static List<Map<String, Object>> variants(String family) {
        if (family.equals("qwen3")) {
            return List.of(
                    Map.of(), Map.of("enable_thinking", false), Map.of("enable_thinking", true));
        }
        return List.of(Map.of());
    }

    static String resource(String name) throws IOException {
        try (InputStream in =
                ChatTemplateFamiliesTest.class.getResourceAsStream("/chat-templates/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    /**
     * @param family a resource name of {@link #FAMILIES}
     * @return its {@code tokenizer_config.json}
     */
    public static JsonObject tokenizerConfig(String family) throws IOException {
        return JsonParser.parseString(resource(family + ".json")).getAsJsonObject();
    }

    static ChatTemplate template(String family, Path dir) throws Exception {
        Path familyDir = Files.createDirectories(dir.resolve(family));
        Files.writeString(
                familyDir.resolve(CheckpointFiles.TOKENIZER_CONFIG),
                resource(family + ".json"),
                StandardCharsets.UTF_8);
        return ChatTemplate.forCheckpoint(familyDir);
    }

    private record Case(
            String family,
            String conversation,
            boolean addGenerationPrompt,
            Map<String, Object> variables) {
        String name() {
            return family
                    + ": "
                    + conversation
                    + (addGenerationPrompt ? ", generation prompt" : ", no generation prompt")
                    + (variables.isEmpty() ? "" : ", " + variables);
        }
    }

    /**
     * The Jinja2 context of a case as Hugging Face builds it: the special tokens the config names,
     * {@code messages}, {@code add_generation_prompt} and the extra variables.
     */
    private static JsonObject jinja2Case(Case c) throws IOException {
        JsonObject config = tokenizerConfig(c.family());
        JsonObject context = new JsonObject();
        for (String token : List.of("bos_token", "eos_token", "unk_token", "pad_token")) {
            JsonElement value = config.get(token);
            if (value != null && !value.isJsonNull()) {
                context.add(token, value);
            }
        }
        JsonArray messages = new JsonArray();
        for (ChatMessage m : CONVERSATIONS.get(c.conversation())) {
            JsonObject message = new JsonObject();
            message.addProperty("role", m.role());
            message.addProperty("content", m.content());
            messages.add(message);
        }
        context.add("messages", messages);
        context.addProperty("add_generation_prompt", c.addGenerationPrompt());
        for (Map.Entry<String, Object> v : c.variables().entrySet()) {
            context.addProperty(v.getKey(), (Boolean) v.getValue());
        }
        JsonObject jinja2Case = new JsonObject();
        jinja2Case.add("template", config.get("chat_template"));
        jinja2Case.add("context", context);
        return jinja2Case;
    }

    @TestFactory
    Stream<DynamicTest> everyFamilysTemplateRendersAsJinja2DoesOrRefusesWithItsMessage(
            @TempDir Path dir) throws Exception {
        String unavailable = Jinja2Reference.unavailableReason();
        Assumptions.assumeTrue(
                unavailable == null, "skipped, no reference renderer: " + unavailable);
        List<Case> cases = new ArrayList<>();
        for (String family : FAMILIES) {
            for (String conversation : CONVERSATIONS.keySet()) {
                for (boolean generationPrompt : List.of(true, false)) {
                    for (Map<String, Object> variables : variants(family)) {
                        cases.add(new Case(family, conversation, generationPrompt, variables));
                    }
                }
            }
        }
        JsonArray request = new JsonArray();
        for (Case c : cases) {
            request.add(jinja2Case(c));
        }
        List<Jinja2Reference.Result> expected = Jinja2Reference.render(request);
        Map<String, ChatTemplate> templates = new LinkedHashMap<>();
        for (String family : FAMILIES) {
            templates.put(family, template(family, dir));
        }
        List<DynamicTest> tests = new ArrayList<>();
        for (int i = 0; i < cases.size(); i++) {
            Case c = cases.get(i);
            Jinja2Reference.Result reference = expected.get(i);
            tests.add(
                    DynamicTest.dynamicTest(
                            c.name(),
                            () -> {
                                ChatTemplate template = templates.get(c.family());
                                List<ChatMessage> messages = CONVERSATIONS.get(c.conversation());
                                if (reference.error() == null) {
                                    assertEquals(
                                            reference.output(),
                                            template.render(
                                                    messages,
                                                    c.addGenerationPrompt(),
                                                    c.variables()));
                                } else {
                                    ChatTemplateException e =
                                            assertThrows(
                                                    ChatTemplateException.class,
                                                    () ->
                                                            template.render(
                                                                    messages,
                                                                    c.addGenerationPrompt(),
                                                                    c.variables()));
                                    assertTrue(
                                            e.getMessage().contains(reference.error()),
                                            "Jinja2 said '"
                                                    + reference.error()
                                                    + "', Jinjava: "
                                                    + e.getMessage());
                                }
                            }));
        }
        return tests.stream();
    }

    // ---- what each family's template must do, checked without Python ----

    private static List<ChatMessage> userOnly() {
        return CONVERSATIONS.get("user");
    }

    private static List<ChatMessage> systemAndUser() {
        return CONVERSATIONS.get("system, user");
    }

    @Test
    void qwen25WithoutASystemMessageGetsQwensDefaultSystemPromptAndAGivenOneReplacesIt(
            @TempDir Path dir) throws Exception {
        ChatTemplate qwen = template("qwen2.5-instruct", dir);
        String defaultSystem =
                "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful"
                        + " assistant.<|im_end|>\n";
        String user = "<|im_start|>user\nHello there!<|im_end|>\n";
        String assistant = "<|im_start|>assistant\n";
        assertEquals(defaultSystem + user + assistant, qwen.render(userOnly()));
        assertEquals(
                "<|im_start|>system\n" + SYSTEM + "<|im_end|>\n" + user + assistant,
                qwen.render(systemAndUser()));
    }

    @Test
    void gemma2RefusesASystemMessageNamingMessages0RoleWithTheTemplatesMessage(@TempDir Path dir)
            throws Exception {
        ChatTemplate gemma = template("gemma-2-it", dir);
        ChatTemplateException e =
                assertThrows(ChatTemplateException.class, () -> gemma.render(systemAndUser()));
        assertEquals("messages[0].role", e.param());
        assertTrue(e.getMessage().contains("System role not supported"), e.getMessage());
        assertEquals(
                "<bos><start_of_turn>user\nHello there!<end_of_turn>\n<start_of_turn>model\n",
                gemma.render(userOnly()));
        ChatTemplateException alternation =
                assertThrows(
                        ChatTemplateException.class,
                        () -> gemma.render(CONVERSATIONS.get("two user turns in a row")));
        assertEquals("messages", alternation.param());
        assertTrue(alternation.getMessage().contains("must alternate"), alternation.getMessage());
    }

    @Test
    void gemma3FoldsTheSystemMessageIntoTheFirstUserTurn(@TempDir Path dir) throws Exception {
        assertEquals(
                "<bos><start_of_turn>user\n"
                        + SYSTEM
                        + "\n\nHello there!<end_of_turn>\n<start_of_turn>model\n",
                template("gemma-3-it", dir).render(systemAndUser()));
    }

    @Test
    void qwen3WithThinkingOffClosesAnEmptyThinkBlockAndDropsEarlierReasoning(@TempDir Path dir)
            throws Exception {
        ChatTemplate qwen3 = template("qwen3", dir);
        String on = qwen3.render(userOnly());
        String off = qwen3.render(userOnly(), true, Map.of("enable_thinking", false));
        assertEquals(on + "<think>\n\n</think>\n\n", off);
        String reasoning =
                qwen3.render(CONVERSATIONS.get("reasoning in assistant turns"), false, Map.of());
        assertTrue(
                reasoning.contains("<|im_start|>assistant\nA1<|im_end|>")
                        && reasoning.contains("<think>\nsecond thought\n</think>\n\nA2"),
                reasoning);
    }

    @Test
    void phi3AndMistralPutEachTurnInTheirMarkersAndMistralTheSystemMessageInTheLastUserTurn(
            @TempDir Path dir) throws Exception {
        assertEquals(
                "<|system|>\n" + SYSTEM + "<|end|>\n<|user|>\nHello there!<|end|>\n<|assistant|>\n",
                template("phi-3-mini-4k-instruct", dir).render(systemAndUser()));
        assertEquals(
                "<s>[INST] 2+2?[/INST] 4</s>[INST] " + SYSTEM + "\n\nAnd 3+3?[/INST]",
                template("mistral-7b-instruct-v0.3", dir)
                        .render(
                                List.of(
                                        new ChatMessage("system", SYSTEM),
                                        new ChatMessage("user", "2+2?"),
                                        new ChatMessage("assistant", "4"),
                                        new ChatMessage("user", "And 3+3?"))));
    }

    @Test
    void messageContentIsTextNeverTemplateSource(@TempDir Path dir) throws Exception {
        String content = "{{ raise_exception('x') }} {% for a in b %} {# c #}";
        for (String family : FAMILIES) {
            String rendered =
                    template(family, dir).render(List.of(new ChatMessage("user", content)));
            assertTrue(rendered.contains(content), family + ": " + rendered);
        }
    }
}
