package io.github.djlllmzoo.translators;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.Gpt2Model;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import org.junit.jupiter.api.Assumptions;

/** Small GPT-2 models with random weights from a fixed seed, and the test fixtures. */
final class TinyModels {

    /** Vocabulary of the id-only model (that of the golden gpt2-tiny case). */
    static final int SMALL_VOCAB = 512;

    /** GPT-2's vocabulary, for the model that goes with the real tokenizer. */
    static final int GPT2_VOCAB = 50257;

    /** GPT-2's end-of-text token. */
    static final int GPT2_EOS = 50256;

    private TinyModels() {}

    /**
     * A GPT-2-shaped model with random weights, deterministic for a seed.
     *
     * @param vocab vocabulary size
     * @param positions context window
     * @param seed the engine's random seed for initialization
     * @return a model holding the initialized block
     */
    static Model gpt2(int vocab, int positions, int seed) throws InvalidCheckpointException {
        JsonObject json = new JsonObject();
        json.addProperty("model_type", "gpt2");
        json.addProperty("vocab_size", vocab);
        json.addProperty("n_positions", positions);
        json.addProperty("n_embd", 32);
        json.addProperty("n_head", 4);
        json.addProperty("n_layer", 2);
        json.addProperty("eos_token_id", vocab == GPT2_VOCAB ? GPT2_EOS : 0);
        Gpt2Config config = Gpt2Config.parse(ConfigJson.of(null, json));
        Gpt2Model block = new Gpt2Model(config);
        Model model = Model.newInstance("tiny-gpt2-" + vocab, Device.cpu(), "PyTorch");
        Engine.getInstance().setRandomSeed(seed);
        block.initialize(model.getNDManager(), DataType.FLOAT32, new Shape(1, 1));
        sharpen(block);
        model.setBlock(block);
        return model;
    }

    /**
     * Scales the token and position embeddings up so that next-token distributions are peaked, as
     * a trained model's are, instead of nearly uniform (greedy margins are then far above float
     * noise), and so that positions matter as much as in a trained model.
     */
    private static void sharpen(CausalLmBlock block) {
        block.namedParameters().get("wte.weight").getArray().muli(40f);
        block.namedParameters().get("wpe.weight").getArray().muli(80f);
    }

    /** @return the real GPT-2 tokenizer directory; skips the test when the fixtures are absent */
    static Path gpt2TokenizerDir() {
        return tokenizerDir("gpt2-tokenizer");
    }

    /** @return the real Llama 2 (SentencePiece) tokenizer directory; skips the test when the fixtures are absent */
    static Path llama2TokenizerDir() {
        return tokenizerDir("llama2-tokenizer");
    }

    private static Path tokenizerDir(String name) {
        String fixtures = System.getProperty("llmzoo.fixtures");
        Path dir = fixtures == null ? null : Paths.get(fixtures, name);
        Assumptions.assumeTrue(
                dir != null && Files.isRegularFile(dir.resolve("tokenizer.json")),
                "no tokenizer fixture at " + dir);
        return dir;
    }
}
