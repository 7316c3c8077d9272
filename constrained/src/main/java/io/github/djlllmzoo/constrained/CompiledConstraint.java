package io.github.djlllmzoo.constrained;

import java.util.Collection;

/**
 * An {@link OutputConstraint} compiled against a {@link TokenVocabulary}: made by {@link
 * TokenVocabulary#compile}, shared by every row and request that uses the same constraint (it
 * keeps what it has worked out about each grammar state, so later rows decode faster), and
 * thread-safe. Each generated sequence gets its own {@link ConstraintState}.
 */
public final class CompiledConstraint {

    private final Matcher matcher;
    private final TokenVocabulary vocabulary;

    CompiledConstraint(Grammar grammar, TokenVocabulary vocabulary) {
        this.matcher = new Matcher(grammar);
        this.vocabulary = vocabulary;
    }

    /**
     * @param eosTokenIds the tokens that end a sequence; allowed exactly when the output is complete
     * @return a state at the start of an output
     */
    public ConstraintState newState(Collection<Integer> eosTokenIds) {
        int[] eos = eosTokenIds.stream().mapToInt(Integer::intValue).toArray();
        return new ConstraintState(this, eos);
    }

    Matcher matcher() {
        return matcher;
    }

    TokenVocabulary vocabulary() {
        return vocabulary;
    }

    /** @return how many matcher states have been reached so far (they are kept) */
    public int knownStates() {
        return matcher.stateCount();
    }
}
