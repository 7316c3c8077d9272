package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.training.Perplexity;
import io.github.djlllmzoo.defaultmodel.StoryCorpus;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** The committed default model ({@code models/default}): loads without --model and writes stories. */
class DefaultModelTest {

    /** The seed and story count of the training corpus (see models/default/README.md). */
    private static final long TRAINING_SEED = 42;
    private static final int TRAINING_STORIES = 8000;

    /** Held-out perplexity measured after training: 1.87 (models/default/README.md); about twice that. */
    private static final double PERPLEXITY_BOUND = 3.7;

    private static final Pattern NON_LETTERS = Pattern.compile("[^A-Za-z]+");

    @Test
    void greedyContinuationOfOnceUponATimeUsesOnlyCorpusWords() {
        Set<String> corpusWords = words(new StoryCorpus(TRAINING_SEED).generate(TRAINING_STORIES));

        CliRunner run =
                CliRunner.run("generate", "--prompt", "Once upon a time", "--greedy", "--max-new-tokens", "40", "--output", "json");

        assertEquals(0, run.exitCode, run.err);
        JsonObject json = JsonParser.parseString(run.out.strip()).getAsJsonObject();
        String text = json.get("text").getAsString();
        assertTrue(json.getAsJsonArray("ids").size() > 0, run.out);
        List<String> generated = Arrays.stream(NON_LETTERS.split(text.strip())).filter(w -> !w.isEmpty()).toList();
        assertTrue(generated.size() >= 5, "too few words in: " + text);
        // The last word may be cut by the token limit: it must start a corpus word.
        String last = generated.get(generated.size() - 1);
        for (String word : generated.subList(0, generated.size() - 1)) {
            assertTrue(corpusWords.contains(word), "'" + word + "' is not a corpus word, in: " + text);
        }
        assertTrue(corpusWords.stream().anyMatch(w -> w.startsWith(last)), "'" + last + "' starts no corpus word, in: " + text);
    }

    @Test
    void heldOutPerplexityOnFreshStoriesIsLow() throws Exception {
        List<String> fresh = StoryCorpus.splitStories(new StoryCorpus(TRAINING_SEED + 1000).generate(100));
        try (LocalModel model = LocalModel.load(DefaultModel.directory());
                NDManager manager = model.model().getNDManager().newSubManager()) {
            Perplexity perplexity =
                    Perplexity.evaluate(model.block(), MakeDefaultModelCommand.packed(model.tokenizer(), fresh, model.eosTokenIds().get(0), 128), manager, 8);

            assertTrue(perplexity.value() < PERPLEXITY_BOUND,
                    "held-out perplexity " + perplexity.value() + " over " + perplexity.tokens() + " tokens");
        }
    }

    private static Set<String> words(String text) {
        return Arrays.stream(NON_LETTERS.split(text)).filter(w -> !w.isEmpty()).collect(Collectors.toCollection(HashSet::new));
    }
}
