package io.github.djlllmzoo.translators;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.constrained.CompiledConstraint;
import io.github.djlllmzoo.constrained.ConstraintState;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Generates for many prompts at once: every sequence (each prompt times its {@code
 * numReturnSequences}) is a row of one batch. Prompts of different lengths are left-padded, with
 * an attention mask that hides the padding and per-row positions that start at 0 at each row's
 * first real token, so a row computes what it would alone. One prefill forward over the padded
 * prompts fills a batched {@link KvCache}; then each decode step feeds every row its last token.
 * Each row picks its tokens with its own processors and seeded {@link Sampler} and ends on its own
 * (EOS, stop string, budget, or its request's listener cancelling it); the batch runs until the
 * last row ends.
 *
 * <p>Every array a step makes lives in a manager scoped to that step. Stateless apart from the
 * model: safe to use from many threads at once.
 */
public final class BatchGenerator {

    /** The token fed for padding; the mask hides it, so any id of the vocabulary does. */
    private static final long PAD_ID = 0;

    private final CausalLmBlock model;
    private final NDManager manager;
    private final TextTokenizer tokenizer;

    /**
     * @param model the model block, its parameters loaded
     * @param manager a manager on the model's device; steps and caches use sub-managers
     * @param tokenizer the tokenizer, or {@code null} when prompts come as ids and no text is
     *     wanted
     */
    public BatchGenerator(CausalLmBlock model, NDManager manager, TextTokenizer tokenizer) {
        this.model = model;
        this.manager = manager;
        this.tokenizer = tokenizer;
    }

    /**
     * Generates for every request, all in one batch where the context window allows.
     *
     * @param requests the requests
     * @param defaults the config of requests that carry none, or {@code null} when all carry one
     * @return one result per request, in order
     * @throws IllegalArgumentException if a prompt is empty and the model has no BOS token, has ids
     *     outside the vocabulary or exceeds the context window (unless the config truncates it), or
     *     needs a tokenizer there is none of
     * @throws IllegalStateException if the model has been closed
     */
    public List<GenerationResult> generate(List<GenerationRequest> requests, GenerationConfig defaults) {
        if (!manager.isOpen()) {
            throw new IllegalStateException(
                    "the model is closed (its NDManager " + manager.getName() + " was closed)");
        }
        long start = System.nanoTime();
        List<List<Row>> byRequest = new ArrayList<>(requests.size());
        List<Row> runnable = new ArrayList<>();
        for (GenerationRequest request : requests) {
            GenerationConfig config = request.config() != null ? request.config() : defaults;
            if (config == null) {
                throw new IllegalArgumentException("the request has no GenerationConfig and there are no defaults");
            }
            List<Row> rows = rows(request, config);
            byRequest.add(rows);
            for (Row row : rows) {
                if (row.cancelled()) {
                    finish(row, FinishReason.CANCELLED);
                } else if (row.budget > 0) {
                    runnable.add(row);
                } else {
                    finish(row, FinishReason.LENGTH);
                }
            }
        }
        run(runnable);
        List<GenerationResult> results = new ArrayList<>(requests.size());
        for (List<Row> rows : byRequest) {
            results.add(result(rows, start));
        }
        return results;
    }

    private List<Row> rows(GenerationRequest request, GenerationConfig config) {
        long[] prompt;
        if (request.promptIds() != null) {
            prompt = request.promptIds();
        } else {
            prompt = requireTokenizer("a text prompt").encode(request.prompt());
        }
        if (prompt.length == 0 && model.config().bosTokenId() != null) {
            prompt = new long[] {model.config().bosTokenId()};
        }
        prompt = truncated(prompt, config);
        Generator.validatePrompt(model.config(), prompt);
        StopStrings stops = new StopStrings(config.stopStrings());
        if (!stops.isEmpty()) {
            requireTokenizer("stop strings");
        }
        long seed = config.seed() != null ? config.seed() : ThreadLocalRandom.current().nextLong();
        List<Sampler> samplers = Sampler.seeded(seed, config.numReturnSequences());
        LogitsProcessorChain chain = LogitsProcessorChain.forConfig(config, prompt.length);
        int budget = Math.min(config.maxNewTokens(), model.config().maxPositions() - prompt.length);
        boolean streamText =
                tokenizer != null && (request.listener() != null || !stops.isEmpty());
        CompiledConstraint constraint =
                config.constraint() == null
                        ? null
                        : requireTokenizer("an output constraint").tokenVocabulary().compile(config.constraint());
        List<Row> rows = new ArrayList<>(config.numReturnSequences());
        for (int n = 0; n < config.numReturnSequences(); n++) {
            IncrementalDetokenizer text =
                    streamText ? new IncrementalDetokenizer(tokenizer, stops) : null;
            ConstraintState state = constraint == null ? null : constraint.newState(config.eosTokenIds());
            rows.add(
                    new Row(n, prompt, budget, config, chain, samplers.get(n), text, request.listener(), state));
        }
        return rows;
    }

    /**
     * The prompt's last tokens when the config asks to truncate and the prompt leaves no room for
     * the budget in the context window; else the prompt itself.
     */
    private long[] truncated(long[] prompt, GenerationConfig config) {
        int window = model.config().maxPositions();
        if (!config.truncatePrompt() || prompt.length + config.maxNewTokens() <= window) {
            return prompt;
        }
        int keep = Math.min(prompt.length, Math.max(1, window - config.maxNewTokens()));
        return Arrays.copyOfRange(prompt, prompt.length - keep, prompt.length);
    }

    private TextTokenizer requireTokenizer(String what) {
        if (tokenizer == null) {
            throw new IllegalArgumentException(
                    what + " needs the model's tokenizer, and this model has none; give token ids");
        }
        return tokenizer;
    }

    /** Runs rows in one batch, or splits them when padded prompts plus budget overflow the window. */
    private void run(List<Row> rows) {
        if (rows.isEmpty()) {
            return;
        }
        int promptLength = rows.stream().mapToInt(r -> r.promptLength).max().getAsInt();
        int steps = rows.stream().mapToInt(r -> r.budget).max().getAsInt();
        if (rows.size() > 1 && promptLength + steps - 1 > model.config().maxPositions()) {
            int half = rows.size() / 2;
            run(rows.subList(0, half));
            run(rows.subList(half, rows.size()));
            return;
        }
        decode(rows, promptLength, steps);
    }

    private void decode(List<Row> rows, int promptLength, int steps) {
        int b = rows.size();
        boolean padded = rows.stream().anyMatch(r -> r.promptLength < promptLength);
        try (KvCache cache = model.newCache(manager, b, promptLength + steps - 1)) {
            long[] ids = new long[b * promptLength];
            Arrays.fill(ids, PAD_ID);
            for (int r = 0; r < b; r++) {
                Row row = rows.get(r);
                System.arraycopy(
                        row.context, 0, ids, r * promptLength + promptLength - row.promptLength,
                        row.promptLength);
            }
            long[] promptMask = padded ? mask(rows, promptLength, promptLength) : null;
            float[] logits = forward(ids, b, promptLength, promptMask, null, cache);
            for (int generated = 1; ; generated++) {
                boolean active = false;
                for (int r = 0; r < b; r++) {
                    Row row = rows.get(r);
                    if (!row.done) {
                        if (row.cancelled()) {
                            finish(row, FinishReason.CANCELLED);
                        } else {
                            step(row, logits, r);
                        }
                        active |= !row.done;
                    }
                }
                if (!active) {
                    return;
                }
                long[] next = new long[b];
                long[] positions = padded ? new long[b] : null;
                for (int r = 0; r < b; r++) {
                    Row row = rows.get(r);
                    next[r] = row.context[row.length - 1];
                    if (padded) {
                        positions[r] = row.promptLength + generated - 1;
                    }
                }
                long[] mask = padded ? mask(rows, promptLength, promptLength + generated) : null;
                logits = forward(next, b, 1, mask, positions, cache);
            }
        }
    }

    /**
     * The attention mask once each row has {@code width - longest} tokens after the prompts.
     *
     * @return (B, width) with 0 for each row's left padding and 1 after it
     */
    private static long[] mask(List<Row> rows, int longest, int width) {
        long[] mask = new long[rows.size() * width];
        for (int r = 0; r < rows.size(); r++) {
            int padding = longest - rows.get(r).promptLength;
            Arrays.fill(mask, r * width + padding, (r + 1) * width, 1L);
        }
        return mask;
    }

    /**
     * One forward pass over new tokens of every row.
     *
     * @return the logits of each row's last position, (B * V) row-major
     */
    private float[] forward(long[] ids, int b, int t, long[] mask, long[] positions, KvCache cache) {
        NDManager step = manager.newSubManager();
        try {
            NDArray input = step.create(ids, new Shape(b, t));
            NDArray maskArray = null;
            NDArray positionArray = null;
            if (mask != null) {
                maskArray = step.create(mask, new Shape(b, mask.length / b)); // (B, past + T)
                positionArray =
                        positions != null
                                ? step.create(positions, new Shape(b, t))
                                : CausalLmBlock.positionsFromMask(maskArray); // (B, T)
            }
            NDArray logits =
                    model.forward(null, input, positionArray, maskArray, cache, true, false); // (B, 1, V)
            return logits.toType(DataType.FLOAT32, false).toFloatArray();
        } finally {
            model.kernels().closeStep(step);
        }
    }

    /**
     * Picks a row's next token from its logits and records it, ending the row when due. A
     * constrained row's logits are masked first, so the processors and the sampler only ever see
     * tokens that keep its output valid; its state then advances on the token picked.
     */
    private void step(Row row, float[] batchLogits, int r) {
        if (row.constraint != null && row.constraint.isFinished()) {
            finish(row, FinishReason.STOP); // an empty constraint: complete before any token
            return;
        }
        int vocab = model.config().vocabSize();
        float[] raw = Arrays.copyOfRange(batchLogits, r * vocab, (r + 1) * vocab);
        float[] logits = row.chain.isEmpty() && row.constraint == null ? raw : raw.clone();
        if (row.constraint != null) {
            row.constraint.mask(logits);
        }
        row.chain.process(row.context, row.length, logits);
        int token = row.config.isGreedy() ? Sampler.argmax(logits) : row.sampler.sample(logits);
        if (row.firstTokenNanos == 0) {
            row.firstTokenNanos = System.nanoTime();
        }
        if (row.config.eosTokenIds().contains(token)) {
            finish(row, FinishReason.EOS);
            return;
        }
        if (row.constraint != null) {
            row.constraint.accept(token);
        }
        if (row.logprobs != null) {
            double normalizer = Sampler.logNormalizer(raw);
            row.logprobs[row.produced()] = (float) (raw[token] - normalizer);
            if (row.topLogprobs != null) {
                row.topLogprobs.add(mostLikely(raw, normalizer, row.config.topLogprobs()));
            }
        }
        row.context[row.length++] = token;
        if (row.listener != null) {
            row.listener.onToken(row.sequence, token);
        }
        if (row.text != null) {
            row.emit(row.text.accept(token));
            if (row.text.stopped()) {
                finish(row, FinishReason.STOP);
                return;
            }
        }
        if (row.constraint != null && row.constraint.isFinished()) {
            finish(row, FinishReason.STOP); // complete, and nothing may follow: no step for an EOS
            return;
        }
        if (row.produced() == row.budget) {
            finish(row, FinishReason.LENGTH);
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

    private void finish(Row row, FinishReason reason) {
        row.done = true;
        row.reason = reason;
        row.endNanos = System.nanoTime();
        if (row.text != null) {
            row.emit(row.text.finish());
        }
        if (row.listener != null) {
            row.listener.onFinish(row.sequence, reason);
        }
    }

    private GenerationResult result(List<Row> rows, long start) {
        List<Completion> completions = new ArrayList<>(rows.size());
        long firstToken = Long.MAX_VALUE;
        long end = start;
        int tokens = 0;
        for (Row row : rows) {
            long[] ids = Arrays.copyOfRange(row.context, row.promptLength, row.length);
            String text;
            if (row.text != null) {
                text = row.text.text();
            } else {
                text = tokenizer != null ? tokenizer.decode(ids) : null;
            }
            float[] logprobs = row.logprobs == null ? null : Arrays.copyOf(row.logprobs, ids.length);
            List<List<TokenLogprob>> top =
                    row.topLogprobs == null
                            ? null
                            : List.copyOf(row.topLogprobs.subList(0, ids.length));
            completions.add(new Completion(text, ids, row.reason, logprobs, top));
            if (row.firstTokenNanos != 0) {
                firstToken = Math.min(firstToken, row.firstTokenNanos);
            }
            end = Math.max(end, row.endNanos);
            tokens += ids.length;
        }
        Duration ttft = Duration.ofNanos((firstToken == Long.MAX_VALUE ? end : firstToken) - start);
        GenerationTimings timings = new GenerationTimings(ttft, Duration.ofNanos(end - start), tokens);
        return new GenerationResult(completions, rows.get(0).promptLength, timings);
    }

    /** The state of one sequence being generated. */
    private static final class Row {
        final int sequence;
        final int promptLength;
        final int budget;
        final GenerationConfig config;
        final LogitsProcessorChain chain;
        final Sampler sampler;
        final IncrementalDetokenizer text;
        final GenerationListener listener;
        /** Where the row's output stands in its config's constraint, or {@code null}. */
        final ConstraintState constraint;
        /** The prompt, then the generated tokens. */
        final long[] context;
        final float[] logprobs;
        /** Each new token's alternatives, when asked for. */
        final List<List<TokenLogprob>> topLogprobs;
        int length;
        boolean done;
        FinishReason reason;
        long firstTokenNanos;
        long endNanos;

        Row(
                int sequence,
                long[] prompt,
                int budget,
                GenerationConfig config,
                LogitsProcessorChain chain,
                Sampler sampler,
                IncrementalDetokenizer text,
                GenerationListener listener,
                ConstraintState constraint) {
            this.sequence = sequence;
            this.promptLength = prompt.length;
            this.budget = Math.max(budget, 0);
            this.config = config;
            this.chain = chain;
            this.sampler = sampler;
            this.text = text;
            this.listener = listener;
            this.constraint = constraint;
            this.context = Arrays.copyOf(prompt, prompt.length + this.budget);
            this.length = prompt.length;
            this.logprobs = config.returnLogprobs() ? new float[this.budget] : null;
            this.topLogprobs =
                    config.returnLogprobs() && config.topLogprobs() > 0 ? new ArrayList<>() : null;
        }

        int produced() {
            return length - promptLength;
        }

        boolean cancelled() {
            return listener != null && listener.isCancelled();
        }

        void emit(String piece) {
            if (listener != null && !piece.isEmpty()) {
                listener.onText(sequence, piece);
            }
        }
    }
}
