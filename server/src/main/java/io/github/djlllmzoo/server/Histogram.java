package io.github.djlllmzoo.server;

import java.util.Arrays;
import java.util.concurrent.atomic.DoubleAdder;
import java.util.concurrent.atomic.LongAdder;

/**
 * A Prometheus histogram of durations in seconds: counts per bucket (each bucket counts the
 * observations up to its upper bound), their sum and their number, updated without locks from any
 * thread.
 */
final class Histogram {

    private final double[] bounds;
    private final LongAdder[] buckets; // per bound, not cumulative; the last one past every bound
    private final DoubleAdder sum = new DoubleAdder();

    /** @param bounds the buckets' upper bounds in seconds, ascending */
    Histogram(double... bounds) {
        for (int i = 1; i < bounds.length; i++) {
            if (!(bounds[i] > bounds[i - 1])) {
                throw new IllegalArgumentException("bounds must ascend: " + Arrays.toString(bounds));
            }
        }
        this.bounds = bounds.clone();
        this.buckets = new LongAdder[bounds.length + 1];
        for (int i = 0; i < buckets.length; i++) {
            buckets[i] = new LongAdder();
        }
    }

    /** @param seconds one observation */
    void observe(double seconds) {
        int bucket = Arrays.binarySearch(bounds, seconds);
        buckets[bucket >= 0 ? bucket : -bucket - 1].increment();
        sum.add(seconds);
    }

    /**
     * Writes the histogram in the text exposition format: {@code name_bucket{le="..."}}
     * (cumulative, ending with {@code +Inf}), {@code name_sum} and {@code name_count}.
     *
     * @param out where to write
     * @param name the metric's name
     * @param help what it measures
     */
    void write(PrometheusText out, String name, String help) {
        out.header(name, "histogram", help);
        long cumulative = 0;
        for (int i = 0; i < buckets.length; i++) {
            cumulative += buckets[i].sum();
            String le = i < bounds.length ? PrometheusText.number(bounds[i]) : "+Inf";
            out.sample(name + "_bucket", "le", le, cumulative);
        }
        out.sample(name + "_sum", sum.sum());
        out.sample(name + "_count", cumulative);
    }
}
