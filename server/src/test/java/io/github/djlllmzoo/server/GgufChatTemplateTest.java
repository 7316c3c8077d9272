package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.github.djlllmzoo.chat.ChatMessage;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.gguf.GgufType;
import io.github.djlllmzoo.zoo.gguf.GoldenGguf;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A GGUF file's {@code tokenizer.chat_template} is the template the server renders its chats with. */
class GgufChatTemplateTest {

    private static final String TEMPLATE = "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}{% endfor %}"
            + "{% if add_generation_prompt %}<|assistant|>{% endif %}";

    @TempDir Path tmp;

    @Test
    void theChatTemplateOfAGgufFileRendersTheConversation() throws Exception {
        Path golden = Path.of(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "qwen2-bias");
        Path file = tmp.resolve("qwen2.gguf");
        GoldenGguf.write(golden, file, GgufType.F32, true, TEMPLATE);
        try (LocalModel model = LocalModel.load(file)) {
            ChatTemplate template = ChatTemplate.forCheckpoint(model.dir());
            assertFalse(template.isFallback(), "the file's template, not the fallback");
            String prompt = template.render(
                    List.of(new ChatMessage("system", "be brief"), new ChatMessage("user", "hi")), true, Map.of());
            assertEquals("<|system|>be brief<|user|>hi<|assistant|>", prompt);
            assertArrayEquals(model.tokenizer().encode(prompt), template.encode(prompt, model.tokenizer()));
        }
    }
}
