package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.translators.BatchGenerator;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;
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

    /** Shorter than either prompt. */
    private static final int WINDOW = 4;

    @TempDir Path temp;

    @ParameterizedTest
    @MethodSource("io.github.djlllmzoo.zoo.GoldenCase#llamaShaped")
    void leftPaddedBatchGeneratesWhatEachPromptGeneratesAlone(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        List<GenerationResult> batch = generateBatchAndAlone(name, golden.dir(), golden);
        assertArrayEquals(golden.greedyIds(), batch.get(1).tokenIds(), name + ": full prompt");
    }

    /**
     * The same with a sliding window of {@value #WINDOW} tokens, shorter than both prompts, on the
     * families whose golden configs have none; both rows are compared with their prompts alone.
     */
    @ParameterizedTest
    @MethodSource("io.github.djlllmzoo.zoo.GoldenCase#windowless")
    void leftPaddedBatchGeneratesWhatEachPromptGeneratesAloneUnderAWindow(String name)
            throws Exception {
        Path dir = GoldenCase.withWindow(name, WINDOW, temp.resolve(name));
        generateBatchAndAlone(name + " window " + WINDOW, dir, GoldenCase.load(name));
    }

    /**
     * Prompts of one length share their positions, so a decode step gathers one row of rotation
     * factors for the whole batch: with the engine's operations (what computes on a GPU, whose decode
     * step rotates every row's heads with that one row's matrices) each row still generates what it
     * generates alone.
     */
    @ParameterizedTest
    @MethodSource("io.github.djlllmzoo.zoo.GoldenCase#llamaShaped")
    void equalLengthBatchWithTheEnginesOperationsGeneratesWhatEachPromptGeneratesAlone(String name)
            throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        long[] full = golden.promptIds();
        long[] reversed = new long[full.length];
        for (int i = 0; i < full.length; i++) {
            reversed[i] = full[full.length - 1 - i];
        }
        GenerationConfig config =
                GenerationConfig.builder().maxNewTokens(golden.greedyIds().length).eosTokenIds(List.of()).build();
        try (LocalModel model = LocalModel.load(golden.dir());
                NDManager manager = model.model().getNDManager().newSubManager()) {
            model.block().useKernels(EngineKernels.INSTANCE);
            List<GenerationResult> batch = new BatchGenerator(model.block(), manager, null)
                    .generate(List.of(GenerationRequest.ofIds(full, config), GenerationRequest.ofIds(reversed, config)), null);
            assertArrayEquals(golden.greedyIds(), batch.get(0).tokenIds(), name + ": golden prompt in the batch");
            assertArrayEquals(
                    model.generator().generateGreedy(reversed, config).tokenIds(),
                    batch.get(1).tokenIds(),
                    name + ": reversed prompt in the batch");
        }
    }

    /**
     * Greedy generation of {@code prompt}'s ids and their first half in one batch; asserts each row
     * generates what its prompt generates alone.
     *
     * @return the batch's results, short prompt first
     */
    private static List<GenerationResult> generateBatchAndAlone(
            String name, Path dir, GoldenCase prompt) throws Exception {
        long[] full = prompt.promptIds();
        long[] shorter = Arrays.copyOf(full, full.length / 2);
        GenerationConfig config =
                GenerationConfig.builder()
                        .maxNewTokens(prompt.greedyIds().length)
                        .eosTokenIds(List.of())
                        .build();
        try (LocalModel model = LocalModel.load(dir);
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
            assertArrayEquals(
                    model.generator().generateGreedy(full, config).tokenIds(),
                    batch.get(1).tokenIds(),
                    name + ": full prompt");
            return batch;
        }
    }
}
