package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.translators.GeneratedSequence;
import io.github.djlllmzoo.translators.GenerationConfig;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

/**
 * Every golden case (GPT-2, Llama, Qwen2, Qwen3, Phi-3; F32/F16/BF16) loaded from its Hugging
 * Face-layout directory reproduces the float64 reference: prompt log-probabilities within 1e-3 and the greedy
 * continuation exactly.
 */
class GoldenCasesTest {

    static Stream<String> cases() {
        return Stream.concat(Stream.of("gpt2-tiny", "gpt2-f16", "gpt2-wide"), GoldenCase.llamaShaped().stream());
    }

    @ParameterizedTest
    @MethodSource("cases")
    void reproducesPromptLogprobsAndGreedyIds(String name) throws Exception {
        reproduces(name, null);
    }

    /**
     * Checks a golden case's prompt log-probabilities and greedy ids on the CPU.
     *
     * @param name the case
     * @param kernels the kernels the model computes with, or {@code null} for those it chooses
     */
    static void reproduces(String name, Kernels kernels) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        try (LocalModel model = LocalModel.load(golden.dir())) {
            if (kernels != null) {
                model.block().useKernels(kernels);
            }
            float[] logprobs = model.generator().scoreTokens(golden.promptIds());
            assertEquals(golden.promptLogprobs().length, logprobs.length);
            double maxError = 0;
            for (int i = 0; i < logprobs.length; i++) {
                maxError = Math.max(maxError, Math.abs(logprobs[i] - golden.promptLogprobs()[i]));
            }
            System.out.printf(
                    Locale.ROOT, "golden %s (%s): max |logprob - golden| = %.3g%n", name, model.block().kernels(), maxError);
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
