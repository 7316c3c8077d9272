package io.github.djlllmzoo.training;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import java.nio.file.Path;

/**
 * What a checkpoint records about the run that wrote it ({@code trainer_state.json}): the step
 * reached, the settings, the latest losses and the optimizer.
 *
 * @param globalStep optimizer steps taken
 * @param settings the run's settings
 * @param trainLoss mean training loss over the last logging window, or {@code null}
 * @param evalLoss the latest held-out loss, or {@code null}
 * @param optimizer the optimizer description, including {@code state_file} when its moments were
 *     saved
 */
public record TrainerState(
        int globalStep, FineTuneSettings settings, Double trainLoss, Double evalLoss, JsonObject optimizer) {

    /** The file name inside a checkpoint directory. */
    public static final String FILE = "trainer_state.json";

    private static final Gson GSON = new GsonBuilder().setPrettyPrinting().serializeNulls().create();

    /**
     * Describes a {@link ResumableAdamW} for the state file.
     *
     * @param optimizer the optimizer
     * @param stateFile the moments' file name inside the checkpoint, or {@code null} when not saved
     * @return the description
     */
    public static JsonObject describe(ResumableAdamW optimizer, String stateFile) {
        JsonObject json = new JsonObject();
        json.addProperty("type", "AdamW");
        json.addProperty("beta1", optimizer.beta1());
        json.addProperty("beta2", optimizer.beta2());
        json.addProperty("epsilon", optimizer.epsilon());
        json.addProperty("weight_decay", optimizer.weightDecay());
        json.addProperty("weight_decay_applies_to", "parameters of rank >= 2 (matrices, embeddings)");
        json.addProperty("state_file", stateFile);
        return json;
    }

    /** @return the moments' file name, or {@code null} when the checkpoint has none */
    public String optimizerStateFile() {
        return optimizer != null && optimizer.has("state_file") && !optimizer.get("state_file").isJsonNull()
                ? optimizer.get("state_file").getAsString()
                : null;
    }

    /** @return the JSON text of {@code trainer_state.json} */
    public String toJson() {
        JsonObject json = new JsonObject();
        json.addProperty("global_step", globalStep);
        json.addProperty("max_steps", settings.steps());
        json.addProperty("train_loss", trainLoss);
        json.addProperty("eval_loss", evalLoss);
        json.addProperty("eval_perplexity", evalLoss == null ? null : Math.exp(evalLoss));
        json.add("optimizer", optimizer);
        json.add("settings", settings.toJson());
        return GSON.toJson(json) + "\n";
    }

    /**
     * Reads {@code trainer_state.json} from a checkpoint directory.
     *
     * @param dir the checkpoint directory
     * @return the state
     * @throws InvalidCheckpointException if the file is missing or a field is invalid
     */
    public static TrainerState read(Path dir) throws InvalidCheckpointException {
        ConfigJson json = ConfigJson.read(dir.resolve(FILE));
        int step = json.requireInt("global_step");
        if (step < 0) {
            throw json.invalid("global_step", "must be >= 0");
        }
        ConfigJson settings = json.optObject("settings");
        if (settings == null) {
            throw new InvalidCheckpointException(json.file(), "settings", "required field is missing");
        }
        ConfigJson optimizer = json.optObject("optimizer");
        return new TrainerState(
                step,
                FineTuneSettings.fromJson(settings),
                json.has("train_loss") ? json.optDouble("train_loss", 0) : null,
                json.has("eval_loss") ? json.optDouble("eval_loss", 0) : null,
                optimizer == null ? null : optimizer.json());
    }
}
