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
     * Compiles a constraint without the vocabulary's cache of compiled constraints (for timing a
     * compilation; {@link TokenVocabulary#compile} is the one to use otherwise).
     *
     * @param constraint the constraint
     * @param vocabulary the vocabulary
     * @return the compiled constraint, its start state closed
     * @throws InvalidConstraintException if the constraint is malformed or unsupported
     */
    public static CompiledConstraint compile(OutputConstraint constraint, TokenVocabulary vocabulary) {
        return new CompiledConstraint(ConstraintCompiler.compile(constraint), vocabulary);
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
