package io.github.djlllmzoo.translators;

/** Why generation of a sequence ended, with the names OpenAI and Hugging Face users know. */
public enum FinishReason {
    /** The token budget ({@code maxNewTokens}) or the context window was reached. */
    LENGTH,
    /** The model produced an end-of-sequence token. */
    EOS,
    /** The text reached a stop string. */
    STOP,
    /**
     * The request was cancelled: its {@link GenerationListener#isCancelled()} turned true (e.g. its
     * client went away); the sequence holds what was generated before.
     */
    CANCELLED;

    /** @return the lower-case name used in JSON output ("length", "eos", "stop") */
    public String jsonName() {
        return name().toLowerCase(java.util.Locale.ROOT);
    }
}
