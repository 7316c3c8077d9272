package io.github.djlllmzoo.benchmarks;

import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.io.IOException;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.List;

/**
 * Writes a GPT-2 checkpoint with random weights and the real GPT-2 tokenizer, for serving tests and
 * load measurements without downloading a model. The token embedding is scaled up so that
 * next-token distributions are peaked, as a trained model's are, and greedy choices are far above
 * float noise.
 *
 * <p>Run as {@code RandomGpt2Checkpoint DIR TOKENIZER_DIR tiny|small}: {@code small} has GPT-2
 * small's shape (768 wide, 12 layers, 12 heads, 124M parameters), {@code tiny} is 32 wide with 2
 * layers.
 */
public final class RandomGpt2Checkpoint {

    /** GPT-2's vocabulary size. */
    public static final int VOCAB = 50257;

    /** GPT-2's end-of-text token, its BOS and EOS. */
    public static final int END_OF_TEXT = 50256;

    /** How much the token embedding is scaled up. */
    private static final float EMBEDDING_SCALE = 40f;

    private RandomGpt2Checkpoint() {}

    /**
     * Writes {@code config.json}, {@code model.safetensors} and the tokenizer files (the
     * initializers' weights, the token embedding scaled up).
     *
     * @param dir the checkpoint directory (created if needed)
     * @param tokenizerDir a directory with GPT-2's tokenizer files
     * @param width {@code n_embd}
     * @param layers {@code n_layer}
     * @param heads {@code n_head}
     * @param positions {@code n_positions}, the context window
     * @param seed the random seed of the weights
     * @throws IOException if a file cannot be written
     * @throws InvalidCheckpointException if the shape is not a valid GPT-2 config
     */
    public static void write(
            Path dir, Path tokenizerDir, int width, int layers, int heads, int positions, int seed)
            throws IOException, InvalidCheckpointException {
        JsonObject config = new JsonObject();
        config.addProperty("model_type", "gpt2");
        config.addProperty("vocab_size", VOCAB);
        config.addProperty("n_positions", positions);
        config.addProperty("n_embd", width);
        config.addProperty("n_head", heads);
        config.addProperty("n_layer", layers);
        config.addProperty("bos_token_id", END_OF_TEXT);
        config.addProperty("eos_token_id", END_OF_TEXT);
        RandomCheckpoint.write(
                config,
                false,
                dir,
                seed,
                tokenizerDir,
                (name, tensor) -> {
                    if (name.equals("wte.weight")) {
                        tensor.muli(EMBEDDING_SCALE);
                    }
                });
    }

    /**
     * Writes a checkpoint: {@code DIR TOKENIZER_DIR tiny|small}.
     *
     * @param args the arguments
     * @throws Exception if it cannot be written
     */
    public static void main(String[] args) throws Exception {
        if (args.length != 3 || !List.of("tiny", "small").contains(args[2])) {
            System.err.println("usage: RandomGpt2Checkpoint DIR TOKENIZER_DIR tiny|small");
            System.exit(2);
        }
        Path dir = Paths.get(args[0]);
        Path tokenizer = Paths.get(args[1]);
        if ("small".equals(args[2])) {
            write(dir, tokenizer, 768, 12, 12, 1024, 1);
        } else {
            write(dir, tokenizer, 32, 2, 4, 1024, 1);
        }
    }
}
