package io.github.djlllmzoo.integration;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.cli.LlmZoo;
import io.github.djlllmzoo.training.PackedTextDataset;
import io.github.djlllmzoo.training.Perplexity;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;
import java.util.Locale;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The fine-tuning check, end to end through {@code llmzoo finetune} with the real GPT-2
 * tokenizer: a small GPT-2-shaped model (2 layers, 64 wide, the full 50257-token vocabulary) is
 * first trained from scratch on one domain (generated everyday stories), then fine-tuned on another
 * (generated cooking recipes); its perplexity on held-out recipes must fall at least by half.
 * Perplexities are measured by loading each checkpoint through the zoo, and must agree with the
 * trainer's own held-out evaluation of the in-memory model.
 *
 * <p>What this shows and what it does not: the stories model has never seen most recipe tokens, so
 * its recipe perplexity starts near the size of the vocabulary and halving it is easy; the stronger
 * evidence is where fine-tuning ends, close to the in-domain perplexity the stories model reached
 * on stories. The text is template-generated, far simpler than natural language.
 */
class FineTuneLowersHeldOutPerplexityTest {

    private static final Path TOKENIZER =
            Paths.get(System.getProperty("llmzoo.fixtures", "../../shared/fixtures"), "gpt2-tokenizer");
    private static final int SEQ_LEN = 32;

    @TempDir Path temp;

    @Test
    void fineTuningOnANewDomainAtLeastHalvesHeldOutPerplexity() throws Exception {
        assumeTrue(Files.isRegularFile(TOKENIZER.resolve("tokenizer.json")), "needs the GPT-2 tokenizer fixture");
        Path base = Files.createDirectories(temp.resolve("gpt2-small-random"));
        Files.writeString(
                base.resolve("config.json"),
                "{\"model_type\": \"gpt2\", \"vocab_size\": 50257, \"n_positions\": 128, \"n_embd\": 64,"
                        + " \"n_layer\": 2, \"n_head\": 4, \"bos_token_id\": 50256, \"eos_token_id\": 50256}\n");
        for (String name : List.of("tokenizer.json", "vocab.json", "merges.txt", "tokenizer_config.json", "special_tokens_map.json")) {
            Files.copy(TOKENIZER.resolve(name), base.resolve(name));
        }
        Path stories = write("stories.txt", DomainText.stories(400, 1));
        Path recipes = write("recipes.txt", DomainText.recipes(150, 2));
        Path heldOut = write("recipes-held-out.txt", DomainText.recipes(40, 3));

        long start = System.nanoTime();
        Path pretrained = temp.resolve("stories-model");
        run("finetune", "--model", base.toString(), "--from-scratch", "--data", stories.toString(),
                "--steps", "80", "--batch", "8", "--seq-len", Integer.toString(SEQ_LEN), "--lr", "3e-3",
                "--warmup", "8", "--eval-every", "0", "--save-every", "0", "--log-every", "20", "--out", pretrained.toString());
        double before = perplexity(pretrained, heldOut);
        double pretrainSeconds = (System.nanoTime() - start) / 1e9;

        Path tuned = temp.resolve("recipes-model");
        String summary = run("finetune", "--model", pretrained.toString(), "--data", recipes.toString(), "--eval-data", heldOut.toString(),
                "--steps", "60", "--batch", "8", "--seq-len", Integer.toString(SEQ_LEN), "--lr", "3e-3",
                "--warmup", "6", "--eval-every", "0", "--save-every", "0", "--log-every", "10", "--out", tuned.toString(),
                "--output", "json");
        double after = perplexity(tuned, heldOut);
        double fineTuneSeconds = (System.nanoTime() - start) / 1e9 - pretrainSeconds;

        System.out.printf(Locale.ROOT,
                "held-out recipe perplexity: %.2f after training on stories (%.1f s) -> %.2f after fine-tuning on recipes (%.1f s)%n",
                before, pretrainSeconds, after, fineTuneSeconds);
        assertTrue(after <= before / 2, "perplexity " + before + " -> " + after + " is not halved");
        // The trainer's own held-out evaluation, on the in-memory model, agrees with the reloaded checkpoints.
        JsonObject reported = JsonParser.parseString(summary).getAsJsonObject();
        assertEquals(before, reported.get("eval_perplexity_before").getAsDouble(), before * 1e-4);
        assertEquals(after, reported.get("eval_perplexity_after").getAsDouble(), after * 1e-4);
    }

    private Path write(String name, String text) throws Exception {
        return Files.writeString(temp.resolve(name), text, StandardCharsets.UTF_8);
    }

    /** Runs the command line, echoing its progress, and returns its stdout. */
    private static String run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = LlmZoo.execute(args, new PrintWriter(out), new PrintWriter(err));
        System.out.print(err);
        assertEquals(0, code, err.toString());
        return out.toString();
    }

    /** The checkpoint's perplexity on a text file, through the zoo and the packed-text dataset. */
    private static double perplexity(Path checkpoint, Path text) throws Exception {
        try (LocalModel model = LocalModel.load(checkpoint)) {
            PackedTextDataset data =
                    PackedTextDataset.builder()
                            .setTokens(
                                    PackedTextDataset.tokenizeFiles(
                                            model.tokenizer(),
                                            List.of(text),
                                            model.documentSeparatorId(),
                                            model.config().vocabSize()))
                            .setSequenceLength(SEQ_LEN)
                            .build();
            return Perplexity.evaluate(model.block(), data, model.model().getNDManager(), 8).value();
        }
    }
}
