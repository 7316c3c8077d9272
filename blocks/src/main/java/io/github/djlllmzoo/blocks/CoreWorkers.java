package io.github.djlllmzoo.blocks;

import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;

/**
 * One daemon thread per extra CPU core, to run slices of a decode step's matrix-vector products
 * next to the calling thread (see {@link SplitProjection}). A slice takes a fraction of a
 * millisecond and the next one follows within a fraction of a millisecond, so an idle worker spins
 * for up to {@link #IDLE_SPIN_NANOS} before it parks: a slice handed over within a decode step
 * starts in about a microsecond instead of the tens of microseconds a wake-up costs (which, at
 * some 80 hand-overs per step, cost a Llama decode step 18% of its time). One caller at a time: a
 * second caller finds the workers busy and computes alone.
 */
final class CoreWorkers {

    /** How long an idle worker spins for the next slice before it parks. */
    static final long IDLE_SPIN_NANOS = 2_000_000L;

    private static volatile CoreWorkers shared;

    private final Worker[] workers;
    private final ReentrantLock owner = new ReentrantLock();

    private CoreWorkers(int threads) {
        workers = new Worker[threads];
        for (int i = 0; i < threads; i++) {
            workers[i] = new Worker("llmzoo-matvec-" + (i + 1));
            workers[i].start();
        }
    }

    /**
     * The workers of this process, made on first use.
     *
     * @param parallelism the threads to compute with, the caller included (at least 2)
     * @return the workers
     */
    static CoreWorkers shared(int parallelism) {
        CoreWorkers pool = shared;
        if (pool == null) {
            synchronized (CoreWorkers.class) {
                pool = shared;
                if (pool == null) {
                    pool = new CoreWorkers(parallelism - 1);
                    shared = pool;
                }
            }
        }
        return pool;
    }

    /** @return the threads a call computes with, the caller included */
    int parallelism() {
        return workers.length + 1;
    }

    /**
     * Runs {@code tasks[0]} on the calling thread and the others on the workers, concurrently.
     *
     * @param tasks at most {@link #parallelism()} tasks
     * @param <T> the result type
     * @return the results in task order, or {@code null} when another caller holds the workers
     */
    <T> Object[] invokeAll(Supplier<T>[] tasks) {
        if (!owner.tryLock()) {
            return null;
        }
        try {
            for (int i = 1; i < tasks.length; i++) {
                workers[i - 1].hand(tasks[i]);
            }
            Object[] results = new Object[tasks.length];
            RuntimeException failure = null;
            try {
                results[0] = tasks[0].get();
            } catch (RuntimeException e) {
                failure = e;
            }
            for (int i = 1; i < tasks.length; i++) {
                Worker worker = workers[i - 1];
                worker.await();
                if (worker.error != null && failure == null) {
                    failure = worker.error instanceof RuntimeException
                            ? (RuntimeException) worker.error
                            : new IllegalStateException(worker.error);
                }
                results[i] = worker.result;
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

        private volatile Supplier<?> task;
        private volatile boolean done = true;
        private Object result;
        private Throwable error;

        Worker(String name) {
            super(name);
            setDaemon(true);
        }

        void hand(Supplier<?> next) {
            done = false;
            task = next;
            LockSupport.unpark(this);
        }

        void await() {
            long deadline = System.nanoTime() + IDLE_SPIN_NANOS;
            while (!done) {
                if (System.nanoTime() < deadline) {
                    Thread.onSpinWait();
                } else {
                    Thread.yield();
                }
            }
        }

        @Override
        public void run() {
            while (true) {
                Supplier<?> next = task;
                long deadline = System.nanoTime() + IDLE_SPIN_NANOS;
                while (next == null) {
                    if (System.nanoTime() < deadline) {
                        Thread.onSpinWait();
                    } else {
                        LockSupport.park(this);
                    }
                    next = task;
                }
                task = null;
                try {
                    result = next.get();
                } catch (Throwable t) { // handed to the caller, which rethrows it
                    error = t;
                }
                done = true;
            }
        }
    }
}
