package io.github.djlllmzoo.blocks.config;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;

/**
 * The {@code rope_scaling} object of a Llama-family {@code config.json}: how the rotary frequencies
 * are stretched for contexts longer than the model was pre-trained on. The frequencies themselves
 * are computed by {@link io.github.djlllmzoo.blocks.RotaryEmbedding}.
 *
 * @param type the scaling type ({@code rope_type}, or the older {@code type})
 * @param factor {@code factor}: how much longer the context is than in pre-training ({@link
 *     Type#LONGROPE}: {@code max_position_embeddings / original_max_position_embeddings})
 * @param lowFreqFactor {@code low_freq_factor} ({@link Type#LLAMA3} only, else 0)
 * @param highFreqFactor {@code high_freq_factor} ({@link Type#LLAMA3} only, else 0)
 * @param originalMaxPositionEmbeddings {@code original_max_position_embeddings}, the pre-training
 *     context ({@link Type#LLAMA3} and {@link Type#LONGROPE} only, else 0)
 * @param shortFactor {@code short_factor}: per-frequency divisors within the pre-training context
 *     ({@link Type#LONGROPE} only, else empty)
 * @param longFactor {@code long_factor}: per-frequency divisors beyond it ({@link Type#LONGROPE}
 *     only, else empty)
 * @param attentionFactor {@code attention_factor}: what cos and sin are multiplied by (1 but for
 *     {@link Type#LONGROPE})
 */
public record RopeScaling(
        Type type,
        double factor,
        double lowFreqFactor,
        double highFreqFactor,
        int originalMaxPositionEmbeddings,
        List<Double> shortFactor,
        List<Double> longFactor,
        double attentionFactor) {

    /** The supported scaling types, by their Hugging Face {@code rope_type} names. */
    public enum Type {
        /** Position interpolation: every frequency divided by {@code factor}. */
        LINEAR("linear"),
        /**
         * Llama 3.1's scaling: low frequencies divided by {@code factor}, high ones kept, the band
         * between interpolated smoothly.
         */
        LLAMA3("llama3"),
        /**
         * Phi-3's LongRoPE: each frequency divided by its own factor, from {@code short_factor} or
         * {@code long_factor} by the context window, and cos and sin multiplied by {@code
         * attention_factor}.
         */
        LONGROPE("longrope");

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
     * Validates the values; see {@link #parse(ConfigJson, ConfigJson, int)} for file-aware messages.
     *
     * @param type the scaling type ({@code rope_type}, or the older {@code type})
     * @param factor {@code factor}: how much longer the context is than in pre-training
     * @param lowFreqFactor {@code low_freq_factor} ({@link Type#LLAMA3} only, else 0)
     * @param highFreqFactor {@code high_freq_factor} ({@link Type#LLAMA3} only, else 0)
     * @param originalMaxPositionEmbeddings {@code original_max_position_embeddings} ({@link Type#LLAMA3} and {@link Type#LONGROPE} only, else 0)
     * @param shortFactor {@code short_factor} ({@link Type#LONGROPE} only, else empty)
     * @param longFactor {@code long_factor} ({@link Type#LONGROPE} only, else empty)
     * @param attentionFactor {@code attention_factor} (1 but for {@link Type#LONGROPE})
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
        shortFactor = List.copyOf(shortFactor);
        longFactor = List.copyOf(longFactor);
        if (type == Type.LONGROPE) {
            if (originalMaxPositionEmbeddings <= 0 || !(attentionFactor > 0)) {
                throw new IllegalArgumentException("longrope rope_scaling needs a positive"
                        + " original_max_position_embeddings and attention_factor");
            }
            if (shortFactor.isEmpty() || shortFactor.size() != longFactor.size()) {
                throw new IllegalArgumentException("longrope short_factor and long_factor must have the same,"
                        + " non-zero length, got " + shortFactor.size() + " and " + longFactor.size());
            }
            for (List<Double> factors : List.of(shortFactor, longFactor)) {
                for (double f : factors) {
                    if (!(f > 0)) {
                        throw new IllegalArgumentException("longrope factors must be positive, got " + f);
                    }
                }
            }
        } else if (!shortFactor.isEmpty() || !longFactor.isEmpty() || attentionFactor != 1) {
            throw new IllegalArgumentException(
                    "short_factor, long_factor and attention_factor are for longrope rope_scaling only");
        }
    }

    /**
     * Linear scaling (position interpolation).
     *
     * @param factor the factor every frequency is divided by
     * @return the scaling
     */
    public static RopeScaling linear(double factor) {
        return new RopeScaling(Type.LINEAR, factor, 0, 0, 0, List.of(), List.of(), 1);
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
        return new RopeScaling(Type.LLAMA3, factor, lowFreqFactor, highFreqFactor,
                originalMaxPositionEmbeddings, List.of(), List.of(), 1);
    }

    /**
     * LongRoPE (Phi-3's long-context variants), with Hugging Face's {@code
     * _compute_longrope_parameters} defaults.
     *
     * @param shortFactor the per-frequency divisors within the pre-training context
     * @param longFactor the per-frequency divisors beyond it
     * @param maxPositionEmbeddings the context window the model was extended to
     * @param originalMaxPositionEmbeddings the pre-training context
     * @param attentionFactor what cos and sin are multiplied by, or {@code null} for the default
     *     {@link #defaultAttentionFactor}
     * @return the scaling
     */
    public static RopeScaling longRope(List<Double> shortFactor, List<Double> longFactor,
            int maxPositionEmbeddings, int originalMaxPositionEmbeddings, Double attentionFactor) {
        if (originalMaxPositionEmbeddings <= 0) {
            throw new IllegalArgumentException(
                    "original_max_position_embeddings must be positive, got " + originalMaxPositionEmbeddings);
        }
        double factor = (double) maxPositionEmbeddings / originalMaxPositionEmbeddings;
        return new RopeScaling(Type.LONGROPE, factor, 0, 0, originalMaxPositionEmbeddings, shortFactor, longFactor,
                attentionFactor != null ? attentionFactor
                        : defaultAttentionFactor(factor, originalMaxPositionEmbeddings));
    }

    /**
     * LongRoPE's default {@code attention_factor}, as Hugging Face computes it: 1 for {@code factor <=
     * 1}, else {@code sqrt(1 + ln(factor) / ln(original_max_position_embeddings))}.
     *
     * @param factor {@code max_position_embeddings / original_max_position_embeddings}
     * @param originalMaxPositionEmbeddings the pre-training context
     * @return the factor cos and sin are multiplied by
     */
    public static double defaultAttentionFactor(double factor, int originalMaxPositionEmbeddings) {
        return factor <= 1 ? 1.0 : Math.sqrt(1 + Math.log(factor) / Math.log(originalMaxPositionEmbeddings));
    }

    /**
     * LongRoPE's divisors for a model used with a given context window: {@code long_factor} when the
     * window exceeds {@code original_max_position_embeddings}, else {@code short_factor}. The choice
     * is made once per window, not per sequence length, so that keys cached earlier were rotated
     * with the same frequencies as later ones.
     *
     * @param contextWindow the number of positions the model is used with
     * @return the per-frequency divisors ({@link Type#LONGROPE} only)
     */
    public List<Double> longRopeFactors(int contextWindow) {
        if (type != Type.LONGROPE) {
            throw new IllegalStateException(type.jsonName() + " rope_scaling has no per-frequency factors");
        }
        return contextWindow > originalMaxPositionEmbeddings ? longFactor : shortFactor;
    }

    /**
     * Parses a {@code rope_scaling} (or {@code rope_parameters}) object. Its type is {@code
     * rope_type}, or the older key {@code type}; type {@code default} means no scaling. LongRoPE's
     * {@code original_max_position_embeddings} is read from the object, else from the config (where
     * Phi-3 keeps it).
     *
     * @param json the object (obtained with {@link ConfigJson#optObject}, so errors name e.g.
     *     {@code rope_scaling.factor})
     * @param config the whole config ({@code max_position_embeddings}, {@code
     *     original_max_position_embeddings})
     * @param headDim the head width: LongRoPE gives {@code head_dim / 2} factors
     * @return the scaling, or {@code null} for type {@code default}
     * @throws InvalidCheckpointException naming the field at fault, e.g. an unsupported type
     */
    public static RopeScaling parse(ConfigJson json, ConfigJson config, int headDim)
            throws InvalidCheckpointException {
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
        if (Type.LONGROPE.jsonName().equals(name)) {
            return parseLongRope(json, config, headDim);
        }
        throw json.invalid(
                typeField,
                "unsupported rope scaling type; supported: default, "
                        + Type.LINEAR.jsonName()
                        + ", "
                        + Type.LLAMA3.jsonName()
                        + ", "
                        + Type.LONGROPE.jsonName());
    }

    private static RopeScaling parseLongRope(ConfigJson json, ConfigJson config, int headDim)
            throws InvalidCheckpointException {
        List<Double> shortFactor = factors(json, "short_factor", headDim);
        List<Double> longFactor = factors(json, "long_factor", headDim);
        String original = "original_max_position_embeddings";
        ConfigJson originalFrom = json.has(original) ? json : config;
        if (!originalFrom.has(original)) {
            throw json.invalid(original, "longrope needs the pre-training context, here or at the top level");
        }
        int originalPositions = Configs.positive(originalFrom, original);
        Double attention = json.has("attention_factor") ? requirePositive(json, "attention_factor") : null;
        return longRope(shortFactor, longFactor, Configs.positive(config, "max_position_embeddings"),
                originalPositions, attention);
    }

    /** A list of {@code head_dim / 2} positive factors. */
    private static List<Double> factors(ConfigJson json, String field, int headDim)
            throws InvalidCheckpointException {
        if (!json.has(field)) {
            throw json.invalid(field, "longrope needs " + headDim / 2 + " factors (head_dim / 2)");
        }
        JsonElement e = json.json().get(field);
        if (!e.isJsonArray() || e.getAsJsonArray().size() != headDim / 2) {
            throw json.invalid(field, "must be a list of " + headDim / 2 + " numbers (head_dim / 2)");
        }
        JsonArray array = e.getAsJsonArray();
        List<Double> out = new ArrayList<>(array.size());
        for (JsonElement item : array) {
            if (!item.isJsonPrimitive() || !item.getAsJsonPrimitive().isNumber() || !(item.getAsDouble() > 0)) {
                throw json.invalid(field, "must hold positive numbers; " + item + " is not one");
            }
            out.add(item.getAsDouble());
        }
        return Collections.unmodifiableList(out);
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
