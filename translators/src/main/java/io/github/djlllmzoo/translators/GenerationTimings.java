package io.github.djlllmzoo.translators;

import java.time.Duration;

/**
 * How long a request took, measured from when generation began (tokenization included).
 *
 * @param timeToFirstToken until the first new token was picked (tokenization and prefill)
 * @param total until the last sequence ended
 * @param generatedTokens new tokens over all sequences of the request
 */
public record GenerationTimings(Duration timeToFirstToken, Duration total, int generatedTokens) {

    /** @return new tokens per second of total time, or 0 when no time passed */
    public double tokensPerSecond() {
        double seconds = total.toNanos() / 1e9;
        return seconds > 0 ? generatedTokens / seconds : 0;
    }
}
