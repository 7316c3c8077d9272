package io.github.djlllmzoo.blocks.config;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Which layers of a Llama-shaped family attend over a sliding window, and how wide it is, as each
 * family's Hugging Face {@code configuration_*.py} and {@code modeling_*.py} decide it ({@code
 * sliding_window}, {@code use_sliding_window}, {@code max_window_layers}, {@code
 * sliding_window_pattern} or {@code layer_types}).
 */
final class LayerWindows {

    /** Hugging Face's {@code Qwen2Config}/{@code Qwen3Config} default for {@code max_window_layers}. */
    private static final int QWEN_DEFAULT_MAX_WINDOW_LAYERS = 28;

    /** Hugging Face's {@code Gemma2Config}/{@code Gemma3TextConfig} default {@code sliding_window}. */
    private static final int GEMMA_DEFAULT_SLIDING_WINDOW = 4096;

    /** {@code Gemma3TextConfig}'s default {@code sliding_window_pattern}: five local layers, one global. */
    private static final int GEMMA3_DEFAULT_PATTERN = 6;

    private static final String SLIDING = "sliding_attention";

    private static final String FULL = "full_attention";

    private LayerWindows() {}

    /**
     * Each layer's sliding window, 0 for a layer that attends over the whole sequence, as the
     * family's Hugging Face config class and {@code modeling_*.py} decide it. A window of at least
     * {@code max_position_embeddings} changes nothing (no key is ever farther away) and is dropped.
     *
     * @param family the config's family
     * @param json the config
     * @param layers {@code num_hidden_layers}
     * @param maxPositions {@code max_position_embeddings}
     * @return the windows, one per layer
     * @throws InvalidCheckpointException naming a field at fault
     */
    static List<Integer> of(LlamaFamily family, ConfigJson json, int layers, int maxPositions)
            throws InvalidCheckpointException {
        int window;
        boolean[] sliding;
        switch (family) {
            case MISTRAL:
                window = mistralWindow(json);
                sliding = uniform(layers, true);
                break;
            case PHI3:
                // transformers' modeling_phi3.py (main, commit 00d4b3d): Phi3Model masks every layer
                // with create_sliding_window_causal_mask whenever config.sliding_window is not None.
                window = json.has("sliding_window") ? Configs.positive(json, "sliding_window") : 0;
                sliding = uniform(layers, true);
                break;
            case QWEN2:
            case QWEN3:
                window = qwenWindow(json);
                sliding = layerTypes(json, layers);
                if (sliding == null) {
                    sliding = new boolean[layers];
                    int firstWindowed = json.optInt("max_window_layers", QWEN_DEFAULT_MAX_WINDOW_LAYERS);
                    for (int i = firstWindowed; i >= 0 && i < layers; i++) {
                        sliding[i] = true;
                    }
                } else if (window == 0 && anySliding(sliding)) {
                    throw json.invalid(
                            "layer_types",
                            "has sliding_attention layers but use_sliding_window is false or sliding_window null");
                }
                break;
            case GEMMA2:
                window = gemmaWindow(json);
                sliding = layerTypes(json, layers);
                if (sliding == null) {
                    // modeling_gemma2.py: layer_idx % 2 == 0 slides
                    sliding = new boolean[layers];
                    for (int i = 0; i < layers; i += 2) {
                        sliding[i] = true;
                    }
                }
                break;
            case GEMMA3:
                window = gemmaWindow(json);
                sliding = layerTypes(json, layers);
                if (sliding == null) {
                    String field = json.has("sliding_window_pattern") ? "sliding_window_pattern" : "_sliding_window_pattern";
                    int pattern = json.has(field) ? Configs.positive(json, field) : GEMMA3_DEFAULT_PATTERN;
                    // configuration_gemma3.py: layer i is global iff (i + 1) % pattern == 0
                    sliding = new boolean[layers];
                    for (int i = 0; i < layers; i++) {
                        sliding[i] = (i + 1) % pattern != 0;
                    }
                }
                break;
            default:
                window = 0;
                sliding = uniform(layers, false);
                break;
        }
        List<Integer> windows = new ArrayList<>(layers);
        boolean inUse = window > 0 && window < maxPositions;
        for (int i = 0; i < layers; i++) {
            windows.add(inUse && sliding[i] ? window : 0);
        }
        return List.copyOf(windows);
    }

    /** Mistral's window: an absent {@code sliding_window} means 4096 ({@code MistralConfig}), null none. */
    private static int mistralWindow(ConfigJson json) throws InvalidCheckpointException {
        if (json.json().has("sliding_window") && !json.has("sliding_window")) {
            return 0;
        }
        return json.has("sliding_window") ? Configs.positive(json, "sliding_window") : LlamaConfig.MISTRAL_DEFAULT_SLIDING_WINDOW;
    }

    /**
     * Qwen's window, as transformers' {@code configuration_qwen2.py} (main, commit 008e574; {@code
     * configuration_qwen3.py} the same) sets it: {@code sliding_window if use_sliding_window else
     * None}; its {@code layer_types} default slides the layers {@code i >= max_window_layers}, and
     * {@code masking_utils.py} raises for sliding layers without a window.
     */
    private static int qwenWindow(ConfigJson json) throws InvalidCheckpointException {
        if (!json.optBoolean("use_sliding_window", false) || !json.has("sliding_window")) {
            return 0;
        }
        return Configs.positive(json, "sliding_window");
    }

    private static int gemmaWindow(ConfigJson json) throws InvalidCheckpointException {
        if (json.json().has("sliding_window") && !json.has("sliding_window")) {
            throw json.invalid("sliding_window", "is null; Gemma's local layers need a window");
        }
        return json.has("sliding_window") ? Configs.positive(json, "sliding_window") : GEMMA_DEFAULT_SLIDING_WINDOW;
    }

    /** {@code layer_types} as sliding flags, or {@code null} when the config has none. */
    private static boolean[] layerTypes(ConfigJson json, int layers) throws InvalidCheckpointException {
        if (!json.has("layer_types")) {
            return null;
        }
        if (!json.json().get("layer_types").isJsonArray()) {
            throw json.invalid("layer_types", "expected a list of attention types");
        }
        var types = json.json().getAsJsonArray("layer_types");
        if (types.size() != layers) {
            throw json.invalid(
                    "layer_types", "has " + types.size() + " entries for " + layers + " layers (num_hidden_layers)");
        }
        boolean[] sliding = new boolean[layers];
        for (int i = 0; i < layers; i++) {
            var type = types.get(i);
            String name = type.isJsonPrimitive() ? type.getAsString() : type.toString();
            if (SLIDING.equals(name)) {
                sliding[i] = true;
            } else if (!FULL.equals(name)) {
                throw json.invalid(
                        "layer_types", "has '" + name + "' at layer " + i + "; supported: " + FULL + ", " + SLIDING);
            }
        }
        return sliding;
    }

    private static boolean[] uniform(int layers, boolean value) {
        boolean[] flags = new boolean[layers];
        Arrays.fill(flags, value);
        return flags;
    }

    private static boolean anySliding(boolean[] sliding) {
        for (boolean s : sliding) {
            if (s) {
                return true;
            }
        }
        return false;
    }
}
