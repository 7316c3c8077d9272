package io.github.djlllmzoo.chat;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Chat templates of real checkpoints (from their {@code tokenizer_config.json}), checked against
 * the renderings of Python's Jinja2 with Hugging Face's settings ({@code
 * src/test/resources/chat-templates/make_expected.py} wrote {@code expected.json}).
 */
class ChatTemplateTest {

    private static String resource(String name) throws IOException {
        try (InputStream in =
                ChatTemplateTest.class.getResourceAsStream("/chat-templates/" + name)) {
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    private static JsonObject expected() throws IOException {
        return JsonParser.parseString(resource("expected.json")).getAsJsonObject();
    }

    private static List<ChatMessage> conversation() throws IOException {
        List<ChatMessage> messages = new ArrayList<>();
        for (JsonElement e : expected().getAsJsonArray("messages")) {
            JsonObject m = e.getAsJsonObject();
            messages.add(
                    new ChatMessage(m.get("role").getAsString(), m.get("content").getAsString()));
        }
        return messages;
    }

    private static ChatTemplate checkpointTemplate(Path dir, String name) throws Exception {
        Files.writeString(
                dir.resolve(CheckpointFiles.TOKENIZER_CONFIG),
                resource(name + ".json"),
                StandardCharsets.UTF_8);
        return ChatTemplate.forCheckpoint(dir);
    }

    @ParameterizedTest
    @ValueSource(strings = {"tinyllama", "smollm", "llama3", "llama2"})
    void rendersCheckpointTemplatesAsHuggingFaceDoes(String name, @TempDir Path dir)
            throws Exception {
        ChatTemplate template = checkpointTemplate(dir, name);
        assertEquals(false, template.isFallback());
        assertEquals(
                expected().getAsJsonObject("rendered").get(name).getAsString(),
                template.render(conversation()));
    }

    @Test
    void raiseExceptionInATemplateRejectsTheConversationWithItsMessage(@TempDir Path dir)
            throws Exception {
        ChatTemplate llama2 = checkpointTemplate(dir, "llama2");
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                llama2.render(
                                        List.of(
                                                new ChatMessage("user", "a"),
                                                new ChatMessage("user", "b"))));
        assertTrue(e.getMessage().contains("Conversation roles must alternate"), e.getMessage());
    }

    @Test
    void withoutATemplateTheFallbackWritesRoleLinesThenAssistant(@TempDir Path dir)
            throws Exception {
        ChatTemplate none = ChatTemplate.forCheckpoint(dir);
        assertTrue(none.isFallback());
        List<ChatMessage> messages = conversation();
        StringBuilder expected = new StringBuilder();
        for (ChatMessage m : messages) {
            expected.append(m.role()).append(": ").append(m.content()).append('\n');
        }
        assertEquals(expected + "assistant:", none.render(messages));
        Files.writeString(
                dir.resolve(CheckpointFiles.TOKENIZER_CONFIG),
                "{\"bos_token\": \"<s>\"}",
                StandardCharsets.UTF_8);
        assertTrue(ChatTemplate.forCheckpoint(dir).isFallback());
    }

    @Test
    void aMalformedChatTemplateFieldIsATypedErrorNamingIt(@TempDir Path dir) throws Exception {
        Files.writeString(
                dir.resolve(CheckpointFiles.TOKENIZER_CONFIG),
                "{\"chat_template\": 42}",
                StandardCharsets.UTF_8);
        InvalidCheckpointException e =
                assertThrows(
                        InvalidCheckpointException.class, () -> ChatTemplate.forCheckpoint(dir));
        assertEquals("chat_template", e.getField());
        assertEquals(dir.resolve(CheckpointFiles.TOKENIZER_CONFIG), e.getFile());
    }

    @Test
    void theBosTokenIsNeverDoubledWhetherTheTemplateOrTheTokenizerWritesIt() throws Exception {
        String fixtures = System.getProperty("llmzoo.fixtures");
        Path dir = fixtures == null ? null : Paths.get(fixtures, "llama2-tokenizer");
        Assumptions.assumeTrue(
                dir != null && Files.isRegularFile(dir.resolve("tokenizer.json")),
                "no Llama 2 tokenizer fixture");
        long bos = 1;
        Map<String, String> tokens = Map.of("bos_token", "<s>", "eos_token", "</s>");
        JsonObject llama3 = JsonParser.parseString(resource("llama3.json")).getAsJsonObject();
        JsonObject tinyllama = JsonParser.parseString(resource("tinyllama.json")).getAsJsonObject();
        try (TextTokenizer tokenizer = TextTokenizer.load(dir)) {
            for (JsonObject config : List.of(llama3, tinyllama)) {
                ChatTemplate template =
                        ChatTemplate.of(config.get("chat_template").getAsString(), tokens);
                long[] ids = template.encode(template.render(conversation()), tokenizer);
                assertEquals(bos, ids[0], Arrays.toString(ids));
                assertNotEquals(
                        bos, ids[1], "one BOS, not two: " + Arrays.toString(Arrays.copyOf(ids, 4)));
            }
        }
    }
}
