package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.translators.BatchGenerator;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import java.util.Arrays;
import java.util.List;

/**
 * Greedy generation for prompts of different lengths in one left-padded batch gives every prompt
 * the ids it gets alone, and the full golden prompt its golden continuation, for every Llama-shaped
 * family.
 */
class BatchedGoldenGenerationTest {

    @ParameterizedTest
    @MethodSource("io.github.djlllmzoo.zoo.GoldenCase#llamaShaped")
    void leftPaddedBatchGeneratesWhatEachPromptGeneratesAlone(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        long[] full = golden.promptIds();
        long[] shorter = Arrays.copyOf(full, full.length / 2);
        GenerationConfig config =
                GenerationConfig.builder()
                        .maxNewTokens(golden.greedyIds().length)
                        .eosTokenIds(List.of())
                        .build();
        try (LocalModel model = LocalModel.load(golden.dir());
                NDManager manager = model.model().getNDManager().newSubManager()) {
            List<GenerationResult> batch =
                    new BatchGenerator(model.block(), manager, null)
                            .generate(
                                    List.of(
                                            GenerationRequest.ofIds(shorter, config),
                                            GenerationRequest.ofIds(full, config)),
                                    null);
            assertEquals(2, batch.size());
            assertArrayEquals(
                    model.generator().generateGreedy(shorter, config).tokenIds(),
                    batch.get(0).tokenIds(),
                    name + ": padded short prompt");
            assertArrayEquals(golden.greedyIds(), batch.get(1).tokenIds(), name + ": full prompt");
        }
    }
}
