package io.github.djlllmzoo.server;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The door of a server's generation routes: it counts the requests being answered on HTTP threads
 * and, once draining, lets no new one in, so that a shutdown can wait for the running ones.
 */
final class RequestGate {

    private final AtomicInteger inFlight = new AtomicInteger();
    private final Object idle = new Object();
    private volatile boolean draining;

    /**
     * Lets a request in, unless the server is draining; a request let in must {@link #exit()}.
     *
     * @return whether it may go on
     */
    boolean enter() {
        // counted before the check: a drain that starts after it waits for this request
        inFlight.incrementAndGet();
        if (draining) {
            exit();
            return false;
        }
        return true;
    }

    /** A request let in has been answered. */
    void exit() {
        if (inFlight.decrementAndGet() == 0) {
            synchronized (idle) {
                idle.notifyAll();
            }
        }
    }

    /** @return whether new requests are refused */
    boolean draining() {
        return draining;
    }

    /**
     * Refuses new requests from now on and waits for the running ones.
     *
     * @param timeout how long to wait
     * @return whether every running request was answered within it
     * @throws InterruptedException if the thread is interrupted while waiting
     */
    boolean drain(Duration timeout) throws InterruptedException {
        draining = true;
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (idle) {
            while (inFlight.get() > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) {
                    return false;
                }
                TimeUnit.NANOSECONDS.timedWait(idle, left);
            }
        }
        return true;
    }
}
