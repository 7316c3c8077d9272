package io.github.djlllmzoo.blocks;

import java.lang.management.BufferPoolMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;

/**
 * Makes a read of freed Java memory by the engine visible. A DJL PyTorch array made from Java data
 * (the scalar operand of {@code x.mul(2f)}, {@code manager.create(float[])}) is a view of a direct
 * buffer that only the array keeps alive: once the array is closed and a garbage collection finds
 * the buffer unreachable, its memory is freed, even where autograd still holds the tensor for the
 * backward pass. That happens at some step of some run, when a collection falls between a forward
 * pass and its backward pass; this makes it happen at a chosen point.
 */
public final class FreedJavaMemory {

    /** Small allocations, of the sizes a scalar's buffer has, that refill what was freed. */
    private static final int REFILLS = 4096;
    private static final long WAIT_NANOS = 5_000_000_000L;
    /** Collections in a row that free nothing more before the buffers left count as reachable. */
    private static final int STABLE_CHECKS = 5;

    private FreedJavaMemory() {}

    /** @return the number of direct buffers the JVM holds now */
    public static long directBuffers() {
        for (BufferPoolMXBean pool : ManagementFactory.getPlatformMXBeans(BufferPoolMXBean.class)) {
            if (pool.getName().equals("direct")) {
                return pool.getCount();
            }
        }
        throw new IllegalStateException("the JVM reports no direct buffer pool");
    }

    /**
     * Collects garbage until the direct buffers made since {@code baseline} and unreachable now are
     * freed (the count is back at {@code baseline}, or collections stop lowering it, or five seconds
     * passed), then allocates small blocks filled with NaN, which take the
     * freed memory's place. Hold the result until the backward pass has run.
     *
     * @param baseline {@link #directBuffers()} before the arrays in question were made
     * @return the refilled blocks
     * @throws InterruptedException if interrupted while waiting for the collector
     */
    public static List<ByteBuffer> collectAndOverwrite(long baseline) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT_NANOS;
        long count = directBuffers();
        for (int unchanged = 0; count > baseline && unchanged < STABLE_CHECKS && System.nanoTime() < deadline; ) {
            System.gc();
            Thread.sleep(10);
            long now = directBuffers();
            unchanged = now == count ? unchanged + 1 : 0;
            count = now;
        }
        List<ByteBuffer> refills = new ArrayList<>(REFILLS);
        for (int i = 0; i < REFILLS; i++) {
            ByteBuffer block = ByteBuffer.allocateDirect(4 << (i % 3)).order(ByteOrder.nativeOrder());
            while (block.remaining() >= Float.BYTES) {
                block.putFloat(Float.NaN);
            }
            refills.add(block);
        }
        return refills;
    }
}
