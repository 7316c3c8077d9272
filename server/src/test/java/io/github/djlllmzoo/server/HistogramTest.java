package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;

/** {@link Histogram}'s buckets as Prometheus reads them: cumulative, each bound included. */
class HistogramTest {

    @Test
    void anObservationCountsInTheFirstBucketWhoseBoundHoldsItAndInEveryLaterOne() {
        Histogram histogram = new Histogram(0.1, 1, 10);
        for (double seconds : new double[] {0.05, 0.1, 0.5, 1, 11, 100}) {
            histogram.observe(seconds);
        }
        PrometheusText out = new PrometheusText();
        histogram.write(out, "t_seconds", "A test.");
        assertEquals(
                "# HELP t_seconds A test.\n"
                        + "# TYPE t_seconds histogram\n"
                        + "t_seconds_bucket{le=\"0.1\"} 2\n"
                        + "t_seconds_bucket{le=\"1\"} 4\n"
                        + "t_seconds_bucket{le=\"10\"} 4\n"
                        + "t_seconds_bucket{le=\"+Inf\"} 6\n"
                        + "t_seconds_sum 112.65\n"
                        + "t_seconds_count 6\n",
                out.toString());
    }

    @Test
    void boundsMustAscend() {
        assertThrows(IllegalArgumentException.class, () -> new Histogram(1, 1));
        assertThrows(IllegalArgumentException.class, () -> new Histogram(2, 1));
    }

    @Test
    void labelValuesAreEscapedAsTheFormatAsks() {
        PrometheusText out = new PrometheusText();
        out.sample("m", "l", "a\"b\\c\nd", 1.5);
        assertEquals("m{l=\"a\\\"b\\\\c\\nd\"} 1.5\n", out.toString());
    }
}
