package io.github.djlllmzoo.translators;

import java.util.List;

/**
 * How to generate: the token budget and which tokens end a sequence. Immutable; build with {@link
 * #builder()}.
 *
 * @param maxNewTokens the most tokens to generate (≥ 1)
 * @param eosTokenIds tokens that end a sequence (any of them)
 */
public record GenerationConfig(int maxNewTokens, List<Integer> eosTokenIds) {

    /** The token budget when none is given, as Hugging Face's default of 20 is too short. */
    public static final int DEFAULT_MAX_NEW_TOKENS = 32;

    /** Validates the values. */
    public GenerationConfig {
        if (maxNewTokens < 1) {
            throw new IllegalArgumentException("maxNewTokens must be at least 1, got " + maxNewTokens);
        }
        eosTokenIds = List.copyOf(eosTokenIds);
    }

    /** @return a builder with the defaults */
    public static Builder builder() {
        return new Builder();
    }

    /** Builds a {@link GenerationConfig}. */
    public static final class Builder {
        private int maxNewTokens = DEFAULT_MAX_NEW_TOKENS;
        private List<Integer> eosTokenIds = List.of();

        /**
         * @param value the most tokens to generate
         * @return this builder
         */
        public Builder maxNewTokens(int value) {
            maxNewTokens = value;
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

        /** @return the config */
        public GenerationConfig build() {
            return new GenerationConfig(maxNewTokens, eosTokenIds);
        }
    }
}
