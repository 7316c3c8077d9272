package io.github.djlllmzoo.blocks.config;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Reads a checkpoint's {@code config.json} into the record of its family. */
public final class Configs {

    /** The {@code model_type} of Gemma 3's image-text checkpoints, whose text part is refused. */
    private static final String GEMMA3_MULTIMODAL = "gemma3";

    private Configs() {}

    /**
     * Reads {@code config.json} from a checkpoint directory (or the file itself) and dispatches on
     * {@code model_type}.
     *
     * @param path a checkpoint directory or a config.json file
     * @return the family's config record
     * @throws InvalidCheckpointException if the file is missing or invalid, or the family unknown
     */
    public static DecoderConfig read(Path path) throws InvalidCheckpointException {
        Path file = Files.isDirectory(path) ? path.resolve(CheckpointFiles.CONFIG) : path;
        ConfigJson json = ConfigJson.read(file);
        String modelType = json.requireString("model_type");
        if (Gpt2Config.MODEL_TYPE.equals(modelType)) {
            return Gpt2Config.parse(json);
        }
        if (LlamaFamily.MODEL_TYPES.contains(modelType)) {
            return LlamaConfig.parse(json);
        }
        if (GEMMA3_MULTIMODAL.equals(modelType)) {
            throw json.invalid(
                    "model_type",
                    "multimodal Gemma 3 checkpoints (text_config, weights under language_model.) are not"
                            + " supported; use a gemma3_text (Gemma3ForCausalLM) checkpoint");
        }
        throw json.invalid(
                "model_type",
                "unsupported model type; supported: "
                        + Gpt2Config.MODEL_TYPE
                        + ", "
                        + String.join(", ", LlamaFamily.MODEL_TYPES));
    }

    static int positive(ConfigJson json, String field) throws InvalidCheckpointException {
        int value = json.requireInt(field);
        if (value <= 0) {
            throw json.invalid(field, "must be positive");
        }
        return value;
    }

    static float epsilon(ConfigJson json, String field, double fallback)
            throws InvalidCheckpointException {
        double value = json.optDouble(field, fallback);
        if (value <= 0 || value >= 1) {
            throw json.invalid(field, "must be in (0, 1)");
        }
        return (float) value;
    }

    static float probability(ConfigJson json, String field, double fallback)
            throws InvalidCheckpointException {
        double value = json.optDouble(field, fallback);
        if (value < 0 || value >= 1) {
            throw json.invalid(field, "must be in [0, 1)");
        }
        return (float) value;
    }
}
