package io.github.djlllmzoo.zoo.hub;

import java.io.PrintStream;
import java.util.Locale;

/**
 * One-line download progress, redrawn with {@code \r} at most every {@value #INTERVAL_MS} ms and
 * ended with a newline: {@code model.safetensors  12.0/48.0 MB  25%  30.5 MB/s}.
 */
final class ProgressBar {

    static final long INTERVAL_MS = 250;
    private static final double MB = 1024.0 * 1024.0;

    private final PrintStream out;
    private final String name;
    private final long total;
    private final long startNanos;
    private long startBytes = -1;
    private long lastDrawNanos;
    private int lastWidth;

    ProgressBar(PrintStream out, String name, long total) {
        this.out = out;
        this.name = name;
        this.total = total;
        this.startNanos = System.nanoTime();
        this.lastDrawNanos = startNanos - INTERVAL_MS * 1_000_000;
    }

    /** Records that {@code done} bytes of the file are on disk; redraws when due. */
    void update(long done) {
        if (startBytes < 0) {
            startBytes = done;
        }
        long now = System.nanoTime();
        if (now - lastDrawNanos >= INTERVAL_MS * 1_000_000) {
            lastDrawNanos = now;
            draw(done, now);
        }
    }

    /** Draws the final state and ends the line. */
    void finish(long done) {
        if (startBytes < 0) {
            startBytes = done;
        }
        draw(done, System.nanoTime());
        out.println();
        out.flush();
    }

    private void draw(long done, long now) {
        double seconds = Math.max((now - startNanos) / 1e9, 1e-3);
        double speed = (done - startBytes) / MB / seconds;
        int percent = total > 0 ? (int) Math.min(100, done * 100 / total) : 100;
        String line =
                String.format(
                        Locale.ROOT,
                        "%s  %.1f/%.1f MB  %3d%%  %.1f MB/s",
                        name,
                        done / MB,
                        total / MB,
                        percent,
                        speed);
        StringBuilder sb = new StringBuilder(line.length() + 2).append('\r').append(line);
        for (int i = line.length(); i < lastWidth; i++) {
            sb.append(' ');
        }
        lastWidth = line.length();
        out.print(sb);
        out.flush();
    }
}
