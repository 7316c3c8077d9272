package io.github.djlllmzoo.blocks;

import ai.djl.Device;
import ai.djl.ndarray.NDManager;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Closes finished decode steps' managers on a thread of its own, for {@link EngineKernels} on a
 * device other than the CPU. There a decode step at small batch is bound by the host issuing the
 * engine's calls, not by the device, and closing a step frees its hundreds of arrays one JNI call
 * each: on the calling thread that time is added to every step, here it overlaps the next step's
 * calls. On the CPU the cores compute the step, so its manager is closed where it finished. At most
 * {@link #WAITING} managers wait; past that the caller closes its own, so memory stays bounded.
 */
final class StepCloser {

    private static final Logger logger = LoggerFactory.getLogger(StepCloser.class);

    /** Finished steps that may wait to be closed: the arrays of two steps at most are kept alive. */
    static final int WAITING = 2;

    private static final BlockingQueue<NDManager> queue = new ArrayBlockingQueue<>(WAITING);

    private static volatile Thread thread;

    private StepCloser() {}

    /**
     * Closes {@code step} off the calling thread where its device is not the CPU, else now.
     *
     * @param step the manager of a finished step; the caller must not use it or its arrays again
     */
    static void close(NDManager step) {
        if (Device.Type.CPU.equals(step.getDevice().getDeviceType())) {
            step.close();
        } else {
            closeLater(step);
        }
    }

    /**
     * Hands {@code step} to the closing thread, or closes it now where {@link #WAITING} wait already.
     *
     * @param step the manager of a finished step
     */
    static void closeLater(NDManager step) {
        start();
        if (!queue.offer(step)) {
            step.close();
        }
    }

    private static void start() {
        if (thread != null) {
            return;
        }
        synchronized (StepCloser.class) {
            if (thread == null) {
                Thread t = new Thread(StepCloser::run, "llmzoo-step-closer");
                t.setDaemon(true);
                t.start();
                thread = t;
            }
        }
    }

    private static void run() {
        while (true) {
            NDManager step;
            try {
                step = queue.take();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
            try {
                step.close();
            } catch (RuntimeException e) { // a failed free must not end the thread that frees the others
                logger.warn("closing a finished decode step's arrays failed", e);
            }
        }
    }
}
