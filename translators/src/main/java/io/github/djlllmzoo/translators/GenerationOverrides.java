package io.github.djlllmzoo.translators;

import java.io.Serializable;
import java.util.List;

/**
 * The generation controls a caller gives on top of a checkpoint's {@code generation_config.json}
 * (the command line's options, a Spark transformer's params): {@code null} (or an empty stop
 * list) keeps the checkpoint's value. As in Hugging Face's {@code generate()}, any sampling control
 * ({@code temperature}, {@code top_k}, {@code top_p}, {@code min_p}, a seed) turns sampling on
 * unless {@code doSample} says otherwise.
 *
 * @param maxNewTokens the most tokens to generate
 * @param doSample whether to sample ({@code false}: greedy)
 * @param temperature the sampling temperature
 * @param topK top-k
 * @param topP top-p
 * @param minP min-p
 * @param repetitionPenalty the repetition penalty
 * @param stopStrings texts that end a sequence (empty: the checkpoint's, i.e. none)
 * @param seed the sampler's seed
 * @param numReturnSequences sequences to generate per prompt
 */
public record GenerationOverrides(
        Integer maxNewTokens,
        Boolean doSample,
        Float temperature,
        Integer topK,
        Float topP,
        Float minP,
        Float repetitionPenalty,
        List<String> stopStrings,
        Long seed,
        Integer numReturnSequences)
        implements Serializable {

    private static final long serialVersionUID = 1L;

    /**
     * Copies the stop list, so the record stays immutable and serializable.
     *
     * @param maxNewTokens the most tokens to generate
     * @param doSample whether to sample ({@code false}: greedy)
     * @param temperature the sampling temperature
     * @param topK top-k
     * @param topP top-p
     * @param minP min-p
     * @param repetitionPenalty the repetition penalty
     * @param stopStrings texts that end a sequence (empty: the checkpoint's, i.e. none)
     * @param seed the sampler's seed
     * @param numReturnSequences sequences to generate per prompt
     */
    public GenerationOverrides {
        stopStrings = stopStrings == null ? List.of() : List.copyOf(stopStrings);
    }

    /** @return whether a control that only sampling uses is given */
    public boolean hasSamplingControl() {
        return temperature != null || topK != null || topP != null || minP != null || seed != null;
    }

    /**
     * Applies the overrides to a builder holding the checkpoint's defaults.
     *
     * @param builder the defaults
     * @return the same builder
     */
    public GenerationConfig.Builder applyTo(GenerationConfig.Builder builder) {
        if (doSample != null) {
            builder.doSample(doSample);
        } else if (hasSamplingControl()) {
            builder.doSample(true);
        }
        if (maxNewTokens != null) {
            builder.maxNewTokens(maxNewTokens);
        }
        if (temperature != null) {
            builder.temperature(temperature);
        }
        if (topK != null) {
            builder.topK(topK);
        }
        if (topP != null) {
            builder.topP(topP);
        }
        if (minP != null) {
            builder.minP(minP);
        }
        if (repetitionPenalty != null) {
            builder.repetitionPenalty(repetitionPenalty);
        }
        if (seed != null) {
            builder.seed(seed);
        }
        if (!stopStrings.isEmpty()) {
            builder.stopStrings(stopStrings);
        }
        if (numReturnSequences != null) {
            builder.numReturnSequences(numReturnSequences);
        }
        return builder;
    }
}
