package io.github.djlllmzoo.server;

import io.github.djlllmzoo.translators.FinishReason;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationListener;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.SequenceState;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * One admitted request of a {@link GenerationScheduler}: its prompt and config, the listener its
 * batch reports to, and what the caller reads back, either the finished {@link GenerationResult}
 * ({@link #result()}) or, when streamed, the {@link Event}s as they happen ({@link #nextEvent()}).
 *
 * <p>The result is complete as soon as the job's own sequences end, even while batch-mates still
 * generate: it is read from their {@link SequenceState}s, which hold the completions and timings
 * whole (log-probabilities included) when they end. The job holds one
 * of the scheduler's slots until then, or until {@link #cancel()}, which also stops its generation
 * at the next step; the slot is freed before the last event or the result is handed over, so a
 * client that sends its next request as soon as it has its answer is admitted.
 */
public final class GenerationJob implements GenerationListener {

    /** What a streamed job reports, in order. */
    public sealed interface Event permits Text, Finished, Failed, CheckClient {}

    /**
     * New text of a sequence.
     *
     * @param sequence the sequence index
     * @param piece the text that follows what came before
     */
    public record Text(int sequence, String piece) implements Event {}

    /**
     * A sequence ended.
     *
     * @param sequence the sequence index
     * @param reason why
     * @param tokens how many tokens it generated
     */
    public record Finished(int sequence, FinishReason reason, int tokens) implements Event {}

    /**
     * Generation failed; no events follow.
     *
     * @param error the cause
     */
    public record Failed(Throwable error) implements Event {}

    /**
     * The scheduler asks whether the job's client is still there (all slots are taken and a new
     * request waits): the reader writes something its client ignores (a server-sent event comment),
     * which fails once the client has closed the connection, and then completes {@code checked}.
     * It is no answer's event: a reader that does not write to a connection completes it at once.
     *
     * @param checked completed once the reader wrote (after it cancelled the job, if the write failed)
     */
    public record CheckClient(CompletableFuture<Void> checked) implements Event {}

    /** How a job ended, as the scheduler counts it. */
    enum Outcome {
        /** Its sequences ended (EOS, stop string, budget). */
        COMPLETED,
        /** It was given up, e.g. its client went away. */
        CANCELLED,
        /** Its generation failed. */
        FAILED,
        /** It ran past the request timeout. */
        TIMED_OUT
    }

    private final GenerationScheduler scheduler;
    private final GenerationRequest request;
    private final String adapter;
    private final int promptTokens;
    private final int sequences;
    private final boolean streamed;
    private final long submittedNanos = System.nanoTime();
    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private final CompletableFuture<GenerationResult> result = new CompletableFuture<>();
    private final AtomicBoolean cancelled = new AtomicBoolean();
    private final AtomicBoolean released = new AtomicBoolean();

    // written on the generating thread, under the job's lock: expire() reads them on the timer's
    private final SequenceState[] ended;
    private final int[] tokenCounts;
    private volatile int finished; // volatile: the scheduler's stats read it
    private long firstTokenNanos;
    private long lastTokenNanos;
    private volatile ScheduledFuture<?> expiry;
    private volatile boolean inBatch;
    /** The client check a reader has not answered yet, or null; guarded by the job's lock. */
    private CompletableFuture<Void> pendingCheck;

    GenerationJob(
            GenerationScheduler scheduler,
            long[] promptIds,
            GenerationConfig config,
            boolean streamed,
            String adapter) {
        this.scheduler = scheduler;
        this.adapter = adapter;
        this.request = GenerationRequest.ofIds(promptIds, config).withListener(this);
        this.promptTokens = promptIds.length;
        this.sequences = config.numReturnSequences();
        this.streamed = streamed;
        ended = new SequenceState[sequences];
        tokenCounts = new int[sequences];
    }

    GenerationRequest request() {
        return request;
    }

    /** @return the name of the LoRA adapter the job computes with, or {@code null} for the model's own */
    String adapter() {
        return adapter;
    }

    /** @return the rows this job takes in a batch (its number of sequences) */
    public int sequences() {
        return sequences;
    }

    /** @return the number of prompt tokens */
    public int promptTokens() {
        return promptTokens;
    }

    /**
     * The result, complete when the job's sequences have ended (failed if generation failed,
     * cancelled after {@link #cancel()}).
     *
     * @return the future result
     */
    public CompletableFuture<GenerationResult> result() {
        return result;
    }

    /**
     * The next event of a streamed job, waiting for it.
     *
     * @return the event
     * @throws InterruptedException if the thread is interrupted while waiting
     * @throws IllegalStateException if the job was not submitted as streamed
     */
    public Event nextEvent() throws InterruptedException {
        if (!streamed) {
            throw new IllegalStateException("the job was not submitted as streamed");
        }
        return events.take();
    }

    /**
     * Gives up the job, e.g. when its client went away: frees its slot now, drops it from the queue
     * if it is waiting there, and ends its sequences at the next step if it is generating. A
     * streamed job's reader then gets a {@link Failed} event with a {@link CancellationException}.
     */
    public void cancel() {
        if (cancelled.compareAndSet(false, true)) {
            // out of the queue before the slot is free: the queue holds as many jobs as there are
            // slots, and the job admitted next must find room in it
            scheduler.dequeue(this);
            release(Outcome.CANCELLED);
            result.cancel(false);
            if (streamed) {
                // wakes a reader waiting for events that will not come
                events.add(new Failed(new CancellationException("the request was cancelled")));
            }
        }
    }

    /**
     * Ends the job at its request timeout, as {@link #cancel()} does but so that its client gets a
     * clean end: a streamed job's sequences that have not ended get a {@link Finished} event with
     * {@link FinishReason#LENGTH} (the answer was cut short, as by its token budget); a whole
     * answer's result fails with a {@link TimeoutException}. Called by the scheduler's timer.
     *
     * @param timeout the timeout it ran past, for the message
     */
    synchronized void expire(Duration timeout) {
        if (cancelled.compareAndSet(false, true)) {
            scheduler.dequeue(this);
            release(Outcome.TIMED_OUT);
            if (streamed) {
                for (int n = 0; n < sequences; n++) {
                    if (ended[n] == null) {
                        events.add(new Finished(n, FinishReason.LENGTH, tokenCounts[n]));
                    }
                }
            }
            result.completeExceptionally(
                    new TimeoutException(
                            "the request took longer than the server's request timeout of "
                                    + timeout.toSeconds()
                                    + " s"));
        }
    }

    /**
     * Asks a streamed job's reader to check that its client is still there ({@link CheckClient}); a
     * check already asked for and not yet answered is not asked twice.
     *
     * @return completed once the reader checked, or at once where there is nothing to check (a whole
     *     answer is written only at its end; a job that ended has freed its slot)
     */
    synchronized CompletableFuture<Void> checkClient() {
        if (!streamed || released.get()) {
            return CompletableFuture.completedFuture(null);
        }
        if (pendingCheck == null || pendingCheck.isDone()) {
            pendingCheck = new CompletableFuture<>();
            events.add(new CheckClient(pendingCheck));
        }
        return pendingCheck;
    }

    /** @param future the timer task that will {@link #expire} the job, cancelled when it ends */
    void expiresBy(ScheduledFuture<?> future) {
        expiry = future;
    }

    @Override
    public boolean isCancelled() {
        return cancelled.get();
    }

    @Override
    public synchronized void onText(int sequence, String piece) {
        if (streamed && !cancelled.get()) {
            events.add(new Text(sequence, piece));
        }
    }

    @Override
    public synchronized void onToken(int sequence, long tokenId) {
        lastTokenNanos = System.nanoTime();
        if (firstTokenNanos == 0) {
            firstTokenNanos = lastTokenNanos;
            scheduler.metrics().firstToken(submittedNanos, firstTokenNanos);
        }
        tokenCounts[sequence]++;
        scheduler.countToken();
    }

    @Override
    public synchronized void onFinish(SequenceState sequence) {
        ended[sequence.index()] = sequence;
        finished++;
        boolean done = finished == sequences;
        if (done) {
            // before the last event or the result: a client that sends its next request as soon
            // as it has this answer must find the slot free
            release(Outcome.COMPLETED);
        }
        // A generation that stops because the job was cancelled ends its sequences too; its reader
        // must get the Failed event cancel() adds, not a normal end that could overtake it.
        if (streamed && !cancelled.get()) {
            events.add(new Finished(sequence.index(), sequence.finishReason(), sequence.generatedTokens()));
        }
        if (done) {
            result.complete(GenerationResult.of(Arrays.asList(ended), submittedNanos));
        }
    }

    /** @return whether the job has ended (its slot freed) */
    boolean isReleased() {
        return released.get();
    }

    /** Called by the scheduler when the job's sequences join the decode loop's batch. */
    void joinBatch() {
        inBatch = true;
    }

    /**
     * @return the job's sequences in the batch now: joined, not ended (counted as they end, before
     *     the job's answer is handed over)
     */
    int runningRows() {
        return inBatch && !released.get() ? sequences - finished : 0;
    }

    /** Called by the scheduler when a step of its sequences failed. */
    void fail(Throwable error) {
        release(Outcome.FAILED);
        if (streamed) {
            events.add(new Failed(error));
        }
        result.completeExceptionally(error);
    }

    private int steps() {
        int steps = 0;
        for (int count : tokenCounts) {
            steps = Math.max(steps, count);
        }
        return steps;
    }

    /** Answers a client check the reader may never read (it stops at the job's last event). */
    private synchronized void answerCheck() {
        if (pendingCheck != null) {
            pendingCheck.complete(null);
        }
    }

    /** Frees the job's slot once, before its answer is handed over, counting how it ended. */
    private void release(Outcome outcome) {
        if (released.compareAndSet(false, true)) {
            ScheduledFuture<?> timer = expiry;
            if (timer != null) {
                timer.cancel(false); // the timer drops it: nothing waits 10 minutes per request
            }
            answerCheck();
            if (outcome == Outcome.COMPLETED) {
                // on the generating thread, which wrote the timings
                scheduler.metrics().completed(submittedNanos, firstTokenNanos, lastTokenNanos, steps());
            }
            scheduler.release(this, outcome);
        }
    }
}
