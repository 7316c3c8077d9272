package io.github.djlllmzoo.langchain4j;

import io.github.djlllmzoo.benchmarks.RandomGpt2Checkpoint;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.chat.ChatTemplateFamiliesTest;
import io.github.djlllmzoo.chat.TemplateCheckpoints;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Assumptions;

/**
 * A random GPT-2 checkpoint (GPT-2's real tokenizer, 32 wide, one layer) wearing Qwen2.5's chat
 * template, which renders tools and teaches {@code <tool_call>} blocks: a model whose choices are
 * random, so that only the constraints make its calls and answers valid.
 */
final class ToolCallingCheckpoint {

    private ToolCallingCheckpoint() {}

    /** Writes it under {@code dir}, skipping the test where the tokenizer fixture is absent. */
    static Path write(Path dir) throws Exception {
        String fixtures = System.getProperty("llmzoo.fixtures");
        Path tokenizer = fixtures == null ? null : Paths.get(fixtures, "gpt2-tokenizer");
        Assumptions.assumeTrue(
                tokenizer != null && Files.isRegularFile(tokenizer.resolve("tokenizer.json")),
                "no GPT-2 tokenizer fixture at " + tokenizer);
        Path plain = dir.resolveSibling(dir.getFileName() + "-plain");
        RandomGpt2Checkpoint.write(plain, tokenizer, 32, 1, 4, 2048, 7);
        return TemplateCheckpoints.withTemplate(plain, "qwen2.5-instruct", dir);
    }

    /** A family's template as its checkpoint publishes it, special tokens included. */
    static ChatTemplate template(String family, Path dir) throws Exception {
        Path familyDir = Files.createDirectories(dir.resolve(family));
        Files.writeString(
                familyDir.resolve(CheckpointFiles.TOKENIZER_CONFIG),
                ChatTemplateFamiliesTest.tokenizerConfig(family).toString(),
                StandardCharsets.UTF_8);
        return ChatTemplate.forCheckpoint(familyDir);
    }
}
