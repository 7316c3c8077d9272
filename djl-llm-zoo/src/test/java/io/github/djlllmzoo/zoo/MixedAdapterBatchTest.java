package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.inference.Predictor;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.translate.TranslateException;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.LoraConfig;
import io.github.djlllmzoo.blocks.LoraWeights;
import io.github.djlllmzoo.translators.ContinuousBatch;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.PrefixCache;
import io.github.djlllmzoo.translators.SequenceState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Requests for four LoRA adapters and the base model in one {@code Predictor.batchPredict} of 8
 * rows: each row generates (greedy) what its request generates alone, on a golden checkpoint with
 * adapters whose B is random (so each adapter changes the output), with the CPU kernels and with
 * the engine's operations, and the batch leaves no array behind.
 */
class MixedAdapterBatchTest {

    private static final int NEW_TOKENS = 8;
    /** Each row's adapter: the four adapters and the base model ({@code null}), two rows each but {@code a3}. */
    private static final List<String> ROW_ADAPTERS = Arrays.asList("a0", null, "a1", "a2", "a3", "a1", null, "a0");

    @ParameterizedTest
    @ValueSource(strings = {"llama-gqa", "phi3-fused", "gpt2-tiny"})
    void eachRowOfAMixedAdapterBatchGeneratesWhatItsRequestGeneratesAlone(String name) throws Exception {
        mixedBatchMatchesAlone(name, null);
    }

    @ParameterizedTest
    @ValueSource(strings = {"llama-gqa", "phi3-fused"})
    void eachRowOfAMixedAdapterBatchGeneratesWhatItsRequestGeneratesAloneWithTheEnginesOperations(String name)
            throws Exception {
        mixedBatchMatchesAlone(name, EngineKernels.INSTANCE);
    }

    @Test
    void aRequestForAnAdapterTheModelDoesNotHoldIsRefusedNamingIt() throws Exception {
        GoldenCase golden = GoldenCase.load("llama-gqa");
        try (LocalModel model = LocalModel.load(golden.dir());
                Predictor<GenerationRequest, GenerationResult> predictor = model.newGenerationPredictor()) {
            attachAdapters(model);
            GenerationRequest request = GenerationRequest.ofIds(golden.promptIds(), config()).withAdapter("sql");
            TranslateException e = assertThrows(TranslateException.class, () -> predictor.batchPredict(List.of(request)));
            String message = String.valueOf(e.getCause() != null ? e.getCause().getMessage() : e.getMessage());
            assertTrue(message.contains("'sql'") && message.contains("[a0, a1, a2, a3]"), message);
        }
    }

    /**
     * Sequences for the four adapters and the base model joining a continuous batch of 4 rows one a
     * step (and as rows free up) each generate what their request generates alone: a decode step
     * selects each row's adapter, a prefill chunk its sequence's.
     */
    @ParameterizedTest
    @ValueSource(strings = {"llama-gqa", "phi3-fused"})
    void sequencesOfMixedAdaptersJoiningAContinuousBatchEachGenerateWhatTheyGenerateAlone(String name)
            throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        try (LocalModel model = LocalModel.load(golden.dir())) {
            attachAdapters(model);
            long[] full = golden.promptIds();
            int window = model.config().maxPositions();
            List<SequenceState> states = new ArrayList<>();
            List<long[]> alone = new ArrayList<>();
            try (Predictor<GenerationRequest, GenerationResult> predictor = model.newGenerationPredictor()) {
                for (int i = 0; i < ROW_ADAPTERS.size(); i++) {
                    long[] prompt = Arrays.copyOf(full, full.length - i % 3);
                    GenerationConfig config = GenerationConfig.builder().maxNewTokens(NEW_TOKENS - i % 4)
                            .eosTokenIds(List.of()).build(); // rows end at different steps
                    alone.add(predictor.predict(GenerationRequest.ofIds(prompt, config)
                            .withAdapter(ROW_ADAPTERS.get(i))).tokenIds());
                    states.add(SequenceState.builder(prompt, config).contextWindow(window)
                            .adapter(ROW_ADAPTERS.get(i)).build().get(0));
                }
            }
            try (NDManager manager = model.model().getNDManager().newSubManager();
                    ContinuousBatch batch = ContinuousBatch.builder(model.block(), manager)
                            .maxRows(4).tokenBudget(4L * 64)
                            .prefillChunk(4).build()) {
                int next = 0;
                for (int step = 0; next < states.size() || batch.sequences() > 0; step++) {
                    SequenceState state = next < states.size() ? states.get(next) : null;
                    if (state != null && batch.canJoin(1, batch.need(state.promptLength(), state.budget()))) {
                        assertTrue(batch.join(state));
                        next++;
                    }
                    batch.step();
                    assertTrue(step < 500, "the batch ends");
                }
            }
            for (int i = 0; i < states.size(); i++) {
                assertArrayEquals(alone.get(i), states.get(i).completion().tokenIds(),
                        name + ": sequence " + i + " (" + ROW_ADAPTERS.get(i) + ")");
            }
        }
    }

    /**
     * The same prompt for different adapters (and none), one sequence after another, through a
     * continuous batch with a prefix cache: a sequence reuses the prompt's keys and values only where
     * they were computed with its own adapter, and each generates what its request generates alone.
     */
    @Test
    void aPromptPrefilledWithOneAdapterIsReusedOnlyBySequencesOfThatAdapter() throws Exception {
        GoldenCase golden = GoldenCase.load("llama-gqa");
        List<String> adapters = Arrays.asList("a0", null, "a1", "a0", null);
        try (LocalModel model = LocalModel.load(golden.dir())) {
            attachAdapters(model);
            long[] prompt = golden.promptIds();
            int window = model.config().maxPositions();
            List<long[]> alone = new ArrayList<>();
            try (Predictor<GenerationRequest, GenerationResult> predictor = model.newGenerationPredictor()) {
                for (String adapter : adapters) {
                    alone.add(predictor.predict(GenerationRequest.ofIds(prompt, config()).withAdapter(adapter))
                            .tokenIds());
                }
            }
            try (NDManager manager = model.model().getNDManager().newSubManager();
                    ContinuousBatch batch = ContinuousBatch.builder(model.block(), manager)
                            .maxRows(2).tokenBudget(2L * 64)
                            .prefillChunk(4).prefixCacheTokens(256).build()) {
                for (int i = 0; i < adapters.size(); i++) {
                    SequenceState state = SequenceState.builder(prompt, config()).contextWindow(window)
                            .adapter(adapters.get(i)).build().get(0);
                    assertTrue(batch.join(state));
                    for (int step = 0; batch.sequences() > 0; step++) {
                        batch.step();
                        assertTrue(step < 500, "the batch ends");
                    }
                    assertArrayEquals(alone.get(i), state.completion().tokenIds(),
                            "sequence " + i + " (" + adapters.get(i) + ")");
                }
                PrefixCache.Stats stats = batch.prefixCacheStats();
                assertEquals(2, stats.hits(), "the second a0 and the second base sequence: " + stats);
                int chunk = 4; // the batch's prefill chunk: a reuse is whole chunks
                assertEquals(2L * ((prompt.length - 1) / chunk * chunk), stats.reusedTokens());
                assertEquals(3, stats.entries(), "one prompt per adapter: " + stats);
            }
        }
    }

    private static void mixedBatchMatchesAlone(String name, Kernels kernels) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        try (LocalModel model = LocalModel.load(golden.dir())) {
            if (kernels != null) {
                model.block().useKernels(kernels);
            }
            attachAdapters(model);
            long[] full = golden.promptIds();
            List<GenerationRequest> requests = new ArrayList<>();
            for (int i = 0; i < ROW_ADAPTERS.size(); i++) { // prompts of different lengths: a padded batch
                long[] prompt = Arrays.copyOf(full, full.length - i % 3);
                requests.add(GenerationRequest.ofIds(prompt, config()).withAdapter(ROW_ADAPTERS.get(i)));
            }
            NDManager manager = model.model().getNDManager();
            try (Predictor<GenerationRequest, GenerationResult> predictor = model.newGenerationPredictor()) {
                List<GenerationResult> batch = predictor.batchPredict(requests); // also makes the model's own tables
                int arrays = manager.getManagedArrays().size();
                List<GenerationResult> again = predictor.batchPredict(requests);
                assertEquals(arrays, manager.getManagedArrays().size(), name + ": arrays left by a mixed batch");
                for (int i = 0; i < requests.size(); i++) {
                    assertArrayEquals(predictor.predict(requests.get(i)).tokenIds(), batch.get(i).tokenIds(),
                            name + ": row " + i + " (" + ROW_ADAPTERS.get(i) + ")");
                    assertArrayEquals(batch.get(i).tokenIds(), again.get(i).tokenIds(), name + ": row " + i + " again");
                }
                Set<String> outputs = new HashSet<>();
                for (String adapter : Arrays.asList("a0", "a1", "a2", "a3", null)) {
                    GenerationRequest request = GenerationRequest.ofIds(full, config()).withAdapter(adapter);
                    outputs.add(Arrays.toString(predictor.predict(request).tokenIds()));
                }
                assertEquals(5, outputs.size(), name + ": the four adapters and the base model generate apart " + outputs);
            }
        }
    }

    private static GenerationConfig config() {
        return GenerationConfig.builder().maxNewTokens(NEW_TOKENS).eosTokenIds(List.of()).build();
    }

    /**
     * Attaches {@code a0} to {@code a3}: ranks 2, 4, 2 and 8 over every projection but {@code a3}'s
     * (the attention's only), each B random so the adapters differ.
     */
    private static void attachAdapters(LocalModel model) {
        int[] ranks = {2, 4, 2, 8};
        Engine.getEngine("PyTorch").setRandomSeed(34);
        for (int i = 0; i < ranks.length; i++) {
            LoraConfig config = i == 3
                    ? new LoraConfig(ranks[i], 2 * ranks[i], 0, LoraAdapter.attentionTargets(model.block()))
                    : new LoraConfig(ranks[i], 2 * ranks[i], 0, List.of(), ".*(layers|h)\\.[0-9]+\\..+"); // every projection but the head
            LoraAdapter adapter = LoraAdapter.declare(model.block(), config, false)
                    .initialize(model.model().getNDManager(), DataType.FLOAT32);
            for (LoraWeights pair : adapter.modules().values()) {
                pair.b().getArray().addi(model.model().getNDManager().randomNormal(0, 0.3f, pair.bShape(), DataType.FLOAT32));
            }
            adapter.attach("a" + i);
        }
    }
}
