package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.modality.nlp.generate.CausalLMOutput;
import ai.djl.modality.nlp.generate.SearchConfig;
import ai.djl.modality.nlp.generate.TextGenerator;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** DJL's own {@link TextGenerator} searches running on a {@link CausalLmBlock} through the adapter. */
class CausalLmOutputTranslatorTest {

    private static final long[] PROMPT = {5, 17, 300, 42, 9, 101, 77};
    private static final int NEW_TOKENS = 10;

    private static Model model;
    private static Predictor<NDList, CausalLMOutput> predictor;

    @BeforeAll
    static void load() throws Exception {
        model = TinyModels.gpt2(TinyModels.SMALL_VOCAB, 64, 7);
        predictor =
                model.newPredictor(
                        new GenerationTranslatorFactory()
                                .newInstance(NDList.class, CausalLMOutput.class, model, Map.of()));
    }

    @AfterAll
    static void close() {
        predictor.close();
        model.close();
    }

    /** Our greedy continuation, EOS disabled as DJL's search does not stop at EOS. */
    private static long[] ourGreedy(long[] prompt) {
        GenerationConfig config = GenerationConfig.builder().maxNewTokens(NEW_TOKENS).build();
        long[] ids = new Generator((CausalLmBlock) model.getBlock(), model.getNDManager()).generateGreedy(prompt, config).tokenIds();
        return ModelLogits.concat(prompt, ids);
    }

    /** DJL's search config; its EOS and pad id (50256) lie outside this model's vocabulary. */
    private static SearchConfig searchConfig(int promptLength) {
        SearchConfig config = new SearchConfig();
        config.setMaxSeqLength(promptLength + NEW_TOKENS);
        return config;
    }

    private static long[][] run(String search, SearchConfig config, long[]... prompts) throws Exception {
        try (NDManager manager = model.getNDManager().newSubManager()) {
            long[] flat = Arrays.stream(prompts).flatMapToLong(Arrays::stream).toArray();
            NDArray ids = manager.create(flat, new Shape(prompts.length, prompts[0].length));
            NDArray out = new TextGenerator(predictor, search, config).generate(ids);
            long[][] rows = new long[(int) out.getShape().get(0)][];
            for (int i = 0; i < rows.length; i++) {
                rows[i] = out.get(i).toLongArray();
            }
            return rows;
        }
    }

    @Test
    void djlGreedySearchEqualsOurGreedy() throws Exception {
        long[][] out = run("greedy", searchConfig(PROMPT.length), PROMPT);
        assertArrayEquals(ourGreedy(PROMPT), out[0]);
    }

    @Test
    void djlGreedySearchOverALeftPaddedBatchEqualsEachRowAlone() throws Exception {
        long pad = TinyModels.SMALL_VOCAB - 1;
        long[] shortPrompt = {300, 42, 9};
        long[] padded = new long[PROMPT.length];
        Arrays.fill(padded, pad);
        System.arraycopy(shortPrompt, 0, padded, PROMPT.length - shortPrompt.length, shortPrompt.length);
        SearchConfig config = searchConfig(PROMPT.length);
        config.setPadTokenId(pad);
        long[][] out = run("greedy", config, PROMPT, padded);
        assertArrayEquals(ourGreedy(PROMPT), out[0]);
        long[] shortAlone = ourGreedy(shortPrompt);
        assertArrayEquals(shortAlone, Arrays.copyOfRange(out[1], PROMPT.length - shortPrompt.length, out[1].length));
    }

    @Test
    void djlBeamSearchWithOneBeamEqualsGreedyAndWithThreeGivesThreeBeams() throws Exception {
        SearchConfig one = searchConfig(PROMPT.length);
        one.setBeam(1);
        assertArrayEquals(ourGreedy(PROMPT), run("beam", one, PROMPT)[0]);
        SearchConfig three = searchConfig(PROMPT.length);
        three.setBeam(3);
        long[][] beams = run("beam", three, PROMPT);
        assertEquals(3, beams.length);
        Set<String> distinct = new HashSet<>();
        for (long[] beam : beams) {
            assertEquals(PROMPT.length + NEW_TOKENS, beam.length);
            assertArrayEquals(PROMPT, Arrays.copyOf(beam, PROMPT.length));
            distinct.add(Arrays.toString(beam));
        }
        assertEquals(3, distinct.size());
    }

    @Test
    void djlContrastiveSearchWithoutPenaltyEqualsGreedyAndWithPenaltyDiverges() throws Exception {
        SearchConfig plain = searchConfig(PROMPT.length);
        plain.setAlpha(0f);
        long[] greedy = ourGreedy(PROMPT);
        assertArrayEquals(greedy, run("contrastive", plain, PROMPT)[0]);
        SearchConfig penalized = searchConfig(PROMPT.length);
        penalized.setAlpha(0.9f);
        long[] contrastive = run("contrastive", penalized, PROMPT)[0];
        assertEquals(List.of(PROMPT.length + NEW_TOKENS), List.of(contrastive.length));
        assertNotEquals(Arrays.toString(greedy), Arrays.toString(contrastive));
    }
}
