package io.github.djlllmzoo.examples.server;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.Gpt2Model;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

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

    private static final List<String> TOKENIZER_FILES =
            List.of(
                    "tokenizer.json",
                    "vocab.json",
                    "merges.txt",
                    "tokenizer_config.json",
                    "special_tokens_map.json");

    private RandomGpt2Checkpoint() {}

    /**
     * Writes {@code config.json}, {@code model.safetensors} and the tokenizer files.
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
        Files.createDirectories(dir);
        JsonObject config = new JsonObject();
        config.addProperty("model_type", "gpt2");
        config.addProperty("vocab_size", VOCAB);
        config.addProperty("n_positions", positions);
        config.addProperty("n_embd", width);
        config.addProperty("n_head", heads);
        config.addProperty("n_layer", layers);
        config.addProperty("bos_token_id", END_OF_TEXT);
        config.addProperty("eos_token_id", END_OF_TEXT);
        Gpt2Model block =
                new Gpt2Model(Gpt2Config.parse(ConfigJson.of(dir.resolve("config.json"), config)));
        try (Model model = Model.newInstance("random-gpt2", Device.cpu(), "PyTorch")) {
            Engine.getInstance().setRandomSeed(seed);
            block.initialize(model.getNDManager(), DataType.FLOAT32, new Shape(1, 1));
            Map<String, NDArray> tensors = new LinkedHashMap<>();
            block.namedParameters()
                    .forEach((name, parameter) -> tensors.put(name, parameter.getArray()));
            tensors.get("wte.weight").muli(EMBEDDING_SCALE);
            SafeTensorsWriter.write(dir.resolve("model.safetensors"), tensors, null);
        }
        for (String name : TOKENIZER_FILES) {
            Path source = tokenizerDir.resolve(name);
            if (Files.isRegularFile(source)) {
                Path temp = dir.resolve(name + ".tmp");
                Files.copy(source, temp, StandardCopyOption.REPLACE_EXISTING);
                Files.move(
                        temp,
                        dir.resolve(name),
                        StandardCopyOption.REPLACE_EXISTING,
                        StandardCopyOption.ATOMIC_MOVE);
            }
        }
        Path temp = dir.resolve("config.json.tmp");
        Files.writeString(temp, config.toString(), StandardCharsets.UTF_8);
        Files.move(
                temp,
                dir.resolve("config.json"),
                StandardCopyOption.REPLACE_EXISTING,
                StandardCopyOption.ATOMIC_MOVE);
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
