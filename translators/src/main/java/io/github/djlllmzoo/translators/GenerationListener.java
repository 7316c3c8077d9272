package io.github.djlllmzoo.translators;

/**
 * Receives a generation as it happens, e.g. to push server-sent events. Called on the generating
 * thread, in order, for each sequence of a request ({@code sequence} is its index, 0 to {@code
 * numReturnSequences - 1}); must not block for long, as generation waits for it.
 *
 * <p>Text pieces are whole characters: a character whose bytes span several tokens arrives when
 * its last byte does, and text that could be the start of a stop string is held back until it is
 * known not to be. The pieces of a sequence concatenate to its final text.
 */
@FunctionalInterface
public interface GenerationListener {

    /**
     * New text of a sequence (never empty).
     *
     * @param sequence the index of the sequence
     * @param piece the text that follows what was sent before
     */
    void onText(int sequence, String piece);

    /**
     * A new token of a sequence (not called for the EOS token that ends it).
     *
     * @param sequence the index of the sequence
     * @param tokenId the token id
     */
    default void onToken(int sequence, long tokenId) {}

    /**
     * A sequence ended; no more calls for it follow.
     *
     * @param sequence the index of the sequence
     * @param reason why it ended
     */
    default void onFinish(int sequence, FinishReason reason) {}

    /**
     * A sequence ended, with its whole state: its {@link SequenceState#completion()} is its result.
     * No more calls for it follow. Calls {@link #onFinish(int, FinishReason)} unless overridden.
     *
     * @param sequence the sequence
     */
    default void onFinish(SequenceState sequence) {
        onFinish(sequence.index(), sequence.finishReason());
    }

    /**
     * Whether the request is no longer wanted, e.g. because its client disconnected. Checked before
     * each step; once true, the request's unfinished sequences end with {@link
     * FinishReason#CANCELLED} and generation for them stops (batch-mates go on). Called on the
     * generating thread, so it must be cheap.
     *
     * @return true to stop generating for this request
     */
    default boolean isCancelled() {
        return false;
    }
}
