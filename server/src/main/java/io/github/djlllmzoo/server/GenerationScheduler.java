package io.github.djlllmzoo.server;

import ai.djl.ndarray.NDManager;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.SlotKvCache;
import io.github.djlllmzoo.blocks.SlotPasses;
import io.github.djlllmzoo.translators.ContinuousBatch;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.PrefixCache;
import io.github.djlllmzoo.translators.StepCounters;
import io.github.djlllmzoo.translators.SequenceState;
import io.github.djlllmzoo.translators.TextTokenizer;
import io.github.djlllmzoo.zoo.LocalModel;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs generation requests with iteration-level scheduling (continuous batching): one loop thread
 * owns the model and, at every step, lets the sequences that ended leave and the waiting jobs join,
 * then runs one step of the {@link ContinuousBatch} (a chunk of a joining prompt, then one token of
 * every running sequence).
 *
 * <ul>
 *   <li>Admission: at most {@code maxConcurrency} jobs are admitted (waiting or generating); {@link
 *       #trySubmit} refuses more instead of queueing them, once it has checked, for some 130 ms,
 *       that no stream's client has gone.
 *   <li>Joining: the oldest waiting job joins as soon as the batch has rows for its sequences
 *       ({@code maxBatch} decoding, {@code prefillRows} more prefilled beside them, each taking a
 *       decode row once one is free) and the KV pool room for their reservations ({@code prompt + max_tokens}
 *       each, {@code kvCacheTokens} in all); jobs join in order, so a long one is not overtaken
 *       forever. A job that could never fit is refused by {@link #neverFits} before it is submitted.
 *   <li>Leaving: a sequence leaves at the step it ends (EOS, stop string, budget, its client gone, the
 *       request timeout) and frees its row and pool room at once; its job frees its slot when its
 *       last sequence ends, before its last event or result is handed over.
 * </ul>
 *
 * <p>A joining sequence reuses the keys and values of the longest prompt prefix it shares with an
 * earlier one of the same adapter ({@link PrefixCache}, {@link ServerOptions#prefixCacheTokens()}).
 *
 * <p>A job may name a LoRA adapter attached to the model; jobs of different adapters (and none)
 * run in one batch, each row with its own ({@link ContinuousBatch}, {@link LoraAdapter#selectRows}).
 */
public final class GenerationScheduler implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(GenerationScheduler.class);

    /**
     * How long after writing to a closed connection its reset is back, so that the next write fails:
     * a loopback or data-centre round trip (under a millisecond), with margin; the first gap
     * between rounds of client checks.
     */
    private static final Duration CLIENT_RESET = Duration.ofMillis(2);

    /**
     * Rounds of client checks before a refusal: 2 + 4 + ... + 64 = 126 ms of waiting, what a client's
     * close took to reach the server behind its next request on 2 cores at a load of 12 (2 rounds,
     * 4 ms, let 1 of 128 such requests be refused: {@code scripts/load-openai.sh --disconnect 0.3}).
     */
    private static final int CLIENT_CHECK_ROUNDS = 6;

    /** How long the idle loop waits for a job before it looks whether it was closed. */
    private static final long IDLE_POLL_MILLIS = 100;

    private final int maxConcurrency;
    private final int maxBatch;
    private final long batchWaitNanos;
    private final long retryAfterNanos;
    private final Semaphore slots;
    /** Requests waiting for a slot while the streams' clients are checked ({@link #acquireSlot}). */
    private final AtomicInteger waitingForSlot = new AtomicInteger();
    private final LinkedBlockingDeque<GenerationJob> queue;
    private final Set<GenerationJob> live = ConcurrentHashMap.newKeySet();
    private final ContinuousBatch batch;
    private final TextTokenizer tokenizer;
    private final int contextWindow;
    private final Thread loop;
    private final Duration requestTimeout;
    private final ScheduledThreadPoolExecutor timer;
    private volatile boolean closed;

    // the loop thread's own
    /** Jobs with sequences in the batch. */
    private final List<GenerationJob> inBatch = new ArrayList<>();

    private final LongAdder completed = new LongAdder();
    private final LongAdder cancelled = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder timedOut = new LongAdder();
    private final LongAdder rejected = new LongAdder();
    private final LongAdder generatedTokens = new LongAdder();
    private final LongAdder batches = new LongAdder();
    private final LongAdder batchedJobs = new LongAdder();
    private final LongAdder steps = new LongAdder();
    private final GenerationMetrics metrics = new GenerationMetrics();

    /**
     * Starts the loop over a loaded model.
     *
     * @param model the model, with its tokenizer; the loop computes with it until {@link #close()}
     * @param options the limits: {@link ServerOptions#maxConcurrency()}, {@link
     *     ServerOptions#maxBatch()}, {@link ServerOptions#kvCacheTokens()}, {@link
     *     ServerOptions#prefillChunk()}, {@link ServerOptions#batchWait()} (how long an idle loop
     *     waits for more jobs once one came) and {@link ServerOptions#requestTimeout()}
     */
    public GenerationScheduler(LocalModel model, ServerOptions options) {
        this(model.block(), model.model().getNDManager(), model.tokenizer(), options);
    }

    private GenerationScheduler(CausalLmBlock block, NDManager manager, TextTokenizer tokenizer, ServerOptions options) {
        this.requestTimeout = options.requestTimeout();
        this.timer =
                new ScheduledThreadPoolExecutor(
                        1,
                        r -> {
                            Thread t = new Thread(r, "llmzoo-request-timeout");
                            t.setDaemon(true);
                            return t;
                        });
        timer.setRemoveOnCancelPolicy(true);
        this.maxConcurrency = options.maxConcurrency();
        this.maxBatch = options.maxBatch();
        this.batchWaitNanos = options.batchWait().toNanos();
        this.retryAfterNanos = TimeUnit.SECONDS.toNanos(options.retryAfterSeconds());
        this.slots = new Semaphore(maxConcurrency);
        this.queue = new LinkedBlockingDeque<>(maxConcurrency);
        this.tokenizer = tokenizer;
        this.contextWindow = block.config().maxPositions();
        long budget = poolBudget(options.kvCacheTokens(), block, manager);
        // by default a joining prompt's chunk runs as long as a decode pass a step: the running
        // streams' time between tokens stays about twice a plain step's (docs/serving-production.md)
        this.batch = ContinuousBatch.builder(block, manager)
                .maxRows(maxBatch)
                .prefillRows(options.prefillRows())
                .prefillPassChunks(options.prefillPassChunks())
                .tokenBudget(budget)
                .prefillChunk(options.prefillChunk())
                .prefillStepTokens(options.prefillStepTokens() == ServerOptions.PREFILL_STEP_AS_LONG_AS_DECODE
                        ? ContinuousBatch.PREFILL_AS_LONG_AS_DECODE
                        : options.prefillStepTokens())
                .prefixCacheTokens(options.prefixCacheTokens(budget))
                .passTimer(metrics)
                .build();
        this.loop = new Thread(this::loop, "llmzoo-decode-loop");
        loop.setDaemon(true);
        loop.start();
    }

    /**
     * The KV pool's budget in positions, said in the log with its bytes and element type ({@code
     * --kv-cache-dtype}: a float16 pool holds twice the positions of a float32 one in the same
     * bytes): {@code --kv-cache-tokens} where given, else {@link KvPoolBudget#defaultTokens}.
     */
    private long poolBudget(long requested, CausalLmBlock block, NDManager manager) {
        long bytesPerToken;
        try (SlotKvCache shape = new SlotPasses(block).newCache(manager)) { // holds no buffers until reserved
            bytesPerToken = shape.bytesPerPosition();
        }
        String type = block.kvCacheDataType().toString().toLowerCase(Locale.ROOT);
        if (requested > 0) {
            LOG.info("KV pool: {} positions ({} MiB of {} keys and values, {} bytes a position) = --kv-cache-tokens",
                    requested, requested * bytesPerToken >> 20, type, bytesPerToken);
            return requested;
        }
        long available = KvPoolBudget.availableBytes();
        long budget = KvPoolBudget.defaultTokens(maxBatch, contextWindow, bytesPerToken, available);
        LOG.info(
                "KV pool: {} positions ({} MiB of {} keys and values, {} bytes a position) = {} (--max-batch {} x"
                        + " context window {}{}); --kv-cache-tokens sets it",
                budget,
                budget * bytesPerToken >> 20,
                type,
                bytesPerToken,
                budget < (long) maxBatch * contextWindow ? "half the memory available" : "every row a context window",
                maxBatch,
                contextWindow,
                available >= 0 ? ", " + (available >> 20) + " MiB available" : "");
        return budget;
    }

    /**
     * Why a job could never join the batch, however long it waited: its sequences need more rows
     * than the batch has, or their reservations ({@code prompt + max_tokens} each, within the
     * context window) more than the KV pool holds.
     *
     * @param promptTokens the prompt's tokens
     * @param config how to generate
     * @return the reason, naming the request's field at fault, or {@code null} where it fits
     */
    public String neverFits(int promptTokens, GenerationConfig config) {
        int need = batch.need(promptTokens, config.maxNewTokens());
        int count = config.numReturnSequences();
        if (batch.canEverHold(count, need)) {
            return null;
        }
        return "prompt_tokens + max_tokens = "
                + need
                + (count > 1 ? " for each of n = " + count + " sequences" : "")
                + " exceeds the server's KV cache of "
                + batch.tokenBudget()
                + " tokens (--kv-cache-tokens) for "
                + Math.min(count, maxBatch)
                + " of at most "
                + maxBatch
                + " rows; lower max_tokens or the prompt";
    }

    /**
     * Admits a job if a slot is free.
     *
     * @param promptIds the prompt token ids (validated by the caller)
     * @param config how to generate; {@code numReturnSequences} at most {@code maxBatch}
     * @param streamed whether the caller reads events ({@link GenerationJob#nextEvent()})
     * @return the admitted job, or {@code null} when all {@code maxConcurrency} slots are taken
     * @throws IllegalArgumentException if the job has more sequences than a batch holds
     * @throws IllegalStateException if the scheduler is closed
     */
    public GenerationJob trySubmit(long[] promptIds, GenerationConfig config, boolean streamed) {
        return trySubmit(promptIds, config, streamed, null);
    }

    /**
     * Admits a job that computes with one of the model's LoRA adapters, if a slot is free. Jobs of
     * different adapters share the batch, each row adding its own adapter's update.
     *
     * @param promptIds the prompt token ids (validated by the caller)
     * @param config how to generate; {@code numReturnSequences} at most {@code maxBatch}
     * @param streamed whether the caller reads events ({@link GenerationJob#nextEvent()})
     * @param adapter the name the adapter is attached to the model under, or {@code null} for the
     *     model as it computes without a selection
     * @return the admitted job, or {@code null} when all {@code maxConcurrency} slots are taken
     * @throws IllegalArgumentException if the job has more sequences than a batch holds, or could
     *     never fit the KV pool ({@link #neverFits})
     * @throws IllegalStateException if the scheduler is closed
     */
    public GenerationJob trySubmit(long[] promptIds, GenerationConfig config, boolean streamed, String adapter) {
        if (config.numReturnSequences() > maxBatch) {
            throw new IllegalArgumentException(
                    "a request may ask for at most "
                            + maxBatch
                            + " sequences (the batch size), got "
                            + config.numReturnSequences());
        }
        String tooLarge = neverFits(promptIds.length, config);
        if (tooLarge != null) {
            throw new IllegalArgumentException(tooLarge);
        }
        if (closed) {
            throw new IllegalStateException("the scheduler is closed");
        }
        if (!acquireSlot()) {
            rejected.increment();
            return null;
        }
        GenerationJob job = new GenerationJob(this, promptIds, config, streamed, adapter);
        live.add(job);
        metrics.promptTokens.add(promptIds.length);
        try {
            job.expiresBy(
                    timer.schedule(
                            () -> job.expire(requestTimeout),
                            requestTimeout.toNanos(),
                            TimeUnit.NANOSECONDS));
        } catch (RejectedExecutionException e) {
            job.cancel(); // closed since the check above
            throw new IllegalStateException("the scheduler is closed", e);
        }
        if (!queue.offerLast(job)) {
            // cannot happen: the queue holds at most the admitted jobs; refuse rather than block
            job.cancel();
            return null;
        }
        return job;
    }

    /**
     * Takes a slot. When none is free, a client that closed a stream and sent its next request at
     * once may find its old request still holding one: the server learns a client left only when a
     * write to it fails, at its next token (a request waiting to join writes nothing until its
     * first), and the client's own close may lag its next request (an HTTP client closes the old
     * connection on a thread of its own). So before refusing, every streamed job's reader writes
     * to its client ({@link GenerationJob#checkClient()}) in {@link #CLIENT_CHECK_ROUNDS} rounds,
     * {@link #CLIENT_RESET} apart at first and twice as far apart each round, while the request
     * waits for a slot: a closed connection takes a write and answers it with a reset, which fails
     * the next, and the job's slot is freed. At most {@code maxConcurrency} requests wait so
     * (clients within the limit never have more coming back); more are refused at once.
     */
    private boolean acquireSlot() {
        if (slots.tryAcquire()) {
            return true;
        }
        if (waitingForSlot.incrementAndGet() > maxConcurrency) {
            waitingForSlot.decrementAndGet();
            return false;
        }
        long deadline = System.nanoTime() + retryAfterNanos;
        try {
            long gap = CLIENT_RESET.toNanos();
            for (int round = 0; round < CLIENT_CHECK_ROUNDS; round++, gap *= 2) {
                List<CompletableFuture<Void>> checks = new ArrayList<>();
                for (GenerationJob job : live) {
                    checks.add(job.checkClient());
                }
                CompletableFuture.allOf(checks.toArray(CompletableFuture[]::new))
                        .get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (slots.tryAcquire(gap, TimeUnit.NANOSECONDS)) {
                    return true;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException e) {
            // a reader could not write within Retry-After (a slow client): refuse as without the check
        } finally {
            waitingForSlot.decrementAndGet();
        }
        return slots.tryAcquire();
    }

    /** @return counters and gauges, for health checks and load tests */
    public Stats stats() {
        int runningRows = 0;
        for (GenerationJob job : live) {
            runningRows += job.runningRows();
        }
        return new Stats(
                maxConcurrency - slots.availablePermits(),
                queue.size(),
                runningRows,
                maxConcurrency,
                completed.sum(),
                cancelled.sum(),
                failed.sum(),
                timedOut.sum(),
                rejected.sum(),
                metrics.promptTokens.sum(),
                generatedTokens.sum(),
                batches.sum(),
                batchedJobs.sum(),
                steps.sum(),
                batch.allocatedTokens(),
                batch.heldTokens(),
                batch.tokenBudget(),
                batch.bytesPerToken(),
                batch.prefixCacheStats(),
                batch.counters());
    }

    /**
     * What a scheduler has done so far.
     *
     * @param active jobs holding a slot now (waiting or generating)
     * @param queued jobs waiting to join the batch now
     * @param runningRows sequences in the batch now (decoding, or joining: their prompt being
     *     prefilled or waiting to be)
     * @param maxConcurrency the number of slots
     * @param completed jobs that ended normally
     * @param cancelled jobs cancelled (e.g. their client disconnected)
     * @param failed jobs whose generation failed
     * @param timedOut jobs ended at the request timeout
     * @param rejected submissions refused for want of a slot
     * @param promptTokens prompt tokens over all admitted jobs
     * @param generatedTokens tokens generated over all jobs
     * @param batches busy periods of the loop (from a first job joining an empty batch until the
     *     batch is empty again)
     * @param batchedJobs jobs that joined the batch (divided by {@code batches}: jobs per busy period)
     * @param steps steps the loop ran
     * @param kvPoolTokens positions the KV pool's buffers hold now (rows × capacity)
     * @param kvPoolHeld positions the rows hold now (computed keys and values), as of the last step
     * @param kvPoolBudget the most positions the KV pool may hold ({@code --kv-cache-tokens})
     * @param kvBytesPerToken bytes one position takes in the pool
     * @param prefixCache the prefix cache's lookups, hits, reused and kept positions, and budget
     * @param loop where the loop's steps spent their time (prefill, decode, sampling, pool, prefix
     *     cache) and the tokens they prefilled and decoded
     */
    public record Stats(
            int active,
            int queued,
            int runningRows,
            int maxConcurrency,
            long completed,
            long cancelled,
            long failed,
            long timedOut,
            long rejected,
            long promptTokens,
            long generatedTokens,
            long batches,
            long batchedJobs,
            long steps,
            long kvPoolTokens,
            long kvPoolHeld,
            long kvPoolBudget,
            long kvBytesPerToken,
            PrefixCache.Stats prefixCache,
            StepCounters loop) {}

    /** @return the jobs' timings and token counts */
    GenerationMetrics metrics() {
        return metrics;
    }

    void countToken() {
        generatedTokens.increment();
    }

    void dequeue(GenerationJob job) {
        queue.remove(job);
    }

    void release(GenerationJob job, GenerationJob.Outcome outcome) {
        if (live.remove(job)) {
            switch (outcome) {
                case COMPLETED -> completed.increment();
                case CANCELLED -> cancelled.increment();
                case FAILED -> failed.increment();
                case TIMED_OUT -> timedOut.increment();
            }
            slots.release();
        }
    }

    private void loop() {
        while (!closed) {
            try {
                if (batch.sequences() == 0 && !awaitJobs()) {
                    continue;
                }
                joinWaiting();
                if (batch.sequences() == 0) {
                    continue;
                }
                step();
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException | Error e) {
                if (closed) {
                    return;
                }
                LOG.error("a step of {} sequences failed", batch.sequences(), e);
                abandon(e);
            }
        }
    }

    /**
     * Waits, with the batch empty, for a job, then up to {@code batchWait} for more to join it.
     *
     * @return whether a job is waiting
     */
    private boolean awaitJobs() throws InterruptedException {
        inBatch.clear();
        GenerationJob first = queue.peekFirst();
        if (first == null) {
            first = queue.pollFirst(IDLE_POLL_MILLIS, TimeUnit.MILLISECONDS);
            if (first == null) {
                return false;
            }
            if (!queue.offerFirst(first)) { // full only if it was cancelled meanwhile
                return false;
            }
        }
        long deadline = System.nanoTime() + batchWaitNanos;
        while (queue.size() < maxBatch && System.nanoTime() < deadline) {
            Thread.sleep(0, 200_000);
        }
        return true;
    }

    /** Lets the oldest waiting jobs join while the batch has rows and pool room for them, in order. */
    private void joinWaiting() {
        for (GenerationJob job = queue.peekFirst(); job != null; job = queue.peekFirst()) {
            GenerationRequest request = job.request();
            if (job.isCancelled()) {
                queue.remove(job);
                continue;
            }
            int need = batch.need(job.promptTokens(), request.config().maxNewTokens());
            if (!batch.canJoin(job.sequences(), need) || !queue.remove(job)) {
                return;
            }
            if (batch.sequences() == 0) {
                batches.increment();
            }
            batchedJobs.increment();
            inBatch.add(job);
            job.joinBatch();
            List<SequenceState> states = SequenceState.builder(request.promptIds(), request.config())
                    .contextWindow(contextWindow)
                    .tokenizer(tokenizer)
                    .listener(job)
                    .adapter(job.adapter())
                    .build();
            for (SequenceState state : states) {
                batch.join(state);
            }
        }
    }

    private void step() {
        steps.increment();
        batch.step();
        inBatch.removeIf(GenerationJob::isReleased);
    }

    /** Fails the jobs of a step that failed and empties the batch. */
    private void abandon(Throwable cause) {
        batch.abandon();
        for (GenerationJob job : inBatch) {
            job.fail(cause);
        }
        inBatch.clear();
    }

    /** Cancels every job, stops the loop and frees the KV pool. */
    @Override
    public void close() {
        closed = true;
        for (GenerationJob job : List.copyOf(live)) {
            job.cancel();
        }
        timer.shutdownNow();
        loop.interrupt();
        try {
            loop.join(TimeUnit.SECONDS.toMillis(30));
            if (loop.isAlive()) {
                LOG.warn("the decode loop did not stop within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        if (!loop.isAlive()) {
            batch.close();
        }
    }
}
