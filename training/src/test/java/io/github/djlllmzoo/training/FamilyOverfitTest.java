package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.util.Random;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Fine-tuning works for every model family: a tiny random model of each family, its {@code
 * config.json} as Hugging Face writes it, memorizes a few short sequences, its training loss
 * falling from about ln(V) (a random model's uniform guess over the V tokens) to under a tenth of
 * that. A family joins with one more line in {@link #families()}.
 */
class FamilyOverfitTest {

    /** The word-level test tokenizer's vocabulary, which every family's config uses. */
    private static final int VOCAB = TinyModels.WORDS.size();

    private static final int ROWS = 4;
    private static final int SEQUENCE = 8;

    @TempDir Path temp;

    /** Fields every tiny config shares: 2 layers, 16 wide, 4 query and 2 key/value heads. */
    private static String config(String modelType, String familyFields) {
        return "{\"model_type\": \"" + modelType + "\", \"vocab_size\": " + VOCAB + ","
                + " \"hidden_size\": 16, \"intermediate_size\": 32, \"num_hidden_layers\": 2,"
                + " \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                + " \"max_position_embeddings\": 32, \"rms_norm_eps\": 1e-6, \"rope_theta\": 10000.0,"
                + " \"hidden_act\": \"silu\", \"attention_dropout\": 0.0, \"tie_word_embeddings\": false,"
                + " \"bos_token_id\": 0, \"eos_token_id\": 0" + familyFields + "}\n";
    }

    /** One line per family: its {@code config.json}, with the fields that set it apart. */
    static Stream<Arguments> families() {
        return Stream.of(
                Arguments.of("llama", config("llama", "")),
                Arguments.of("mistral", config("mistral", ", \"head_dim\": 4, \"sliding_window\": 4")),
                Arguments.of("qwen2", config("qwen2", ", \"use_sliding_window\": false")),
                Arguments.of(
                        "qwen3",
                        config("qwen3", ", \"head_dim\": 8, \"attention_bias\": false,"
                                + " \"use_sliding_window\": false")),
                Arguments.of("phi3", config("phi3", ", \"pad_token_id\": 0, \"rope_scaling\": null")),
                Arguments.of(
                        "gemma",
                        config("gemma", ", \"head_dim\": 8, \"hidden_activation\": \"gelu_pytorch_tanh\"")),
                Arguments.of(
                        "gemma2",
                        config("gemma2", ", \"head_dim\": 4, \"hidden_activation\": \"gelu_pytorch_tanh\","
                                + " \"query_pre_attn_scalar\": 4, \"sliding_window\": 4,"
                                + " \"attn_logit_softcapping\": 5.0, \"final_logit_softcapping\": 10.0")),
                Arguments.of(
                        "gemma3",
                        config("gemma3_text", ", \"head_dim\": 8, \"hidden_activation\": \"gelu_pytorch_tanh\","
                                + " \"query_pre_attn_scalar\": 8, \"sliding_window\": 4,"
                                + " \"sliding_window_pattern\": 2, \"rope_local_base_freq\": 10000.0")));
    }

    /**
     * {@link #ROWS} sequences of random tokens, each starting with its own token, so that every next
     * token is determined by what precedes it and a model can reach zero loss.
     */
    private static PackedTextDataset memorizable(long seed) {
        Random random = new Random(seed);
        int[] tokens = new int[ROWS * SEQUENCE + 1];
        for (int i = 0; i < tokens.length; i++) {
            tokens[i] = i % SEQUENCE == 0 && i / SEQUENCE < ROWS ? i / SEQUENCE : random.nextInt(VOCAB);
        }
        return PackedTextDataset.builder().setTokens(tokens).setSequenceLength(SEQUENCE).build();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("families")
    void aTinyModelOfTheFamilyOverfitsAFewSequences(String family, String configJson)
            throws Exception {
        Path dir = TinyModels.checkpoint(temp.resolve(family), configJson, 3);
        PackedTextDataset data = memorizable(4);
        double uniform = Math.log(VOCAB);
        try (LocalModel model = LocalModel.load(dir)) {
            double before =
                    Perplexity.evaluate(model.block(), data, model.model().getNDManager(), ROWS)
                            .meanLoss();
            FineTuneSettings settings =
                    FineTuneSettings.builder()
                            .steps(200)
                            .batchSize(ROWS)
                            .sequenceLength(SEQUENCE)
                            .learningRate(1e-2f)
                            .warmupSteps(10)
                            .weightDecay(0)
                            .evalEvery(0)
                            .logEvery(200)
                            .build();
            FineTuner.builder()
                    .setModel(model.model())
                    .setTrainData(data)
                    .optSettings(settings)
                    .build()
                    .run();
            double after =
                    Perplexity.evaluate(model.block(), data, model.model().getNDManager(), ROWS)
                            .meanLoss();
            assertTrue(
                    before > 0.5 * uniform,
                    family + ": a random model starts near ln(V) = " + uniform + ", at " + before);
            assertTrue(
                    after < 0.1 * uniform,
                    family + ": loss " + before + " -> " + after + ", not under 0.1 ln(V)");
        }
    }
}
