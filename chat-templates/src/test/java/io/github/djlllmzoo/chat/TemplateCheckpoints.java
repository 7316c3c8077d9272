package io.github.djlllmzoo.chat;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

/** Checkpoints for tests that wear a real family's chat template. */
public final class TemplateCheckpoints {

    private TemplateCheckpoints() {}

    /**
     * A copy of a checkpoint with a family's chat template added to its tokenizer_config.json.
     *
     * @param checkpoint the checkpoint directory
     * @param family a template resource name, e.g. {@code qwen2.5-instruct}
     * @param out the directory of the copy
     * @return {@code out}
     */
    public static Path withTemplate(Path checkpoint, String family, Path out) throws Exception {
        Files.createDirectories(out);
        try (Stream<Path> files = Files.list(checkpoint)) {
            for (Path file : files.toList()) {
                Files.copy(file, out.resolve(file.getFileName()));
            }
        }
        Path config = out.resolve(CheckpointFiles.TOKENIZER_CONFIG);
        JsonObject json = JsonParser.parseString(Files.readString(config)).getAsJsonObject();
        json.add(
                "chat_template",
                ChatTemplateFamiliesTest.tokenizerConfig(family).get("chat_template"));
        Files.writeString(config, json.toString(), StandardCharsets.UTF_8);
        return out;
    }
}
