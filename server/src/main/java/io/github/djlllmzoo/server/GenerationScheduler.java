package io.github.djlllmzoo.server;

import ai.djl.Model;
import ai.djl.inference.Predictor;
import ai.djl.translate.TranslateException;
import ai.djl.translate.Translator;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Set;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.LinkedBlockingDeque;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Runs generation requests on a bounded pool of DJL {@link Predictor}s with admission control and
 * dynamic batching.
 *
 * <ul>
 *   <li>Admission: at most {@code maxConcurrency} jobs are admitted (waiting or generating); {@link
 *       #trySubmit} refuses more at once instead of queueing them.
 *   <li>Batching: a dispatcher thread waits for an idle predictor, takes the oldest waiting job,
 *       then gathers more for up to {@code batchWait} (or at once, when they are already waiting)
 *       until the batch holds {@code maxBatch} sequences, and runs them with one {@code
 *       Predictor.batchPredict}: left-padded, each row computing what it would alone.
 *   <li>Workers: {@code workers} predictors, each running one batch at a time on its own thread.
 * </ul>
 *
 * <p>A job may name a LoRA adapter attached to the model; a batch holds the jobs of one adapter
 * (or none) only, the oldest waiting job's, and ends at the first waiting job of another.
 *
 * <p>Jobs end on their own within a batch (EOS, stop string, budget, cancellation, or the request
 * timeout, which a timer enforces) and free their slot then, before their last event or result is
 * handed over; a batch's predictor becomes idle when its last row ends.
 */
public final class GenerationScheduler implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(GenerationScheduler.class);

    private final int maxConcurrency;
    private final int maxBatch;
    private final long batchWaitNanos;
    private final Semaphore slots;
    private final LinkedBlockingDeque<GenerationJob> queue;
    private final Set<GenerationJob> live = ConcurrentHashMap.newKeySet();
    private final List<Predictor<GenerationRequest, GenerationResult>> predictors =
            new ArrayList<>();
    private final BlockingQueue<Predictor<GenerationRequest, GenerationResult>> idle;
    private final ExecutorService workers;
    private final Thread dispatcher;
    private final Duration requestTimeout;
    private final ScheduledThreadPoolExecutor timer;
    private volatile boolean closed;

    private final LongAdder completed = new LongAdder();
    private final LongAdder cancelled = new LongAdder();
    private final LongAdder failed = new LongAdder();
    private final LongAdder timedOut = new LongAdder();
    private final LongAdder rejected = new LongAdder();
    private final LongAdder generatedTokens = new LongAdder();
    private final LongAdder batches = new LongAdder();
    private final LongAdder batchedJobs = new LongAdder();
    private final GenerationMetrics metrics = new GenerationMetrics();

    /**
     * Creates the predictors and starts the dispatcher.
     *
     * @param model the model the predictors run on
     * @param translator the generation translator (stateless, shared by the predictors)
     * @param maxConcurrency most jobs admitted at once (≥ 1)
     * @param maxBatch most sequences per batch (≥ 1)
     * @param workers predictors, each running one batch at a time (≥ 1)
     * @param batchWait how long a batch waits for more jobs once it has one (≥ 0)
     * @param requestTimeout how long a job may take from admission to its last token (&gt; 0);
     *     past it the job ends ({@link GenerationJob#expire})
     */
    public GenerationScheduler(
            Model model,
            Translator<GenerationRequest, GenerationResult> translator,
            int maxConcurrency,
            int maxBatch,
            int workers,
            Duration batchWait,
            Duration requestTimeout) {
        if (maxConcurrency < 1 || maxBatch < 1 || workers < 1 || batchWait.isNegative()
                || requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw new IllegalArgumentException(
                    "maxConcurrency, maxBatch and workers must be at least 1 and batchWait >= 0,"
                        + " got "
                            + maxConcurrency
                            + ", "
                            + maxBatch
                            + ", "
                            + workers
                            + ", "
                            + batchWait
                            + ", request timeout "
                            + requestTimeout);
        }
        this.requestTimeout = requestTimeout;
        this.timer =
                new ScheduledThreadPoolExecutor(
                        1,
                        r -> {
                            Thread t = new Thread(r, "llmzoo-request-timeout");
                            t.setDaemon(true);
                            return t;
                        });
        timer.setRemoveOnCancelPolicy(true);
        this.maxConcurrency = maxConcurrency;
        this.maxBatch = maxBatch;
        this.batchWaitNanos = batchWait.toNanos();
        this.slots = new Semaphore(maxConcurrency);
        this.queue = new LinkedBlockingDeque<>(maxConcurrency);
        this.idle = new ArrayBlockingQueue<>(workers);
        for (int i = 0; i < workers; i++) {
            Predictor<GenerationRequest, GenerationResult> predictor =
                    model.newPredictor(translator);
            predictors.add(predictor);
            idle.add(predictor);
        }
        AtomicInteger ids = new AtomicInteger();
        this.workers =
                Executors.newFixedThreadPool(
                        workers,
                        r -> {
                            Thread t = new Thread(r, "llmzoo-generate-" + ids.incrementAndGet());
                            t.setDaemon(true);
                            return t;
                        });
        this.dispatcher = new Thread(this::dispatch, "llmzoo-dispatch");
        dispatcher.setDaemon(true);
        dispatcher.start();
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
     * different adapters never share a batch: a forward pass adds one adapter's update ({@link
     * LoraAdapter#select}).
     *
     * @param promptIds the prompt token ids (validated by the caller)
     * @param config how to generate; {@code numReturnSequences} at most {@code maxBatch}
     * @param streamed whether the caller reads events ({@link GenerationJob#nextEvent()})
     * @param adapter the name the adapter is attached to the model under, or {@code null} for the
     *     model as it computes without a selection
     * @return the admitted job, or {@code null} when all {@code maxConcurrency} slots are taken
     * @throws IllegalArgumentException if the job has more sequences than a batch holds
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
        if (closed) {
            throw new IllegalStateException("the scheduler is closed");
        }
        if (!slots.tryAcquire()) {
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
                batchedJobs.sum());
    }

    /**
     * What a scheduler has done so far.
     *
     * @param active jobs holding a slot now (waiting or generating)
     * @param queued jobs waiting for a batch now
     * @param runningRows sequences of admitted jobs being generated now (in a running batch, not
     *     ended)
     * @param maxConcurrency the number of slots
     * @param completed jobs that ended normally
     * @param cancelled jobs cancelled (e.g. their client disconnected)
     * @param failed jobs whose generation failed
     * @param timedOut jobs ended at the request timeout
     * @param rejected submissions refused for want of a slot
     * @param promptTokens prompt tokens over all admitted jobs
     * @param generatedTokens tokens generated over all jobs
     * @param batches batches run
     * @param batchedJobs jobs run in those batches (divided by {@code batches}: the mean batch)
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
            long batchedJobs) {}

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

    private void dispatch() {
        while (!closed) {
            try {
                Predictor<GenerationRequest, GenerationResult> predictor = idle.take();
                List<GenerationJob> batch = nextBatch();
                batches.increment();
                batchedJobs.add(batch.size());
                workers.execute(() -> run(predictor, batch));
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                if (!closed) {
                    LOG.error("the dispatcher failed; it goes on", e);
                }
            }
        }
    }

    /** The oldest waiting job and those joining it within the wait, up to {@code maxBatch} rows. */
    private List<GenerationJob> nextBatch() throws InterruptedException {
        GenerationJob first;
        do {
            first = queue.takeFirst();
        } while (first.isCancelled());
        List<GenerationJob> batch = new ArrayList<>();
        batch.add(first);
        int rows = first.sequences();
        long deadline = System.nanoTime() + batchWaitNanos;
        while (rows < maxBatch) {
            GenerationJob next = queue.pollFirst();
            if (next == null) {
                long wait = deadline - System.nanoTime();
                next = wait > 0 ? queue.pollFirst(wait, TimeUnit.NANOSECONDS) : null;
                if (next == null) {
                    break;
                }
            }
            if (next.isCancelled()) {
                continue;
            }
            if (rows + next.sequences() > maxBatch || !Objects.equals(next.adapter(), first.adapter())) {
                // back to the head for the next batch; the queue can only be full if this job was
                // cancelled meanwhile (its slot went to a newer job), and then it may be dropped
                queue.offerFirst(next);
                break;
            }
            batch.add(next);
            rows += next.sequences();
        }
        return batch;
    }

    private void run(
            Predictor<GenerationRequest, GenerationResult> predictor, List<GenerationJob> batch) {
        try {
            List<GenerationRequest> requests = new ArrayList<>(batch.size());
            for (GenerationJob job : batch) {
                requests.add(job.request());
                job.start();
            }
            List<GenerationResult> results;
            if (batch.get(0).adapter() == null) {
                results = predictor.batchPredict(requests);
            } else {
                try (LoraAdapter.Selection selection = LoraAdapter.select(batch.get(0).adapter())) {
                    results = predictor.batchPredict(requests);
                }
            }
            for (int i = 0; i < batch.size(); i++) {
                batch.get(i).complete(results.get(i));
            }
        } catch (TranslateException | RuntimeException | Error e) {
            Throwable cause =
                    e instanceof TranslateException && e.getCause() != null ? e.getCause() : e;
            LOG.error("generation of a batch of {} failed", batch.size(), cause);
            for (GenerationJob job : batch) {
                job.fail(cause);
            }
        } finally {
            idle.add(predictor);
        }
    }

    /** Cancels every job, stops the threads and closes the predictors. */
    @Override
    public void close() {
        closed = true;
        dispatcher.interrupt();
        for (GenerationJob job : List.copyOf(live)) {
            job.cancel();
        }
        workers.shutdown();
        timer.shutdownNow();
        try {
            dispatcher.join(TimeUnit.SECONDS.toMillis(10));
            if (!workers.awaitTermination(30, TimeUnit.SECONDS)) {
                LOG.warn("generation threads did not stop within 30 s");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        predictors.forEach(Predictor::close);
    }
}
