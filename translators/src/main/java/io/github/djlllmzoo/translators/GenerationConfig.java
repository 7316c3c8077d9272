package io.github.djlllmzoo.translators;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.constrained.OutputConstraint;
import java.io.Serializable;
import java.nio.file.Path;
import java.util.List;

/**
 * How to generate, with the controls and the semantics of Hugging Face's {@code generate()}.
 * Immutable; build with {@link #builder()}, or start from a checkpoint's defaults with {@link
 * #forCheckpoint(Path, DecoderConfig)}.
 *
 * <p>Decoding is greedy (the most likely token) unless {@code doSample} is set and the temperature
 * is above 0. The repetition penalty applies to greedy decoding and sampling alike; temperature,
 * top-k, top-p and min-p shape the sampling distribution, in that order.
 *
 * @param maxNewTokens the most tokens to generate per sequence (≥ 1). A budget beyond the context
 *     window is clamped, as in Hugging Face: generation stops with {@link FinishReason#LENGTH} when
 *     the prompt and the new tokens fill the window
 * @param doSample whether to sample ({@code do_sample}); false means greedy
 * @param temperature divides the logits before sampling ({@code temperature}, ≥ 0; 0 means greedy)
 * @param topK keep only the {@code k} most likely tokens ({@code top_k}, ≥ 0; 0 disables)
 * @param topP keep the smallest set of most likely tokens whose probability reaches {@code p}
 *     ({@code top_p}, in (0, 1]; 1 disables)
 * @param minP drop tokens less likely than {@code minP} times the most likely one ({@code min_p},
 *     in [0, 1]; 0 disables)
 * @param repetitionPenalty divides positive and multiplies negative logits of every token already
 *     in the prompt or the output ({@code repetition_penalty}, > 0; 1 disables)
 * @param logitAdjustments OpenAI's {@code logit_bias}, {@code presence_penalty} and {@code
 *     frequency_penalty} ({@link LogitAdjustments#NONE} for none)
 * @param topLogprobs how many most likely alternatives each new token's log-probability comes
 *     with when {@code returnLogprobs} is set (0 to {@value #MAX_TOP_LOGPROBS})
 * @param seed the sampler's seed, or {@code null} for a fresh random seed per request
 * @param stopStrings texts that end a sequence; the result text ends before the first one found
 * @param eosTokenIds tokens that end a sequence (any of them)
 * @param numReturnSequences sequences to generate per prompt ({@code num_return_sequences}, ≥ 1)
 * @param returnLogprobs whether results carry the log-probability of each new token
 * @param truncatePrompt whether a prompt that leaves no room for {@code maxNewTokens} in the
 *     context window loses its first tokens, keeping the last {@code max(1, window -
 *     maxNewTokens)} (as Hugging Face's text-generation pipeline does with {@code
 *     handle_long_generation="hole"}); when false (the default) a prompt longer than the window is
 *     rejected
 * @param constraint what every output must be (a JSON schema, a regular expression, ...), or
 *     {@code null} for free text: each sequence's next-token logits are masked to the tokens that
 *     keep its output valid before the repetition penalty and the sampler see them, and EOS is
 *     allowed exactly when the output is complete. Kept as the description itself (serializable),
 *     compiled against the tokenizer when generation starts
 */
public record GenerationConfig(
        int maxNewTokens,
        boolean doSample,
        float temperature,
        int topK,
        float topP,
        float minP,
        float repetitionPenalty,
        LogitAdjustments logitAdjustments,
        int topLogprobs,
        Long seed,
        List<String> stopStrings,
        List<Integer> eosTokenIds,
        int numReturnSequences,
        boolean returnLogprobs,
        boolean truncatePrompt,
        OutputConstraint constraint)
        implements Serializable {

    private static final long serialVersionUID = 1L;

    /** The token budget when none is given, as Hugging Face's default of 20 is too short. */
    public static final int DEFAULT_MAX_NEW_TOKENS = 32;

    /** Hugging Face's default {@code top_k} when sampling. */
    public static final int DEFAULT_TOP_K = 50;

    /** The most alternatives per token, OpenAI's bound on chat's {@code top_logprobs}. */
    public static final int MAX_TOP_LOGPROBS = 20;

    /**
     * Validates the values; every message names the field at fault.
     *
     * @param maxNewTokens the most tokens to generate per sequence (≥ 1). A budget beyond the context window is clamped, as in Hugging Face: generation stops with {@link FinishReason#LENGTH} when the prompt and the new tokens fill the window
     * @param doSample whether to sample ({@code do_sample}); false means greedy
     * @param temperature divides the logits before sampling ({@code temperature}, ≥ 0; 0 means greedy)
     * @param topK keep only the {@code k} most likely tokens ({@code top_k}, ≥ 0; 0 disables)
     * @param topP keep the smallest set of most likely tokens whose probability reaches {@code p} ({@code top_p}, in (0, 1]; 1 disables)
     * @param minP drop tokens less likely than {@code minP} times the most likely one ({@code min_p}, in [0, 1]; 0 disables)
     * @param repetitionPenalty divides positive and multiplies negative logits of every token already in the prompt or the output ({@code repetition_penalty}, > 0; 1 disables)
     * @param logitAdjustments OpenAI's {@code logit_bias}, {@code presence_penalty} and {@code frequency_penalty} ({@link LogitAdjustments#NONE} for none)
     * @param topLogprobs how many most likely alternatives each new token's log-probability comes with when {@code returnLogprobs} is set (0 to {@value #MAX_TOP_LOGPROBS})
     * @param seed the sampler's seed, or {@code null} for a fresh random seed per request
     * @param stopStrings texts that end a sequence; the result text ends before the first one found
     * @param eosTokenIds tokens that end a sequence (any of them)
     * @param numReturnSequences sequences to generate per prompt ({@code num_return_sequences}, ≥ 1)
     * @param returnLogprobs whether results carry the log-probability of each new token
     * @param truncatePrompt whether a prompt that leaves no room for {@code maxNewTokens} in the context window loses its first tokens, keeping the last {@code max(1, window - maxNewTokens)} (as Hugging Face's text-generation pipeline does with {@code handle_long_generation="hole"}); when false (the default) a prompt longer than the window is rejected
     * @param constraint what every output must be, or {@code null} for free text
     */
    public GenerationConfig {
        require(maxNewTokens >= 1, "maxNewTokens (max_new_tokens) must be at least 1", maxNewTokens);
        require(
                Float.isFinite(temperature) && temperature >= 0,
                "temperature must be a finite number >= 0",
                temperature);
        require(topK >= 0, "topK (top_k) must be >= 0 (0 disables it)", topK);
        require(topP > 0 && topP <= 1, "topP (top_p) must be in (0, 1]", topP);
        require(minP >= 0 && minP <= 1, "minP (min_p) must be in [0, 1]", minP);
        require(
                Float.isFinite(repetitionPenalty) && repetitionPenalty > 0,
                "repetitionPenalty (repetition_penalty) must be > 0",
                repetitionPenalty);
        logitAdjustments = logitAdjustments == null ? LogitAdjustments.NONE : logitAdjustments;
        require(
                topLogprobs >= 0 && topLogprobs <= MAX_TOP_LOGPROBS,
                "topLogprobs (top_logprobs) must be in [0, " + MAX_TOP_LOGPROBS + "]",
                topLogprobs);
        require(
                numReturnSequences >= 1,
                "numReturnSequences (num_return_sequences) must be at least 1",
                numReturnSequences);
        stopStrings = List.copyOf(stopStrings);
        for (String stop : stopStrings) {
            require(!stop.isEmpty(), "stopStrings (stop_strings) must not contain an empty string", "\"\"");
        }
        eosTokenIds = List.copyOf(eosTokenIds);
    }

    private static void require(boolean valid, String rule, Object value) {
        if (!valid) {
            throw new IllegalArgumentException(rule + ", got " + value);
        }
    }

    /** @return whether tokens are picked greedily (no sampling, or temperature 0) */
    public boolean isGreedy() {
        return !doSample || temperature == 0f;
    }

    /** @return a builder with the defaults */
    public static Builder builder() {
        return new Builder();
    }

    /** @return a builder holding this config's values */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.maxNewTokens = maxNewTokens;
        b.doSample = doSample;
        b.temperature = temperature;
        b.topK = topK;
        b.topP = topP;
        b.minP = minP;
        b.repetitionPenalty = repetitionPenalty;
        b.logitAdjustments = logitAdjustments;
        b.topLogprobs = topLogprobs;
        b.seed = seed;
        b.stopStrings = stopStrings;
        b.eosTokenIds = eosTokenIds;
        b.numReturnSequences = numReturnSequences;
        b.returnLogprobs = returnLogprobs;
        b.truncatePrompt = truncatePrompt;
        b.constraint = constraint;
        return b;
    }

    /**
     * The defaults of a checkpoint: EOS tokens from its model config, overridden by its {@code
     * generation_config.json} when the directory has one.
     *
     * @param dir the checkpoint directory, or {@code null} when there is none
     * @param config the model config
     * @return a builder holding the defaults
     * @throws InvalidCheckpointException if {@code generation_config.json} is malformed, naming the
     *     field
     */
    public static Builder forCheckpoint(Path dir, DecoderConfig config)
            throws InvalidCheckpointException {
        Builder builder = builder().eosTokenIds(config.eosTokenIds());
        if (dir != null) {
            GenerationDefaults.read(dir).ifPresent(builder::fromHuggingFace);
        }
        return builder;
    }

    /** Builds a {@link GenerationConfig}. */
    public static final class Builder {

        private int maxNewTokens = DEFAULT_MAX_NEW_TOKENS;
        private boolean doSample;
        private float temperature = 1f;
        private int topK = DEFAULT_TOP_K;
        private float topP = 1f;
        private float minP;
        private float repetitionPenalty = 1f;
        private LogitAdjustments logitAdjustments = LogitAdjustments.NONE;
        private int topLogprobs;
        private Long seed;
        private List<String> stopStrings = List.of();
        private List<Integer> eosTokenIds = List.of();
        private int numReturnSequences = 1;
        private boolean returnLogprobs;
        private boolean truncatePrompt;
        private OutputConstraint constraint;

        private Builder() {}

        /**
         * Takes the settings of a checkpoint's {@code generation_config.json}: every field the file
         * gives ({@code max_new_tokens}, {@code do_sample}, {@code temperature}, {@code top_k},
         * {@code top_p}, {@code min_p}, {@code repetition_penalty}, {@code eos_token_id}, {@code
         * num_return_sequences}, {@code stop_strings}) replaces this builder's value; absent fields
         * keep it.
         *
         * @param defaults the parsed file
         * @return this builder
         */
        public Builder fromHuggingFace(GenerationDefaults defaults) {
            if (defaults.maxNewTokens() != null) {
                maxNewTokens = defaults.maxNewTokens();
            }
            if (defaults.doSample() != null) {
                doSample = defaults.doSample();
            }
            if (defaults.temperature() != null) {
                temperature = defaults.temperature().floatValue();
            }
            if (defaults.topK() != null) {
                topK = defaults.topK();
            }
            if (defaults.topP() != null) {
                topP = defaults.topP().floatValue();
            }
            if (defaults.minP() != null) {
                minP = defaults.minP().floatValue();
            }
            if (defaults.repetitionPenalty() != null) {
                repetitionPenalty = defaults.repetitionPenalty().floatValue();
            }
            if (!defaults.eosTokenIds().isEmpty()) {
                eosTokenIds = defaults.eosTokenIds();
            }
            if (defaults.numReturnSequences() != null) {
                numReturnSequences = defaults.numReturnSequences();
            }
            if (!defaults.stopStrings().isEmpty()) {
                stopStrings = defaults.stopStrings();
            }
            return this;
        }

        /**
         * @param value the most tokens to generate per sequence
         * @return this builder
         */
        public Builder maxNewTokens(int value) {
            maxNewTokens = value;
            return this;
        }

        /**
         * Picks the most likely token at each step (turns sampling off).
         *
         * @return this builder
         */
        public Builder greedy() {
            doSample = false;
            return this;
        }

        /**
         * @param value whether to sample
         * @return this builder
         */
        public Builder doSample(boolean value) {
            doSample = value;
            return this;
        }

        /**
         * @param value the sampling temperature (0 means greedy)
         * @return this builder
         */
        public Builder temperature(float value) {
            temperature = value;
            return this;
        }

        /**
         * @param value tokens kept by top-k (0 disables)
         * @return this builder
         */
        public Builder topK(int value) {
            topK = value;
            return this;
        }

        /**
         * @param value the nucleus probability (1 disables)
         * @return this builder
         */
        public Builder topP(float value) {
            topP = value;
            return this;
        }

        /**
         * @param value the min-p fraction (0 disables)
         * @return this builder
         */
        public Builder minP(float value) {
            minP = value;
            return this;
        }

        /**
         * @param value the repetition penalty (1 disables)
         * @return this builder
         */
        public Builder repetitionPenalty(float value) {
            repetitionPenalty = value;
            return this;
        }

        /**
         * @param value OpenAI's logit bias, presence and frequency penalties
         * @return this builder
         */
        public Builder logitAdjustments(LogitAdjustments value) {
            logitAdjustments = value;
            return this;
        }

        /**
         * @param value how many most likely alternatives come with each token's log-probability
         *     (0 to {@value GenerationConfig#MAX_TOP_LOGPROBS}; needs {@link #returnLogprobs})
         * @return this builder
         */
        public Builder topLogprobs(int value) {
            topLogprobs = value;
            return this;
        }

        /**
         * @param value the sampler's seed, or {@code null} for a random one per request
         * @return this builder
         */
        public Builder seed(Long value) {
            seed = value;
            return this;
        }

        /**
         * @param value texts that end a sequence
         * @return this builder
         */
        public Builder stopStrings(List<String> value) {
            stopStrings = value;
            return this;
        }

        /**
         * @param value tokens that end a sequence
         * @return this builder
         */
        public Builder eosTokenIds(List<Integer> value) {
            eosTokenIds = value;
            return this;
        }

        /**
         * @param value sequences to generate per prompt
         * @return this builder
         */
        public Builder numReturnSequences(int value) {
            numReturnSequences = value;
            return this;
        }

        /**
         * @param value whether results carry per-token log-probabilities
         * @return this builder
         */
        public Builder returnLogprobs(boolean value) {
            returnLogprobs = value;
            return this;
        }

        /**
         * @param value whether a prompt too long for the window and the budget keeps only its last
         *     tokens instead of being rejected
         * @return this builder
         */
        public Builder truncatePrompt(boolean value) {
            truncatePrompt = value;
            return this;
        }

        /**
         * Constrains every output, e.g. {@code OutputConstraint.jsonSchema(schema)}.
         *
         * @param value the constraint, or {@code null} for free text
         * @return this builder
         */
        public Builder optConstraint(OutputConstraint value) {
            constraint = value;
            return this;
        }

        /**
         * @return the config
         * @throws IllegalArgumentException naming the field of an invalid value
         */
        public GenerationConfig build() {
            return new GenerationConfig(
                    maxNewTokens,
                    doSample,
                    temperature,
                    topK,
                    topP,
                    minP,
                    repetitionPenalty,
                    logitAdjustments,
                    topLogprobs,
                    seed,
                    stopStrings,
                    eosTokenIds,
                    numReturnSequences,
                    returnLogprobs,
                    truncatePrompt,
                    constraint);
        }
    }
}
