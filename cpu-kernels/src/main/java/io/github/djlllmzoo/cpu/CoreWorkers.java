package io.github.djlllmzoo.cpu;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.pytorch.jni.JniUtils;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.IntFunction;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One daemon thread per extra CPU core ({@code llmzoo-cpu-worker-N}), to run parts of a decode
 * step next to the calling thread: slices of its products ({@link SplitProjection}), parts of its
 * attention ({@link SplitAttention}, {@link DecodeAttention}), and the freeing of a finished step's
 * arrays ({@link #release(NDManager)}).
 *
 * <p>A slice takes a fraction of a millisecond and the next follows within a fraction of a
 * millisecond, so an idle worker spins for up to {@link #IDLE_SPIN_NANOS} before it parks: a slice
 * handed over within a decode step then starts in about a microsecond instead of the tens of
 * microseconds a wake-up costs, dozens of times a step. On a machine whose cores other processes
 * share, a worker may not get a core for milliseconds: a caller that finds its slice still
 * unclaimed when it is done with its own takes the slice back and computes it itself, and a caller
 * that waits for a running slice spins only briefly, then parks until the worker wakes it, so no
 * hand-over waits out another process's time slice (docs/PERFORMANCE.md, "Contention").
 *
 * <p>One caller at a time: a second caller finds the workers busy and computes alone.
 *
 * <p>Between slices a worker frees the arrays of a finished decode step a few at a time, so a slice
 * handed over waits microseconds at most.
 */
final class CoreWorkers {

    /**
     * Threads a decode step's products and attention are split over, the caller included: the CPU
     * cores, or fewer with {@code -Dllmzoo.cpu.threads=N} (1 turns splitting off; the former name
     * {@code llmzoo.projection.threads} is read where the new one is not set).
     */
    static final int PARALLELISM =
            Math.max(
                    1,
                    Math.min(
                            Runtime.getRuntime().availableProcessors(),
                            Integer.getInteger(
                                    "llmzoo.cpu.threads",
                                    Integer.getInteger("llmzoo.projection.threads", Integer.MAX_VALUE))));

    /**
     * How long an idle worker spins for the next slice before it parks ({@code
     * -Dllmzoo.cpu.idleSpinNanos}, for re-tuning where other threads need the cores between steps).
     */
    static final long IDLE_SPIN_NANOS = Math.max(0L, Long.getLong("llmzoo.cpu.idleSpinNanos", 1_000_000L));

    /**
     * How long a caller spins for a running slice before it parks: slices end within a few hundred
     * microseconds of each other, and parking sooner costs a wake-up on most hand-overs.
     */
    static final long AWAIT_SPIN_NANOS = 500_000L;

    /** Arrays a worker frees before it looks for a slice again. */
    static final int RELEASE_BATCH = 4;

    /**
     * The switch that hands {@link #share}'s parts to whichever thread is free instead of one fixed
     * part to each: {@code -Dllmzoo.cpu.off=cpu.dynamicSplit}.
     */
    static final String DYNAMIC_SPLIT_SWITCH = "cpu.dynamicSplit";

    /** Set on a thread computing with fixed shares ({@link #withFixedShares}). */
    private static final ThreadLocal<Boolean> FIXED_SHARES = new ThreadLocal<>();

    /** Runs in each thread's first block of {@link #share}'s work ({@code -Dllmzoo.cpu.blockRuns}). */
    static final int BLOCK_RUNS = Math.max(1, Integer.getInteger("llmzoo.cpu.blockRuns", 14));

    /**
     * Runs of {@link #share}'s work left after the blocks, taken one at a time by whichever thread
     * is free ({@code -Dllmzoo.cpu.poolRuns}).
     */
    static final int POOL_RUNS = Math.max(0, Integer.getInteger("llmzoo.cpu.poolRuns", 4));

    private static final Logger LOG = LoggerFactory.getLogger(CoreWorkers.class);

    private static volatile CoreWorkers shared;

    private final Worker[] workers;
    /** A finished step's manager no worker has taken yet. */
    private final AtomicReference<NDManager> toRelease = new AtomicReference<>();
    private final ReentrantLock owner = new ReentrantLock();
    /** Hand-overs to the workers so far (written under {@link #owner}). */
    private volatile long handOvers;

    private CoreWorkers(int threads) {
        workers = new Worker[threads];
        int torchThreads = torchThreads();
        for (int i = 0; i < threads; i++) {
            workers[i] = new Worker("llmzoo-cpu-worker-" + (i + 1), torchThreads, toRelease);
            workers[i].start();
        }
    }

    /**
     * The PyTorch intra-op thread count the workers take: DJL's {@code ai.djl.pytorch.num_threads}
     * where set, else the creating thread's. PyTorch keeps that count per thread (OpenMP's and
     * MKL's thread-local settings) and DJL sets it only on the thread that starts the engine; a
     * worker left at the default starts an OpenMP team of its own for every product of several
     * rows, and the teams fight over the cores.
     */
    private static int torchThreads() {
        Integer configured = Integer.getInteger(TorchThreads.INTRA_OP_PROPERTY);
        return configured != null && configured > 0 ? configured : TorchThreads.intraOp();
    }

    /**
     * The workers of this process ({@link #PARALLELISM} - 1 threads), made on first use.
     *
     * @return the workers
     */
    private static CoreWorkers shared() {
        CoreWorkers pool = shared;
        if (pool == null) {
            synchronized (CoreWorkers.class) {
                pool = shared;
                if (pool == null) {
                    pool = new CoreWorkers(PARALLELISM - 1);
                    shared = pool;
                }
            }
        }
        return pool;
    }

    /**
     * Where to cut {@code size} items into {@code parts} nearly equal runs.
     *
     * @param size the items
     * @param parts the runs (at least 1)
     * @return the {@code parts - 1} split points, as {@code NDArray.split} takes them
     */
    static long[] bounds(long size, int parts) {
        long[] bounds = new long[parts - 1];
        for (int i = 1; i < parts; i++) {
            bounds[i - 1] = size * i / parts;
        }
        return bounds;
    }

    /**
     * Computes {@code task(0) .. task(count - 1)} on this process's workers, {@code task(0)} on the
     * calling thread (see {@link #invokeAll}).
     *
     * @param count the tasks, at most {@link #PARALLELISM}
     * @param task the array of task {@code i}
     * @return their arrays in task order, or {@code null} when another caller holds the workers
     */
    @SuppressWarnings("unchecked")
    static NDArray[] run(int count, IntFunction<NDArray> task) {
        Supplier<NDArray>[] tasks = (Supplier<NDArray>[]) new Supplier<?>[count];
        for (int i = 0; i < count; i++) {
            int index = i;
            tasks[i] = () -> task.apply(index);
        }
        return shared().invokeAll(tasks);
    }

    /** Work on a stretch of a computation's items cut into nearly equal runs. */
    @FunctionalInterface
    interface Part {
        /**
         * Computes the runs {@code [first, last)} of {@code runs} as one stretch: the items from
         * {@link #start start(items, first, runs)} to {@code start(items, last, runs)}.
         *
         * @param first the first run
         * @param last the run after the last
         * @param runs how many runs the items are cut into
         */
        void compute(int first, int last, int runs);
    }

    /**
     * The first item of run {@code run} of {@code items} cut into {@code runs} nearly equal runs
     * ({@code items} for {@code run == runs}).
     *
     * @param items the items
     * @param run the run, 0 to {@code runs}
     * @param runs the runs
     * @return its first item
     */
    static int start(int items, int run, int runs) {
        return (int) ((long) items * run / runs);
    }

    /**
     * Computes all of {@code task} on the calling thread and the workers, each thread one nearly
     * equal share of the runs, or where {@code pooled} a block of {@link #BLOCK_RUNS} runs first and
     * then one run at a time of the {@link #POOL_RUNS} runs left after the blocks, by whichever
     * thread is free first: a thread that starts late or reads its block slower takes fewer of
     * them instead of the caller waiting out the difference. Each run of the pool is one more
     * native call, so it pays only where a call prepares little (one row of a float32 or 16-bit
     * weight): the int8 kernel quantizes its input again for every call, and a batch's calls
     * prepare eight rows, which cost more than the balancing saves (docs/PERFORMANCE.md, "Balancing
     * a product's halves"). Within {@link #withFixedShares} nothing is pooled. A computation smaller
     * than {@link SplitProjection#MIN_ELEMENTS}, one core, or workers busy with another caller
     * compute it here in one call. Each item (an output column) must come out the same whatever
     * stretch computes it, so the results do not depend on how the work was cut or which thread
     * took which part.
     *
     * @param elements the weight elements the computation reads
     * @param pooled whether the last runs go to whichever thread is free
     * @param task the work on one stretch of the items
     */
    static void share(long elements, boolean pooled, Part task) {
        int threads = PARALLELISM;
        if (threads == 1 || elements < SplitProjection.MIN_ELEMENTS) {
            task.compute(0, 1, 1);
            return;
        }
        boolean balanced = pooled && FIXED_SHARES.get() == null;
        int block = balanced ? BLOCK_RUNS : 1;
        int pool = balanced ? POOL_RUNS : 0;
        int blocks = threads * block;
        int runs = blocks + pool;
        AtomicInteger claims = new AtomicInteger();
        IntFunction<NDArray> claiming = thread -> {
            for (int claim = claims.getAndIncrement(); claim < threads + pool; claim = claims.getAndIncrement()) {
                if (claim < threads) {
                    task.compute(claim * block, (claim + 1) * block, runs);
                } else {
                    task.compute(blocks + claim - threads, blocks + claim - threads + 1, runs);
                }
            }
            return null;
        };
        if (run(threads, claiming) == null) {
            task.compute(0, 1, 1);
        }
    }

    /** Work on the items {@code [from, to)} of a computation. */
    @FunctionalInterface
    interface Range {
        /**
         * @param from the first item
         * @param to the item after the last
         */
        void compute(int from, int to);
    }

    /**
     * Computes {@code task} over {@code items} items cut into {@code parts} nearly equal ranges
     * ({@link #start}), range {@code i} on thread {@code i} (the caller's first), as {@link #run}
     * hands them over.
     *
     * @param items the items
     * @param parts the ranges, 1 to {@link #PARALLELISM}
     * @param task the work on one range
     * @return whether it was computed; {@code false} when another caller holds the workers
     */
    static boolean inRanges(int items, int parts, Range task) {
        return run(parts, i -> {
                    task.compute(start(items, i, parts), start(items, i + 1, parts));
                    return null;
                })
                != null;
    }

    /**
     * Computes {@code computation} with {@link #share} pooling no runs (each thread one fixed,
     * nearly equal share of a product's columns), as the kernels of a model made with {@code
     * -Dllmzoo.cpu.off=cpu.dynamicSplit} compute (beside others in the same process that do not).
     *
     * @param computation what to compute on the calling thread
     * @param <T> its result's type
     * @return its result
     */
    static <T> T withFixedShares(Supplier<T> computation) {
        boolean outermost = FIXED_SHARES.get() == null;
        FIXED_SHARES.set(Boolean.TRUE);
        try {
            return computation.get();
        } finally {
            if (outermost) {
                FIXED_SHARES.remove();
            }
        }
    }

    /**
     * @return how many times a caller has handed work to this process's workers (for tests that
     *     count a step's hand-overs)
     */
    static long handOvers() {
        CoreWorkers pool = shared;
        return pool == null ? 0 : pool.handOvers;
    }

    /**
     * Whether a computation may be split across the workers: inference (no gradients recorded) on
     * the CPU.
     *
     * @param x the computation's input
     * @param training whether this is a training pass
     * @return whether it is inference on the CPU
     */
    static boolean inferenceOnCpu(NDArray x, boolean training) {
        return !training && Device.Type.CPU.equals(x.getDevice().getDeviceType()) && !x.hasGradient();
    }

    /**
     * Closes a finished step's manager on a worker while it waits for slices, instead of on the
     * calling thread: a decode step leaves hundreds of arrays, whose closing would hold up the
     * next step while the worker sat idle. Where there are no workers (no product was split: one
     * core, or not the CPU), or the previous step's manager is still waiting, that one is closed
     * now. The caller must not use the manager or its arrays again.
     *
     * @param step the manager of a finished step
     */
    static void release(NDManager step) {
        CoreWorkers pool = shared;
        if (pool == null || !Device.Type.CPU.equals(step.getDevice().getDeviceType())) {
            step.close();
            return;
        }
        NDManager waiting = pool.toRelease.getAndSet(step);
        if (waiting != null) {
            waiting.close();
        }
        for (Worker worker : pool.workers) {
            LockSupport.unpark(worker);
        }
    }

    /**
     * Runs {@code tasks[0]} on the calling thread and the others on the workers, concurrently;
     * tasks a worker has not started by the time the caller is done with its own run on the caller.
     *
     * @param tasks at most {@link #PARALLELISM} tasks
     * @return the results in task order, or {@code null} when another caller holds the workers
     */
    private NDArray[] invokeAll(Supplier<NDArray>[] tasks) {
        if (!owner.tryLock()) {
            return null;
        }
        try {
            handOvers++;
            for (int i = 1; i < tasks.length; i++) {
                workers[i - 1].hand(tasks[i]);
            }
            NDArray[] results = new NDArray[tasks.length];
            RuntimeException failure = null;
            try {
                results[0] = tasks[0].get();
            } catch (RuntimeException e) {
                failure = e;
            }
            for (int i = 1; i < tasks.length; i++) {
                Worker worker = workers[i - 1];
                if (worker.takeBack(tasks[i])) {
                    try {
                        results[i] = tasks[i].get();
                    } catch (RuntimeException e) {
                        failure = failure == null ? e : failure;
                    }
                    continue;
                }
                worker.await();
                if (worker.error != null && failure == null) {
                    failure = worker.error instanceof RuntimeException
                            ? (RuntimeException) worker.error
                            : new IllegalStateException(worker.error);
                }
                results[i] = (NDArray) worker.result;
                worker.result = null;
                worker.error = null;
            }
            if (failure != null) {
                throw failure;
            }
            return results;
        } finally {
            owner.unlock();
        }
    }

    private static final class Worker extends Thread {

        private final AtomicReference<Supplier<?>> task = new AtomicReference<>();
        private volatile boolean done = true;
        private volatile Thread waiter;
        private Object result;
        private Throwable error;

        private final int torchThreads;
        private final AtomicReference<NDManager> toRelease;
        /** The step manager this worker is freeing, its arrays, and how many are freed. */
        private NDManager releasing;
        private NDArray[] releasingArrays;
        private int released;

        Worker(String name, int torchThreads, AtomicReference<NDManager> toRelease) {
            super(name);
            this.torchThreads = torchThreads;
            this.toRelease = toRelease;
            setDaemon(true);
        }

        void hand(Supplier<?> next) {
            done = false;
            task.set(next);
            LockSupport.unpark(this);
        }

        /** Takes an unclaimed slice back, so the caller computes it; false once the worker has it. */
        boolean takeBack(Supplier<?> handed) {
            if (task.compareAndSet(handed, null)) {
                done = true;
                return true;
            }
            return false;
        }

        void await() {
            long deadline = System.nanoTime() + AWAIT_SPIN_NANOS;
            while (!done) {
                if (System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                } else {
                    waiter = Thread.currentThread();
                    if (!done) {
                        LockSupport.parkNanos(this, AWAIT_SPIN_NANOS * 20);
                    }
                    waiter = null;
                }
            }
        }

        @Override
        public void run() {
            TorchThreads.setIntraOp(torchThreads);
            // Workers compute inference only. PyTorch keeps autograd's switch per thread, on by
            // default; DJL turns it off only on the thread that starts the engine, so a product
            // with a parameter (which requires gradients) would otherwise record a graph here.
            JniUtils.setGradMode(false);
            while (true) {
                Supplier<?> next = claim();
                try {
                    result = next.get();
                } catch (Throwable t) { // handed to the caller, which rethrows it
                    error = t;
                }
                done = true;
                Thread parked = waiter;
                if (parked != null) {
                    LockSupport.unpark(parked);
                }
            }
        }

        /**
         * Frees up to {@link #RELEASE_BATCH} arrays of a finished step, taking the next step
         * manager when none is in hand.
         *
         * @return whether there was anything to free
         */
        private boolean releaseSome() {
            if (releasing == null) {
                NDManager next = toRelease.getAndSet(null);
                if (next == null) {
                    return false;
                }
                releasing = next;
                releasingArrays = next.getManagedArrays().toArray(new NDArray[0]);
                released = 0;
            }
            try {
                int end = Math.min(released + RELEASE_BATCH, releasingArrays.length);
                while (released < end) {
                    releasingArrays[released++].close();
                }
                if (released == releasingArrays.length) {
                    NDManager done = releasing;
                    releasing = null;
                    releasingArrays = null;
                    done.close(); // what is left: the manager itself and any sub-managers
                }
            } catch (RuntimeException e) { // a worker must survive it: the caller waits on it
                LOG.warn("could not free a finished step's arrays", e);
                releasing = null;
                releasingArrays = null;
            }
            return true;
        }

        private Supplier<?> claim() {
            long deadline = System.nanoTime() + IDLE_SPIN_NANOS;
            while (true) {
                Supplier<?> next = task.get();
                if (next != null && task.compareAndSet(next, null)) {
                    return next;
                }
                if (releaseSome()) {
                    deadline = System.nanoTime() + IDLE_SPIN_NANOS;
                } else if (System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                } else {
                    LockSupport.park(this);
                }
            }
        }
    }
}
