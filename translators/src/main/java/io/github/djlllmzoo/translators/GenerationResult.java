package io.github.djlllmzoo.translators;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * What one {@link GenerationRequest} produced: one {@link Completion} per returned sequence, and
 * timings. {@link #text()}, {@link #tokenIds()} and {@link #finishReason()} read the first
 * sequence, the only one unless {@code numReturnSequences} was raised.
 *
 * @param completions the sequences, in order
 * @param promptTokens the number of prompt tokens
 * @param timings how long it took
 */
public record GenerationResult(List<Completion> completions, int promptTokens, GenerationTimings timings) {

    /**
     * Copies the list.
     *
     * @param completions the sequences, in order
     * @param promptTokens the number of prompt tokens
     * @param timings how long it took
     */
    public GenerationResult {
        completions = List.copyOf(completions);
    }

    /**
     * The result of a request's ended sequences.
     *
     * @param sequences the request's sequences, in order, all ended
     * @param startNanos {@link System#nanoTime()} when the request's timings start
     * @return their completions, with the time to the first token any of them took and to the
     *     last one's end
     * @throws IllegalStateException if a sequence has not ended
     */
    public static GenerationResult of(List<SequenceState> sequences, long startNanos) {
        List<Completion> completions = new ArrayList<>(sequences.size());
        long firstToken = Long.MAX_VALUE;
        long end = startNanos;
        int tokens = 0;
        for (SequenceState sequence : sequences) {
            Completion completion = sequence.completion();
            completions.add(completion);
            if (sequence.firstTokenNanos() != 0) {
                firstToken = Math.min(firstToken, sequence.firstTokenNanos());
            }
            end = Math.max(end, sequence.endNanos());
            tokens += completion.tokenIds().length;
        }
        Duration ttft = Duration.ofNanos((firstToken == Long.MAX_VALUE ? end : firstToken) - startNanos);
        GenerationTimings timings = new GenerationTimings(ttft, Duration.ofNanos(end - startNanos), tokens);
        return new GenerationResult(completions, sequences.get(0).promptLength(), timings);
    }

    /** @return the text of the first sequence ({@code null} without a tokenizer) */
    public String text() {
        return completions.get(0).text();
    }

    /** @return the new token ids of the first sequence */
    public long[] tokenIds() {
        return completions.get(0).tokenIds();
    }

    /** @return why the first sequence ended */
    public FinishReason finishReason() {
        return completions.get(0).finishReason();
    }
}
