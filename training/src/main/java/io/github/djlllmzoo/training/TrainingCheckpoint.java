package io.github.djlllmzoo.training;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.zoo.CheckpointWeights;
import io.github.djlllmzoo.zoo.PeftAdapter;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * Writes a training checkpoint as a Hugging Face-layout model directory that the zoo loads like
 * any other: {@code config.json} copied byte for byte from the model the run started from, {@code
 * model.safetensors} under the checkpoint's tensor names ({@code config.checkpointPrefix()} +
 * parameter name; {@code lm_head.*} unprefixed; a tied head not stored), the tokenizer files and
 * {@code generation_config.json} copied (the latter written from the config's BOS/EOS when the
 * source has none), plus {@code trainer_state.json} and, optionally, the AdamW moments in {@code
 * optimizer.safetensors}. The directory is published with {@link AtomicDirectory}.
 */
public final class TrainingCheckpoint {

    /** The optimizer moments' file name. */
    public static final String OPTIMIZER_FILE = "optimizer.safetensors";

    private static final Gson GSON = new GsonBuilder().setPrettyPrinting().create();

    private TrainingCheckpoint() {}

    /**
     * Publishes a checkpoint, replacing {@code target} atomically.
     *
     * @param target the checkpoint directory
     * @param model the model whose current weights to save
     * @param source the directory the model came from ({@code config.json}, tokenizer files)
     * @param state the trainer state to record
     * @param optimizer the optimizer whose moments to save, or {@code null}
     * @throws IOException if writing fails (the target is then unchanged)
     */
    public static void save(
            Path target, CausalLmBlock model, Path source, TrainerState state, ResumableAdamW optimizer)
            throws IOException {
        AtomicDirectory.publish(
                target,
                dir -> {
                    writeModel(dir, model, source);
                    writeTrainingState(dir, state, optimizer);
                });
    }

    /**
     * Publishes a model's current weights as a checkpoint directory without trainer state (a LoRA
     * adapter merged into its base, for instance), replacing {@code target} atomically.
     *
     * @param target the checkpoint directory
     * @param model the model whose current weights to save
     * @param source the directory the model came from ({@code config.json}, tokenizer files)
     * @throws IOException if writing fails (the target is then unchanged)
     */
    public static void publishModel(Path target, CausalLmBlock model, Path source) throws IOException {
        AtomicDirectory.publish(target, dir -> writeModel(dir, model, source));
    }

    private static void writeModel(Path dir, CausalLmBlock model, Path source) throws IOException {
        Files.copy(source.resolve(CheckpointFiles.CONFIG), dir.resolve(CheckpointFiles.CONFIG));
        CheckpointWeights.save(model, dir);
        for (String name : CheckpointFiles.TOKENIZER_FILES) {
            if (Files.isRegularFile(source.resolve(name))) {
                Files.copy(source.resolve(name), dir.resolve(name));
            }
        }
        Path generation = source.resolve(CheckpointFiles.GENERATION_CONFIG);
        if (Files.isRegularFile(generation)) {
            Files.copy(generation, dir.resolve(CheckpointFiles.GENERATION_CONFIG));
        } else {
            writeString(dir.resolve(CheckpointFiles.GENERATION_CONFIG), generationConfig(model.config()));
        }
    }

    /**
     * Publishes a LoRA run's checkpoint, replacing {@code target} atomically: the adapter as
     * Hugging Face PEFT saves it ({@link PeftAdapter}), plus {@code trainer_state.json} and,
     * optionally, the adapter's AdamW moments. The base model is not copied.
     *
     * @param target the checkpoint directory
     * @param adapter the adapter whose current weights to save
     * @param baseModel the base model's name or path, recorded as {@code base_model_name_or_path}
     * @param state the trainer state to record
     * @param optimizer the optimizer whose moments to save, or {@code null}
     * @throws IOException if writing fails (the target is then unchanged)
     */
    public static void saveAdapter(
            Path target, LoraAdapter adapter, String baseModel, TrainerState state, ResumableAdamW optimizer)
            throws IOException {
        AtomicDirectory.publish(
                target,
                dir -> {
                    PeftAdapter.write(adapter, dir, baseModel);
                    writeTrainingState(dir, state, optimizer);
                });
    }

    private static void writeTrainingState(Path dir, TrainerState state, ResumableAdamW optimizer)
            throws IOException {
        if (optimizer != null) {
            SafeTensorsWriter.write(
                    dir.resolve(OPTIMIZER_FILE), optimizer.state(), Map.of("step", String.valueOf(state.globalStep())));
        }
        writeString(dir.resolve(TrainerState.FILE), state.toJson());
    }

    private static String generationConfig(DecoderConfig config) {
        JsonObject json = new JsonObject();
        if (config.bosTokenId() != null) {
            json.addProperty("bos_token_id", config.bosTokenId());
        }
        List<Integer> eos = config.eosTokenIds();
        if (eos.size() == 1) {
            json.addProperty("eos_token_id", eos.get(0));
        } else if (!eos.isEmpty()) {
            json.add("eos_token_id", GSON.toJsonTree(eos));
        }
        return GSON.toJson(json) + "\n";
    }

    private static void writeString(Path file, String text) throws IOException {
        Files.writeString(file, text, StandardCharsets.UTF_8);
    }
}
