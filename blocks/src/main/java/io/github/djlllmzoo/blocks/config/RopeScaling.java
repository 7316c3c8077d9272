package io.github.djlllmzoo.blocks.config;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;

/**
 * The {@code rope_scaling} object of a Llama-family {@code config.json}: how the rotary frequencies
 * are stretched for contexts longer than the model was pre-trained on. The frequencies themselves
 * are computed by {@link io.github.djlllmzoo.blocks.RotaryEmbedding}.
 *
 * @param type the scaling type ({@code rope_type}, or the older {@code type})
 * @param factor {@code factor}: how much longer the context is than in pre-training
 * @param lowFreqFactor {@code low_freq_factor} ({@link Type#LLAMA3} only, else 0)
 * @param highFreqFactor {@code high_freq_factor} ({@link Type#LLAMA3} only, else 0)
 * @param originalMaxPositionEmbeddings {@code original_max_position_embeddings} ({@link
 *     Type#LLAMA3} only, else 0)
 */
public record RopeScaling(
        Type type,
        double factor,
        double lowFreqFactor,
        double highFreqFactor,
        int originalMaxPositionEmbeddings) {

    /** The supported scaling types, by their Hugging Face {@code rope_type} names. */
    public enum Type {
        /** Position interpolation: every frequency divided by {@code factor}. */
        LINEAR("linear"),
        /**
         * Llama 3.1's scaling: low frequencies divided by {@code factor}, high ones kept, the band
         * between interpolated smoothly.
         */
        LLAMA3("llama3");

        private final String jsonName;

        Type(String jsonName) {
            this.jsonName = jsonName;
        }

        /** @return the {@code rope_type} value in config.json */
        public String jsonName() {
            return jsonName;
        }
    }

    /**
     * Validates the values; see {@link #parse(ConfigJson)} for file-aware messages.
     *
     * @param type the scaling type ({@code rope_type}, or the older {@code type})
     * @param factor {@code factor}: how much longer the context is than in pre-training
     * @param lowFreqFactor {@code low_freq_factor} ({@link Type#LLAMA3} only, else 0)
     * @param highFreqFactor {@code high_freq_factor} ({@link Type#LLAMA3} only, else 0)
     * @param originalMaxPositionEmbeddings {@code original_max_position_embeddings} ({@link Type#LLAMA3} only, else 0)
     */
    public RopeScaling {
        if (type == null) {
            throw new IllegalArgumentException("rope_scaling type is required");
        }
        if (!(factor > 0)) {
            throw new IllegalArgumentException(
                    "rope_scaling factor must be positive, got " + factor);
        }
        if (type == Type.LLAMA3
                && (!(lowFreqFactor > 0)
                        || !(highFreqFactor > lowFreqFactor)
                        || originalMaxPositionEmbeddings <= 0)) {
            throw new IllegalArgumentException(
                    "llama3 rope_scaling needs 0 < low_freq_factor < high_freq_factor and a"
                        + " positive original_max_position_embeddings");
        }
    }

    /**
     * Linear scaling (position interpolation).
     *
     * @param factor the factor every frequency is divided by
     * @return the scaling
     */
    public static RopeScaling linear(double factor) {
        return new RopeScaling(Type.LINEAR, factor, 0, 0, 0);
    }

    /**
     * Llama 3 scaling.
     *
     * @param factor the factor low frequencies are divided by
     * @param lowFreqFactor wavelengths longer than {@code original / lowFreqFactor} are scaled
     * @param highFreqFactor wavelengths shorter than {@code original / highFreqFactor} are kept
     * @param originalMaxPositionEmbeddings the pre-training context length
     * @return the scaling
     */
    public static RopeScaling llama3(
            double factor,
            double lowFreqFactor,
            double highFreqFactor,
            int originalMaxPositionEmbeddings) {
        return new RopeScaling(
                Type.LLAMA3, factor, lowFreqFactor, highFreqFactor, originalMaxPositionEmbeddings);
    }

    /**
     * Parses a {@code rope_scaling} (or {@code rope_parameters}) object. Its type is {@code
     * rope_type}, or the older key {@code type}; type {@code default} means no scaling.
     *
     * @param json the object (obtained with {@link ConfigJson#optObject}, so errors name e.g.
     *     {@code rope_scaling.factor})
     * @return the scaling, or {@code null} for type {@code default}
     * @throws InvalidCheckpointException naming the field at fault, e.g. an unsupported type
     */
    public static RopeScaling parse(ConfigJson json) throws InvalidCheckpointException {
        String typeField = json.has("rope_type") ? "rope_type" : "type";
        String name = json.requireString(typeField);
        if (json.has("rope_type") && json.has("type") && !name.equals(json.requireString("type"))) {
            throw json.invalid("type", "disagrees with rope_type '" + name + "'");
        }
        if ("default".equals(name)) {
            return null;
        }
        if (Type.LINEAR.jsonName().equals(name)) {
            return linear(factor(json));
        }
        if (Type.LLAMA3.jsonName().equals(name)) {
            double factor = factor(json);
            double low = requirePositive(json, "low_freq_factor");
            double high = requirePositive(json, "high_freq_factor");
            if (high <= low) {
                throw json.invalid(
                        "high_freq_factor", "must be greater than low_freq_factor (" + low + ")");
            }
            return llama3(
                    factor, low, high, Configs.positive(json, "original_max_position_embeddings"));
        }
        throw json.invalid(
                typeField,
                "unsupported rope scaling type; supported: default, "
                        + Type.LINEAR.jsonName()
                        + ", "
                        + Type.LLAMA3.jsonName());
    }

    private static double factor(ConfigJson json) throws InvalidCheckpointException {
        return requirePositive(json, "factor");
    }

    private static double requirePositive(ConfigJson json, String field)
            throws InvalidCheckpointException {
        double value = json.requireDouble(field);
        if (value <= 0) {
            throw json.invalid(field, "must be positive");
        }
        return value;
    }
}
