package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDManager;

/**
 * Closes the manager of a finished decode step off the calling thread: on the CPU the core that
 * computes half of every projection frees the step's arrays while it waits for the next slice,
 * so the next step starts at once. Elsewhere, or when the previous step is still being freed, the
 * manager is closed on the spot. Use it in place of {@code close()} once everything the step
 * produced has been copied out (token ids, logits as Java arrays).
 */
public final class StepRelease {

    private StepRelease() {}

    /**
     * Closes {@code step} now or on a worker; the caller must not use it or its arrays again.
     *
     * @param step the manager of a finished step, with no array anyone still reads
     */
    public static void close(NDManager step) {
        CoreWorkers.release(step);
    }
}
