package io.github.djlllmzoo.benchmarks;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

/** This process's resident memory, from Linux's {@code /proc/self/status}; -1 where unavailable. */
public final class ProcessMemory {

    private static final Path STATUS = Paths.get("/proc/self/status");
    private static final Path CLEAR_REFS = Paths.get("/proc/self/clear_refs");
    private static final Path LOAD_AVERAGE = Paths.get("/proc/loadavg");

    private ProcessMemory() {}

    /** @return the peak resident set size ({@code VmHWM}) in MiB, or -1 */
    public static double peakRssMib() {
        return field("VmHWM:");
    }

    /** @return the current resident set size ({@code VmRSS}) in MiB, or -1 */
    static double rssMib() {
        return field("VmRSS:");
    }

    /**
     * @param pid another process (e.g. a server under load)
     * @return its resident set size ({@code VmRSS}) in MiB, or -1
     */
    static double rssMib(long pid) {
        return field(status(pid), "VmRSS:");
    }

    /**
     * @param pid another process
     * @return the anonymous part of its resident size ({@code RssAnon}) in MiB, or -1
     */
    static double anonRssMib(long pid) {
        return field(status(pid), "RssAnon:");
    }

    private static Path status(long pid) {
        return Paths.get("/proc", Long.toString(pid), "status");
    }

    /**
     * The anonymous part of the resident size ({@code RssAnon}): the process's own memory (the
     * model's weights, the Java heap, the engine's arrays), which only it can give back.
     *
     * @return MiB, or -1
     */
    public static double anonRssMib() {
        return field("RssAnon:");
    }

    /**
     * The file-backed part of the resident size ({@code RssFile}): pages of mapped files (the
     * libraries' code, a mapped checkpoint), which the kernel can drop and read again.
     *
     * @return MiB, or -1
     */
    public static double fileRssMib() {
        return field("RssFile:");
    }

    /**
     * The resident size after a garbage collection, so that Java garbage not yet collected (which
     * comes and goes) does not read as growth; native arrays are freed by their managers, not by
     * the collector, so a native leak still shows.
     *
     * @return the resident set size in MiB, or -1
     */
    public static double retainedRssMib() {
        System.gc();
        return rssMib();
    }

    /**
     * Resets the peak to the current resident size (Linux 4.0+, {@code echo 5 >
     * /proc/self/clear_refs}), so work before a measurement does not count in its peak.
     *
     * @return whether the kernel accepted the reset
     */
    public static boolean resetPeak() {
        try {
            Files.writeString(CLEAR_REFS, "5");
            return true;
        } catch (IOException | SecurityException e) {
            return false;
        }
    }

    /** @return the 1-minute load average of the machine, or -1 */
    public static double loadAverage() {
        try {
            String line = Files.readString(LOAD_AVERAGE, StandardCharsets.US_ASCII);
            return Double.parseDouble(line.trim().split("\\s+")[0]);
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    private static double field(String name) {
        return field(STATUS, name);
    }

    private static double field(Path status, String name) {
        try {
            for (String line : Files.readAllLines(status, StandardCharsets.US_ASCII)) {
                if (line.startsWith(name)) {
                    String[] parts = line.substring(name.length()).trim().split("\\s+");
                    return Long.parseLong(parts[0]) / 1024.0; // kB
                }
            }
        } catch (IOException | RuntimeException e) {
            return -1;
        }
        return -1;
    }
}
