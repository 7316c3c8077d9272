package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonParser;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import java.util.Locale;

/**
 * {@code llmzoo generate} and {@code score} on the golden checkpoints of the families that share
 * Llama's layout with their own twists: Qwen2 (q/k/v biases; tied BF16), Qwen3 (q/k norms), Phi-3
 * (fused projections), Mistral (a sliding window) and Gemma 1/2/3 (scaled embeddings, 1 + w norms,
 * GELU-tanh, soft-capping, local and global layers) reproduce Hugging Face's greedy ids exactly and
 * its prompt log-probabilities within the fixtures' 1e-3.
 */
class LlamaFamiliesCommandLineTest {

    @ParameterizedTest
    @ValueSource(strings = {"qwen2-bias", "qwen2-tied-bf16", "qwen3-qknorm", "phi3-fused", "mistral-sliding-window",
        "gemma-bf16", "gemma2-softcap-window", "gemma3-local-global"})
    void generatePrintsTheGoldenGreedyIds(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        CliRunner run =
                CliRunner.run(
                        "generate", "--model", golden.dir().toString(),
                        "--prompt-ids", golden.idList("prompt_ids"),
                        "--max-new-tokens", Integer.toString(golden.ids("greedy_ids").length),
                        "--greedy", "--output", "ids");
        assertEquals(0, run.exitCode, run.err);
        assertEquals(golden.idList("greedy_ids"), run.out.trim());
    }

    @ParameterizedTest
    @ValueSource(strings = {"qwen2-bias", "qwen2-tied-bf16", "qwen3-qknorm", "phi3-fused", "mistral-sliding-window",
        "gemma-bf16", "gemma2-softcap-window", "gemma3-local-global"})
    void scorePrintsTheGoldenPromptLogprobs(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        double[] expected = golden.numbers("prompt_logprobs");
        CliRunner run =
                CliRunner.run(
                        "score", "--model", golden.dir().toString(),
                        "--ids", golden.idList("prompt_ids"), "--output", "json");
        assertEquals(0, run.exitCode, run.err);
        JsonArray logprobs =
                JsonParser.parseString(run.out).getAsJsonObject().getAsJsonArray("token_logprobs");
        assertEquals(expected.length + 1, logprobs.size());
        double maxError = 0;
        for (int i = 1; i < logprobs.size(); i++) {
            maxError = Math.max(maxError, Math.abs(logprobs.get(i).getAsDouble() - expected[i - 1]));
        }
        System.out.printf(Locale.ROOT, "llmzoo score %s: max |logprob - golden| = %.3g%n", name, maxError);
        assertTrue(maxError <= 1e-3, name + ": max |logprob - golden| = " + maxError);
    }
}
