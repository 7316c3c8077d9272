package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.translators.GeneratedSequence;
import io.github.djlllmzoo.translators.GenerationConfig;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import java.util.List;
import java.util.Locale;

/**
 * Every golden case (GPT-2 and Llama, F32/F16/BF16) loaded from its Hugging Face-layout directory
 * reproduces the independent float64 reference: prompt log-probabilities within 1e-3 and the greedy
 * continuation exactly.
 */
class GoldenCasesTest {

    @ParameterizedTest
    @ValueSource(
            strings = {
                "gpt2-tiny",
                "gpt2-f16",
                "gpt2-wide",
                "llama-gqa",
                "llama-mqa-tied-bf16",
                "llama3-rope-scaling"
            })
    void reproducesPromptLogprobsAndGreedyIds(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        try (LocalModel model = LocalModel.load(golden.dir())) {
            float[] logprobs = model.generator().scoreTokens(golden.promptIds());
            assertEquals(golden.promptLogprobs().length, logprobs.length);
            double maxError = 0;
            for (int i = 0; i < logprobs.length; i++) {
                maxError = Math.max(maxError, Math.abs(logprobs[i] - golden.promptLogprobs()[i]));
            }
            System.out.printf(
                    Locale.ROOT, "golden %s: max |logprob - golden| = %.3g%n", name, maxError);
            assertTrue(
                    maxError <= GoldenCase.LOGPROB_TOLERANCE,
                    name + ": max |logprob - golden| = " + maxError);

            GenerationConfig config =
                    GenerationConfig.builder()
                            .maxNewTokens(golden.greedyIds().length)
                            .eosTokenIds(List.of())
                            .build();
            GeneratedSequence generated =
                    model.generator().generateGreedy(golden.promptIds(), config);
            assertArrayEquals(golden.greedyIds(), generated.tokenIds(), name + ": greedy ids");
        }
    }
}
