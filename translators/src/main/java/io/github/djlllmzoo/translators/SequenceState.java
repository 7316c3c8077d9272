package io.github.djlllmzoo.translators;

import io.github.djlllmzoo.constrained.CompiledConstraint;
import io.github.djlllmzoo.constrained.ConstraintState;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * One sequence being generated, with everything that decides its tokens and its end: its own
 * logits processors, seeded {@link Sampler}, constraint state, detokenized text and stop strings,
 * log-probabilities, timings and listener (llama.cpp's {@code server_slot}, transformers'
 * continuous-batching {@code RequestState}). Whoever runs the model feeds it each step's logits
 * through {@link #advance}, which picks the next token ({@link #nextToken}) and takes it ({@link
 * #accept}), answering whether the sequence ended; {@link #finishReason()} says why (EOS, stop
 * string, budget or context window, cancelled). At the end, {@link #completion()} is the sequence
 * as a result. It knows nothing of the model, its batch or its cache, so a batch generator or a
 * scheduler can add and drop sequences at any step.
 *
 * <p>Not thread-safe: one thread advances it.
 */
public final class SequenceState {

    private final int index;
    private final int promptLength;
    private final int budget;
    private final GenerationConfig config;
    private final LogitsProcessorChain chain;
    private final Sampler sampler;
    private final TextTokenizer tokenizer;
    /** Streams the text and watches for stop strings, or {@code null} when neither is wanted. */
    private final IncrementalDetokenizer text;
    private final GenerationListener listener;
    /** The LoRA adapter its rows compute with, or {@code null} for the model's own weights. */
    private final String adapter;
    /** Where the output stands in the config's constraint, or {@code null}. */
    private final ConstraintState constraint;
    /** The prompt, then the generated tokens. */
    private final long[] context;
    private final float[] logprobs;
    /** Each new token's alternatives, when asked for. */
    private final List<List<TokenLogprob>> topLogprobs;
    private int length;
    private FinishReason reason;
    private long firstTokenNanos;
    private long endNanos;

    private SequenceState(Builder builder, int index, Sampler sampler, ConstraintState constraint) {
        this.index = index;
        this.promptLength = builder.prompt.length;
        this.config = builder.config;
        int room = builder.contextWindow - promptLength;
        this.budget = Math.max(Math.min(config.maxNewTokens(), room), 0);
        this.chain = builder.chain;
        this.sampler = sampler;
        this.tokenizer = builder.tokenizer;
        this.text = builder.streamText ? new IncrementalDetokenizer(tokenizer, builder.stops) : null;
        this.listener = builder.listener;
        this.adapter = builder.adapter;
        this.constraint = constraint;
        this.context = Arrays.copyOf(builder.prompt, promptLength + budget);
        this.length = promptLength;
        this.logprobs = config.returnLogprobs() ? new float[budget] : null;
        this.topLogprobs = config.returnLogprobs() && config.topLogprobs() > 0 ? new ArrayList<>() : null;
    }

    /**
     * Starts describing the sequences of one request.
     *
     * @param prompt the prompt's token ids, as the model will see them (truncated if need be)
     * @param config the request's config
     * @return a builder
     */
    public static Builder builder(long[] prompt, GenerationConfig config) {
        return new Builder(prompt, config);
    }

    /** @return the sequence's index within its request, 0 to {@code numReturnSequences - 1} */
    public int index() {
        return index;
    }

    /**
     * @return the name of the LoRA adapter the model computes this sequence with ({@link
     *     io.github.djlllmzoo.blocks.LoraAdapter#selectRows}), or {@code null} for its own weights
     */
    public String adapter() {
        return adapter;
    }

    /** @return the number of prompt tokens */
    public int promptLength() {
        return promptLength;
    }

    /** @return the prompt's token ids (a copy) */
    public long[] promptIds() {
        return Arrays.copyOf(context, promptLength);
    }

    /** @return the most tokens it may generate: its config's budget, cut to the context window */
    public int budget() {
        return budget;
    }

    /** @return the number of tokens generated so far (an ending EOS not counted) */
    public int generatedTokens() {
        return length - promptLength;
    }

    /** @return the last token of the context: the prompt's last, then the last generated */
    public long lastToken() {
        return context[length - 1];
    }

    /** @return whether the sequence has ended */
    public boolean isFinished() {
        return reason != null;
    }

    /** @return why the sequence ended, or {@code null} while it runs */
    public FinishReason finishReason() {
        return reason;
    }

    /**
     * Ends the sequence if it must end before its next token: its request was cancelled (its
     * listener says so), its budget is spent, or its constraint's output is complete and nothing may
     * follow it.
     *
     * @return whether the sequence has ended
     */
    public boolean endIfDue() {
        if (reason != null) {
            return true;
        }
        if (listener != null && listener.isCancelled()) {
            finish(FinishReason.CANCELLED);
        } else if (generatedTokens() >= budget) {
            finish(FinishReason.LENGTH);
        } else if (constraint != null && constraint.isFinished()) {
            finish(FinishReason.STOP);
        }
        return reason != null;
    }

    /**
     * Picks the next token and takes it: {@code accept(nextToken(logits), logits)}.
     *
     * @param logits the model's next-token logits for this sequence (not modified)
     * @return whether the sequence ended
     */
    public boolean advance(float[] logits) {
        return accept(nextToken(logits), logits);
    }

    /**
     * Whether its next token is the logits' plain argmax and nothing else reads them: greedy, no
     * processors, no constraint, no log-probabilities. A caller may then pick it where the logits are
     * (a kernel's argmax over the model's output) and {@link #accept} it with no logits in Java.
     *
     * @return whether {@code accept(argmax, null)} is what {@link #advance} would do
     */
    public boolean picksPlainArgmax() {
        return config.isGreedy() && chain.isEmpty() && constraint == null && logprobs == null;
    }

    /**
     * Picks the next token from the model's logits: masked by the constraint first, so the
     * processors and the sampler only ever see tokens that keep the output valid, then processed and
     * sampled (or the most likely, when greedy) with this sequence's own seeded sampler.
     *
     * @param logits the model's next-token logits for this sequence (not modified)
     * @return the token id
     * @throws IllegalStateException if the sequence has ended
     */
    public int nextToken(float[] logits) {
        requireRunning();
        float[] processed = chain.isEmpty() && constraint == null ? logits : logits.clone();
        if (constraint != null) {
            constraint.mask(processed);
        }
        chain.process(context, length, processed);
        return config.isGreedy() ? Sampler.argmax(processed) : sampler.sample(processed);
    }

    /**
     * Takes the next token and ends the sequence when due: on EOS (which is not kept), when the text
     * reaches a stop string (the text ends before it), when the budget is spent, or when the
     * constraint lets nothing follow. The listener hears of the token, its text and the end.
     *
     * @param token the token id
     * @param logits the model's logits the token was picked from, for its log-probabilities (read
     *     only when the config returns them; may be {@code null} where {@link #picksPlainArgmax})
     * @return whether the sequence ended
     * @throws IllegalArgumentException if the constraint does not allow the token here
     * @throws IllegalStateException if the sequence has ended
     */
    public boolean accept(int token, float[] logits) {
        requireRunning();
        boolean eos = config.eosTokenIds().contains(token);
        if (constraint != null) {
            if (eos && !constraint.isAllowed(token)) {
                throw new IllegalArgumentException(
                        "EOS token " + token + " cannot end the constrained output here: it is incomplete");
            }
            if (!eos) {
                constraint.accept(token); // refuses a token that cannot continue the output
            }
        }
        if (firstTokenNanos == 0) {
            firstTokenNanos = System.nanoTime();
        }
        if (eos) {
            finish(FinishReason.EOS);
            return true;
        }
        if (logprobs != null) {
            double normalizer = Sampler.logNormalizer(logits);
            logprobs[generatedTokens()] = (float) (logits[token] - normalizer);
            if (topLogprobs != null) {
                topLogprobs.add(mostLikely(logits, normalizer, config.topLogprobs()));
            }
        }
        context[length++] = token;
        if (listener != null) {
            listener.onToken(index, token);
        }
        if (text != null) {
            emit(text.accept(token));
            if (text.stopped()) {
                finish(FinishReason.STOP);
                return true;
            }
        }
        if (generatedTokens() == budget) {
            finish(FinishReason.LENGTH);
        } else if (constraint != null && constraint.isFinished()) {
            finish(FinishReason.STOP); // complete, and nothing may follow
        }
        return reason != null;
    }

    /**
     * The sequence as a result.
     *
     * @return its text (ending before a stop string; {@code null} without a tokenizer), new token
     *     ids, finish reason and, when asked for, log-probabilities
     * @throws IllegalStateException if the sequence has not ended
     */
    public Completion completion() {
        if (reason == null) {
            throw new IllegalStateException("sequence " + index + " has not ended");
        }
        long[] ids = Arrays.copyOfRange(context, promptLength, length);
        String out;
        if (text != null) {
            out = text.text();
        } else {
            out = tokenizer != null ? tokenizer.decode(ids) : null;
        }
        float[] probabilities = logprobs == null ? null : Arrays.copyOf(logprobs, ids.length);
        List<List<TokenLogprob>> top = topLogprobs == null ? null : List.copyOf(topLogprobs);
        return new Completion(out, ids, reason, probabilities, top);
    }

    /** @return {@link System#nanoTime()} when its first token was taken, or 0 before */
    long firstTokenNanos() {
        return firstTokenNanos;
    }

    /** @return {@link System#nanoTime()} when it ended, or 0 before */
    long endNanos() {
        return endNanos;
    }

    private void requireRunning() {
        if (reason != null) {
            throw new IllegalStateException("sequence " + index + " has ended (" + reason.jsonName() + ")");
        }
    }

    private void finish(FinishReason why) {
        reason = why;
        endNanos = System.nanoTime();
        if (text != null) {
            emit(text.finish());
        }
        if (listener != null) {
            listener.onFinish(this);
        }
    }

    private void emit(String piece) {
        if (listener != null && !piece.isEmpty()) {
            listener.onText(index, piece);
        }
    }

    /** The {@code k} most likely tokens of raw logits with their log-probabilities. */
    private static List<TokenLogprob> mostLikely(float[] raw, double normalizer, int k) {
        int[] ids = LogitRanking.mostLikely(raw, Math.min(k, raw.length));
        List<TokenLogprob> out = new ArrayList<>(ids.length);
        for (int id : ids) {
            out.add(new TokenLogprob(id, (float) (raw[id] - normalizer)));
        }
        return out;
    }

    /**
     * @param tokenizer the tokenizer, or {@code null}
     * @param what what needs it, for the message
     * @return the tokenizer
     * @throws IllegalArgumentException if there is none
     */
    static TextTokenizer requireTokenizer(TextTokenizer tokenizer, String what) {
        if (tokenizer == null) {
            throw new IllegalArgumentException(
                    what + " needs the model's tokenizer, and this model has none; give token ids");
        }
        return tokenizer;
    }

    /**
     * Describes the sequences of one request ({@code numReturnSequences} of its config), which
     * share its prompt, processors and compiled constraint, each with its own sampler (all derived
     * from the config's seed, or a random one) and constraint state.
     */
    public static final class Builder {

        private final long[] prompt;
        private final GenerationConfig config;
        private int contextWindow = Integer.MAX_VALUE;
        private TextTokenizer tokenizer;
        private GenerationListener listener;
        private String adapter;
        private LogitsProcessorChain chain;
        private StopStrings stops;
        private boolean streamText;

        private Builder(long[] prompt, GenerationConfig config) {
            this.prompt = prompt.clone();
            this.config = config;
        }

        /**
         * @param tokens the model's context window: the budget is cut so the prompt and the new
         *     tokens fit it (no limit unless set)
         * @return this builder
         */
        public Builder contextWindow(int tokens) {
            this.contextWindow = tokens;
            return this;
        }

        /**
         * @param tokenizer the tokenizer, needed for text, stop strings and constraints ({@code null}
         *     for token ids only)
         * @return this builder
         */
        public Builder tokenizer(TextTokenizer tokenizer) {
            this.tokenizer = tokenizer;
            return this;
        }

        /**
         * @param listener who hears of the tokens, text and end of every sequence, and may cancel
         *     them ({@code null} for none)
         * @return this builder
         */
        public Builder listener(GenerationListener listener) {
            this.listener = listener;
            return this;
        }

        /**
         * @param name the LoRA adapter the model computes the sequences with, or {@code null} for
         *     the model's own weights (the default)
         * @return this builder
         */
        public Builder adapter(String name) {
            this.adapter = name;
            return this;
        }

        /**
         * Makes the sequences, compiling the config's constraint against the tokenizer's vocabulary
         * (which keeps it for later requests).
         *
         * @return one state per returned sequence, in order
         * @throws IllegalArgumentException if the config has stop strings or a constraint and there
         *     is no tokenizer
         */
        public List<SequenceState> build() {
            stops = new StopStrings(config.stopStrings());
            if (!stops.isEmpty()) {
                requireTokenizer(tokenizer, "stop strings");
            }
            streamText = tokenizer != null && (listener != null || !stops.isEmpty());
            CompiledConstraint compiled =
                    config.constraint() == null
                            ? null
                            : requireTokenizer(tokenizer, "an output constraint")
                                    .tokenVocabulary()
                                    .compile(config.constraint());
            chain = LogitsProcessorChain.forConfig(config, prompt.length);
            long seed = config.seed() != null ? config.seed() : ThreadLocalRandom.current().nextLong();
            int count = config.numReturnSequences();
            List<Sampler> samplers = Sampler.seeded(seed, count);
            List<SequenceState> out = new ArrayList<>(count);
            for (int n = 0; n < count; n++) {
                ConstraintState state = compiled == null ? null : compiled.newState(config.eosTokenIds());
                out.add(new SequenceState(this, n, samplers.get(n), state));
            }
            return out;
        }
    }
}
