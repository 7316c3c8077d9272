package io.github.djlllmzoo.cpu;

import io.github.djlllmzoo.blocks.CompressedWeight;
import java.lang.ref.WeakReference;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.WeakHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Reads the start of the next hand-over's weights into the caches while the calling thread works
 * alone between hand-overs. A one-row decode step streams its weights from memory on both cores,
 * but between two products the calling thread spends tens of microseconds on work no weight is read
 * in (the rotation and attention, the arrays of the next call, the norm; a few hundred between two
 * steps: the sampling, the next token's embedding and mask), while the workers spin. Here a worker
 * spends that time reading the first bytes of each core's share of the next hand-over's weights, so
 * those come from the caches when the products start (docs/PERFORMANCE.md, "int4 one-row decode step
 * (session 19)").
 *
 * <p>The next hand-over is learned: each hand-over of compressed weights records itself as the one
 * that followed the previous hand-over on the same thread, and after it asks the workers to read
 * ahead the hand-over that followed it the last time (a decode step makes the same hand-overs in the
 * same order every step). The read-ahead only reads: products are bit for bit the same with it or
 * without it. It is off unless {@code -Dllmzoo.cpu.readAheadKib} gives it a budget: measured so far it
 * gained 0.9 % in a quiet minute and cost 1-3 % with the cores shared by other processes, whose loads
 * evict what was read before the products read it (docs/PERFORMANCE.md). A worker reads in chunks of
 * {@link #CHUNK} bytes and takes a slice handed over before its next chunk; a new hand-over drops what is left.
 *
 * <p>The time between two hand-overs is shared with the freeing of the previous step's arrays
 * ({@link CoreWorkers#release}), which must be done within a step, so a worker frees those first
 * (reads first starved it: the calling thread then freed them itself); and each hand-over's read is
 * limited to what fitted last time, three quarters of what was read where the next hand-over came
 * first, a quarter more where it was all read.
 */
final class WeightReadAhead {

    /**
     * The property of the most KiB read ahead for a hand-over, over all the cores' shares; 0 (the
     * default) turns the read-ahead off. 4096 is what the memory streams in the 100-200 microseconds
     * between two decode steps (the sampling, the next token's embedding, mask and positions); a
     * layer's rotation and attention leave time for about a quarter of it, and the next hand-over
     * drops the rest. It stays within the L3 cache; a worker's L2 keeps the latest part.
     */
    static final String PROPERTY = "llmzoo.cpu.readAheadKib";

    /**
     * Bytes a worker reads before it looks for a slice handed over again: a fraction of a
     * microsecond from memory, so a hand-over finds the worker about as soon as a spinning one.
     */
    static final int CHUNK = 4 * 1024;

    /** The budget in bytes on a thread computing with read-ahead ({@link #with}). */
    private static final ThreadLocal<Integer> BUDGET = new ThreadLocal<>();

    /** The last hand-over of compressed weights on each thread: its first weight. */
    private static final ThreadLocal<CompressedWeight> LAST = new ThreadLocal<>();

    /** The hand-over that followed each (by its first weight) the last time, as what to read. */
    private static final Map<CompressedWeight, Plan> NEXT = Collections.synchronizedMap(new WeakHashMap<>());

    /** Chunks read ahead in this process, for tests. */
    private static final AtomicInteger CHUNKS_READ = new AtomicInteger();

    /** Keeps the loads from being optimised away. */
    private static volatile long sink;

    private WeightReadAhead() {}

    /**
     * Records that a hand-over of these weights' products has just ended and asks the workers to read
     * ahead the hand-over that followed it last time. Call it after {@link CoreWorkers#share} returns.
     *
     * @param pooled whether {@link CoreWorkers#share} was asked to pool the hand-over's last runs
     * @param weights the weights of the hand-over's products, in the order each core's runs compute them
     */
    static void handedOver(boolean pooled, CompressedWeight... weights) {
        Integer bytes = BUDGET.get();
        if (CoreWorkers.PARALLELISM == 1 || bytes == null) {
            return;
        }
        CompressedWeight first = weights[0];
        CompressedWeight last = LAST.get();
        if (last != null) {
            Plan known = NEXT.get(last);
            boolean balanced = CoreWorkers.balanced(pooled);
            if (known == null || known.first.get() != first || known.balanced != balanced || known.bytes != bytes) {
                NEXT.put(last, Plan.of(weights, balanced, bytes));
            }
        }
        LAST.set(first);
        Plan next = NEXT.get(first);
        if (next != null) {
            CoreWorkers.readAhead(next.start());
        }
    }

    /**
     * The budget {@link #PROPERTY} gives, as kernels made now read it.
     *
     * @return bytes, 0 for none
     */
    static int configuredBytes() {
        return (int) Math.min(Integer.MAX_VALUE / 2, Math.max(0L, Long.getLong(PROPERTY, 0L)) * 1024);
    }

    /**
     * Computes {@code computation} with its hand-overs recorded and the next one read ahead, up to
     * {@code bytes} a hand-over, as the kernels of a model made with {@code
     * -Dllmzoo.cpu.readAheadKib} compute; without either where {@code bytes} is 0.
     *
     * @param bytes the most bytes read ahead for a hand-over
     * @param computation what to compute on the calling thread
     * @param <T> its result's type
     * @return its result
     */
    static <T> T with(int bytes, Supplier<T> computation) {
        if (bytes <= 0) {
            return computation.get();
        }
        Integer outer = BUDGET.get();
        BUDGET.set(bytes);
        try {
            return computation.get();
        } finally {
            if (outer == null) {
                BUDGET.remove();
            } else {
                BUDGET.set(outer);
            }
        }
    }

    /** @return the chunks the workers have read ahead in this process */
    static int chunksRead() {
        return CHUNKS_READ.get();
    }

    /**
     * @param weight a hand-over's first weight
     * @return whether a hand-over is known to have followed it
     */
    static boolean knowsNext(CompressedWeight weight) {
        return NEXT.containsKey(weight);
    }

    /**
     * What to read ahead for one hand-over: for each core's first block of runs ({@link
     * CoreWorkers#share}), its first runs of every weight in the order it computes them, each weight's
     * rows in each of its buffers; the cores' stretches taken in turn, a chunk each, so each core's
     * start is read first.
     */
    static final class Plan {
        /** The hand-over's first weight, held weakly: this plan is a value of {@link #NEXT}. */
        private final WeakReference<CompressedWeight> first;
        /** Whether the hand-over's columns were cut into blocks and a pool ({@link CoreWorkers#balanced}). */
        private final boolean balanced;
        /** The budget it was made for. */
        private final int bytes;
        private final ByteBuffer[] buffers;
        private final int[] from;
        private final int[] to;
        /** The chunks to read next time, fitted to the time the calling thread left (see the class). */
        private volatile int limit;

        private Plan(CompressedWeight first, boolean balanced, int bytes, List<ByteBuffer> buffers, List<int[]> ranges) {
            this.first = new WeakReference<>(first);
            this.balanced = balanced;
            this.bytes = bytes;
            this.buffers = buffers.toArray(new ByteBuffer[0]);
            this.from = new int[ranges.size()];
            this.to = new int[ranges.size()];
            for (int i = 0; i < ranges.size(); i++) {
                from[i] = ranges.get(i)[0];
                to[i] = ranges.get(i)[1];
            }
            limit = from.length;
        }

        /** After a read of all {@link #limit} chunks: a quarter more next time. */
        void grow() {
            limit = Math.min(from.length, limit + Math.max(1, limit / 4));
        }

        /** After a read dropped at {@code read} chunks: three quarters of them next time. */
        void shrink(int read) {
            limit = Math.max(1, read * 3 / 4);
        }

        /** @return the chunks the next read of this plan reads */
        int limit() {
            return limit;
        }

        /**
         * The read for {@code weights}' products as {@link CoreWorkers#share} cuts them.
         *
         * @param weights the hand-over's weights
         * @param balanced whether the columns are cut into blocks and a pool of runs, or one share a thread
         * @param bytes the most bytes to read, over all the threads' shares
         * @return the plan
         */
        static Plan of(CompressedWeight[] weights, boolean balanced, int bytes) {
            int threads = CoreWorkers.PARALLELISM;
            int block = balanced ? CoreWorkers.BLOCK_RUNS : 1;
            int runs = threads * block + (balanced ? CoreWorkers.POOL_RUNS : 0);
            List<List<int[]>> perThread = new ArrayList<>();
            List<List<ByteBuffer>> perThreadBuffers = new ArrayList<>();
            int budget = bytes / threads;
            for (int t = 0; t < threads; t++) {
                List<int[]> ranges = new ArrayList<>();
                List<ByteBuffer> buffers = new ArrayList<>();
                int left = budget;
                for (int run = t * block; run < (t + 1) * block && left > 0; run++) {
                    for (CompressedWeight weight : weights) {
                        int out = weight.outFeatures();
                        int rowFrom = CoreWorkers.start(out, run, runs);
                        int rowTo = CoreWorkers.start(out, run + 1, runs);
                        for (ByteBuffer buffer : weight.directBuffers()) {
                            if (buffer == null || left <= 0) {
                                continue;
                            }
                            long rowBytes = buffer.capacity() / out;
                            long start = rowFrom * rowBytes;
                            long end = Math.min(rowTo * rowBytes, start + left);
                            if (end > start) {
                                for (long at = start; at < end; at += CHUNK) { // one chunk a range
                                    ranges.add(new int[] {(int) at, (int) Math.min(end, at + CHUNK)});
                                    buffers.add(buffer);
                                }
                                left -= (int) (end - start);
                            }
                        }
                    }
                }
                perThread.add(ranges);
                perThreadBuffers.add(buffers);
            }
            List<int[]> ranges = new ArrayList<>();
            List<ByteBuffer> buffers = new ArrayList<>();
            for (int i = 0; ; i++) { // the threads' chunks in turn
                boolean any = false;
                for (int t = 0; t < threads; t++) {
                    if (i < perThread.get(t).size()) {
                        ranges.add(perThread.get(t).get(i));
                        buffers.add(perThreadBuffers.get(t).get(i));
                        any = true;
                    }
                }
                if (!any) {
                    break;
                }
            }
            return new Plan(weights[0], balanced, bytes, buffers, ranges);
        }

        /** @return the chunks' buffers and their byte ranges {@code [from, to)}, in the order they are read */
        List<Object[]> chunks() {
            List<Object[]> chunks = new ArrayList<>();
            for (int i = 0; i < from.length; i++) {
                chunks.add(new Object[] {buffers[i], from[i], to[i]});
            }
            return chunks;
        }

        /** A fresh read of this plan, for the workers to share. */
        Reading start() {
            return new Reading(this);
        }
    }

    /** One read-ahead in progress: the workers take its chunks in turn ({@link #readChunk}). */
    static final class Reading {
        private final Plan plan;
        private final AtomicInteger next = new AtomicInteger();

        private Reading(Plan plan) {
            this.plan = plan;
        }

        /**
         * Reads the next chunk: a load from each cache line of it.
         *
         * @return whether there was a chunk left to read
         */
        boolean readChunk() {
            int chunk = next.getAndIncrement();
            int limit = plan.limit;
            if (chunk >= limit) {
                if (chunk == limit) {
                    plan.grow();
                }
                return false;
            }
            ByteBuffer buffer = plan.buffers[chunk];
            long sum = 0;
            for (int at = plan.from[chunk], end = plan.to[chunk] - Long.BYTES; at <= end; at += 64) {
                sum += buffer.getLong(at);
            }
            sink = sum;
            CHUNKS_READ.incrementAndGet();
            return true;
        }

        /** The next hand-over has come: what is left is not read, and the next read is fitted to what was. */
        void drop() {
            int read = next.getAndSet(Integer.MAX_VALUE / 2); // no worker starts another chunk
            int limit = plan.limit;
            if (read < limit) {
                plan.shrink(read);
            }
        }
    }
}
