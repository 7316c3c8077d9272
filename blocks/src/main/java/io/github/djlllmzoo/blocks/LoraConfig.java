package io.github.djlllmzoo.blocks;

import java.util.List;
import java.util.regex.Pattern;

/**
 * The hyper-parameters of a LoRA adapter, as Hugging Face PEFT's {@code LoraConfig} names them:
 * rank {@code r}, {@code lora_alpha}, {@code lora_dropout}, and the {@code target_modules} it
 * adapts. A target is a module name matched as PEFT matches a list entry (the module's dotted
 * checkpoint name equals it or ends with {@code "." + target}), or, for {@link #targetPattern}, a
 * regular expression the whole name must match (PEFT's string form).
 *
 * @param rank the rank r of the update {@code B A}
 * @param alpha the update's scale numerator: the update is {@code (alpha / r) B A x}
 * @param dropout dropout on the adapter's input in training, in [0, 1)
 * @param targetModules module names to adapt (empty when {@code targetPattern} is set)
 * @param targetPattern a regular expression over full module names, or {@code null}
 */
public record LoraConfig(
        int rank, float alpha, float dropout, List<String> targetModules, String targetPattern) {

    /** PEFT's default rank. */
    public static final int DEFAULT_RANK = 8;
    /** The default {@code lora_alpha} of this project's fine-tuning (twice the default rank). */
    public static final float DEFAULT_ALPHA = 16;
    /** The default {@code lora_dropout} of this project's fine-tuning. */
    public static final float DEFAULT_DROPOUT = 0.05f;

    /**
     * @throws IllegalArgumentException for a rank below 1, a non-positive or non-finite alpha, a
     *     dropout outside [0, 1), or no targets
      *
      * @param rank the rank r of the update {@code B A}
      * @param alpha the update's scale numerator: the update is {@code (alpha / r) B A x}
      * @param dropout dropout on the adapter's input in training, in [0, 1)
      * @param targetModules module names to adapt (empty when {@code targetPattern} is set)
      * @param targetPattern a regular expression over full module names, or {@code null}
     */
    public LoraConfig {
        if (rank < 1) {
            throw new IllegalArgumentException("LoRA rank r must be at least 1, got " + rank);
        }
        if (!(alpha > 0) || !Float.isFinite(alpha)) {
            throw new IllegalArgumentException("lora_alpha must be positive, got " + alpha);
        }
        if (!(dropout >= 0 && dropout < 1)) {
            throw new IllegalArgumentException("lora_dropout must be in [0, 1), got " + dropout);
        }
        targetModules = targetModules == null ? List.of() : List.copyOf(targetModules);
        if (targetModules.isEmpty() && targetPattern == null) {
            throw new IllegalArgumentException("a LoRA adapter needs target modules");
        }
        for (String target : targetModules) {
            if (target.isBlank()) {
                throw new IllegalArgumentException("a LoRA target module name is empty: " + targetModules);
            }
        }
    }

    /**
     * @param rank the rank r
     * @param alpha lora_alpha
     * @param dropout lora_dropout
     * @param targetModules module names to adapt
     */
    public LoraConfig(int rank, float alpha, float dropout, List<String> targetModules) {
        this(rank, alpha, dropout, targetModules, null);
    }

    /** @return {@code alpha / r}, the factor on {@code B A x} */
    public float scaling() {
        return alpha / rank;
    }

    /**
     * Whether the adapter adapts a module, by PEFT's rule.
     *
     * @param moduleName the module's full checkpoint name, e.g. {@code model.layers.0.self_attn.q_proj}
     * @return whether it is a target
     */
    public boolean targets(String moduleName) {
        if (targetPattern != null) {
            return Pattern.compile(targetPattern).matcher(moduleName).matches();
        }
        for (String target : targetModules) {
            if (moduleName.equals(target) || moduleName.endsWith("." + target)) {
                return true;
            }
        }
        return false;
    }
}
