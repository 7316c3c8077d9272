package io.github.djlllmzoo.translators;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.LoraAdapter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;

/**
 * Generates for many prompts at once: every sequence (each prompt times its {@code
 * numReturnSequences}) is a row of one batch. Prompts of different lengths are left-padded, with
 * an attention mask that hides the padding and per-row positions that start at 0 at each row's
 * first real token, so a row computes what it would alone. One prefill forward over the padded
 * prompts fills a batched {@link KvCache}; then each decode step feeds every row its last token.
 * Each row is a {@link SequenceState}, which picks its tokens with its own processors, seeded
 * {@link Sampler} and constraint, and ends on its own (EOS, stop string, budget, or its request's
 * listener cancelling it); this class only runs the model for the rows, and the batch runs until
 * the last row ends. Each row computes with its request's LoRA adapter ({@link
 * GenerationRequest#adapter()}, else the one the calling thread selected): a batch of requests for
 * different adapters runs as one, each row with its own ({@link LoraAdapter#selectRows}).
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
        requireAttached(requests);
        List<List<SequenceState>> byRequest = new ArrayList<>(requests.size());
        List<SequenceState> runnable = new ArrayList<>();
        for (GenerationRequest request : requests) {
            GenerationConfig config = request.config() != null ? request.config() : defaults;
            if (config == null) {
                throw new IllegalArgumentException("the request has no GenerationConfig and there are no defaults");
            }
            List<SequenceState> rows = rows(request, config);
            byRequest.add(rows);
            for (SequenceState row : rows) {
                if (!row.endIfDue()) {
                    runnable.add(row);
                }
            }
        }
        run(runnable);
        List<GenerationResult> results = new ArrayList<>(requests.size());
        for (List<SequenceState> rows : byRequest) {
            results.add(GenerationResult.of(rows, start));
        }
        return results;
    }

    /**
     * @throws IllegalArgumentException if a request names an adapter the model has none attached
     *     under (it would silently compute with the base weights)
     */
    private void requireAttached(List<GenerationRequest> requests) {
        Set<String> attached = null;
        for (GenerationRequest request : requests) {
            if (request.adapter() == null) {
                continue;
            }
            if (attached == null) {
                attached = LoraAdapter.attachedNames(model);
            }
            if (!attached.contains(request.adapter())) {
                throw new IllegalArgumentException(
                        "the request's adapter '" + request.adapter() + "' is not attached to the model; attached: "
                                + attached);
            }
        }
    }

    private List<SequenceState> rows(GenerationRequest request, GenerationConfig config) {
        long[] prompt;
        if (request.promptIds() != null) {
            prompt = request.promptIds();
        } else {
            prompt = SequenceState.requireTokenizer(tokenizer, "a text prompt").encode(request.prompt());
        }
        if (prompt.length == 0 && model.config().bosTokenId() != null) {
            prompt = new long[] {model.config().bosTokenId()};
        }
        prompt = truncated(prompt, config);
        Generator.validatePrompt(model.config(), prompt);
        return SequenceState.builder(prompt, config)
                .contextWindow(model.config().maxPositions())
                .tokenizer(tokenizer)
                .listener(request.listener())
                .adapter(request.adapter() != null ? request.adapter() : LoraAdapter.selected())
                .build();
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

    /** Runs rows in one batch, or splits them when padded prompts plus budget overflow the window. */
    private void run(List<SequenceState> rows) {
        if (rows.isEmpty()) {
            return;
        }
        int promptLength = rows.stream().mapToInt(SequenceState::promptLength).max().getAsInt();
        int steps = rows.stream().mapToInt(SequenceState::budget).max().getAsInt();
        if (rows.size() > 1 && promptLength + steps - 1 > model.config().maxPositions()) {
            int half = rows.size() / 2;
            run(rows.subList(0, half));
            run(rows.subList(half, rows.size()));
            return;
        }
        decode(rows, promptLength, steps);
    }

    private void decode(List<SequenceState> rows, int promptLength, int steps) {
        int b = rows.size();
        boolean padded = rows.stream().anyMatch(r -> r.promptLength() < promptLength);
        List<String> adapters = rows.stream().map(SequenceState::adapter).toList();
        try (LoraAdapter.Selection selection = LoraAdapter.selectRows(adapters);
                KvCache cache = model.newCache(manager, b, promptLength + steps - 1)) {
            long[] ids = new long[b * promptLength];
            Arrays.fill(ids, PAD_ID);
            for (int r = 0; r < b; r++) {
                SequenceState row = rows.get(r);
                System.arraycopy(
                        row.promptIds(), 0, ids, r * promptLength + promptLength - row.promptLength(),
                        row.promptLength());
            }
            long[] promptMask = padded ? mask(rows, promptLength, promptLength) : null;
            // every row plain greedy: each step's tokens are the kernels' argmax where the logits are
            boolean argmaxOnly = rows.stream().allMatch(SequenceState::picksPlainArgmax);
            Step logits = forward(ids, b, promptLength, promptMask, null, cache, argmaxOnly);
            int vocab = model.config().vocabSize();
            for (int generated = 1; ; generated++) {
                boolean active = false;
                for (int r = 0; r < b; r++) {
                    SequenceState row = rows.get(r);
                    if (row.endIfDue()) {
                        continue;
                    }
                    if (logits.picked() != null) {
                        active |= !row.accept(Math.toIntExact(logits.picked()[r]), null);
                    } else {
                        // one row's logits are the whole array: no copy (advance only reads them)
                        float[] all = logits.logits();
                        float[] own = b == 1 && all.length == vocab ? all : Arrays.copyOfRange(all, r * vocab, (r + 1) * vocab);
                        active |= !row.advance(own);
                    }
                }
                if (!active) {
                    return;
                }
                long[] next = new long[b];
                long[] positions = padded ? new long[b] : null;
                for (int r = 0; r < b; r++) {
                    SequenceState row = rows.get(r);
                    next[r] = row.lastToken();
                    if (padded) {
                        positions[r] = row.promptLength() + generated - 1;
                    }
                }
                long[] mask = padded ? mask(rows, promptLength, promptLength + generated) : null;
                logits = forward(next, b, 1, mask, positions, cache, argmaxOnly);
            }
        }
    }

    /**
     * The attention mask once each row has {@code width - longest} tokens after the prompts.
     *
     * @return (B, width) with 0 for each row's left padding and 1 after it
     */
    private static long[] mask(List<SequenceState> rows, int longest, int width) {
        long[] mask = new long[rows.size() * width];
        for (int r = 0; r < rows.size(); r++) {
            int padding = longest - rows.get(r).promptLength();
            Arrays.fill(mask, r * width + padding, (r + 1) * width, 1L);
        }
        return mask;
    }

    /**
     * What a pass hands back: each row's last-position logits, (B * V) row-major, or where only
     * their argmax is wanted each row's argmax.
     */
    private record Step(float[] logits, long[] picked) {}

    /**
     * One forward pass over new tokens of every row.
     *
     * @param argmaxOnly whether to hand back each row's argmax instead of its logits
     * @return the logits of each row's last position, or their argmax
     */
    private Step forward(long[] ids, int b, int t, long[] mask, long[] positions, KvCache cache, boolean argmaxOnly) {
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
            return argmaxOnly
                    ? new Step(null, model.kernels().argMax(logits))
                    : new Step(logits.toType(DataType.FLOAT32, false).toFloatArray(), null);
        } finally {
            model.kernels().closeStep(step);
        }
    }
}
