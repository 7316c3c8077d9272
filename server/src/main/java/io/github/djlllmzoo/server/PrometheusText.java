package io.github.djlllmzoo.server;

/**
 * A page in Prometheus' text exposition format (version 0.0.4): {@code # HELP} and {@code # TYPE}
 * lines before each metric's samples, one sample a line.
 */
final class PrometheusText {

    /** The content type Prometheus expects for this format. */
    static final String CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8";

    private final StringBuilder text = new StringBuilder();

    /**
     * @param name the metric's name
     * @param type {@code counter}, {@code gauge} or {@code histogram}
     * @param help what it measures (one line)
     */
    void header(String name, String type, String help) {
        text.append("# HELP ").append(name).append(' ').append(help).append('\n');
        text.append("# TYPE ").append(name).append(' ').append(type).append('\n');
    }

    /** One sample without labels. */
    void sample(String name, double value) {
        text.append(name).append(' ').append(number(value)).append('\n');
    }

    /** One sample with one label; the label's value is escaped as the format asks. */
    void sample(String name, String label, String labelValue, double value) {
        text.append(name)
                .append('{')
                .append(label)
                .append("=\"")
                .append(labelValue.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", "\\n"))
                .append("\"} ")
                .append(number(value))
                .append('\n');
    }

    /** A counter or gauge with one sample. */
    void metric(String name, String type, String help, double value) {
        header(name, type, help);
        sample(name, value);
    }

    /** @return the page */
    @Override
    public String toString() {
        return text.toString();
    }

    /** @return the value as the format writes it: whole numbers without a fraction */
    static String number(double value) {
        if (value == Math.rint(value) && !Double.isInfinite(value) && Math.abs(value) < 1e15) {
            return Long.toString((long) value);
        }
        return Double.toString(value);
    }
}
