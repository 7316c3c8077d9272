package io.github.djlllmzoo.benchmarks;

import ai.djl.pytorch.jni.JniUtils;
import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * The engine calls a piece of work makes, counted by PyTorch's profiler (through DJL's {@code
 * JniUtils.startProfile}): each top-level ATen operation, i.e. each call into PyTorch's dispatcher
 * that is not made by another operation. Every NDArray operation DJL's PyTorch engine runs is one
 * or more of these; on a GPU each that computes is a kernel launch, and each costs the JNI and
 * dispatcher overhead whatever the device.
 *
 * @param total the top-level operations
 * @param byName their count by operation name
 * @param sequence their names in order (by thread)
 * @param microsByName the host time they took by operation name, in microseconds (the profiler's
 *     durations: the dispatcher's and the operation's own work on the calling thread, a kernel's
 *     launch on a GPU, not its run there)
 * @param gapMicros the host time between consecutive top-level operations of a thread: what the
 *     caller does between them (Java, DJL's wrapping of each result, JNI, freeing tensors)
 */
record EngineCalls(
        int total, Map<String, Integer> byName, List<String> sequence, Map<String, Double> microsByName, double gapMicros) {

    /**
     * Runs {@code work} under the profiler and counts its top-level operations.
     *
     * @param trace a file the profiler's Chrome trace is written to (then read)
     * @param work the work
     * @return its calls
     */
    static EngineCalls of(Path trace, Runnable work) throws IOException {
        JniUtils.startProfile(false, false, false);
        try {
            work.run();
        } finally {
            JniUtils.stopProfile(trace.toString());
        }
        return parse(Files.readString(trace, StandardCharsets.UTF_8));
    }

    /** The top-level complete events ("ph": "X") of a Chrome trace: those no other event of their thread encloses. */
    static EngineCalls parse(String chromeTrace) {
        JsonElement root = JsonParser.parseString(chromeTrace);
        JsonArray events = root.isJsonArray() ? root.getAsJsonArray() : root.getAsJsonObject().getAsJsonArray("traceEvents");
        List<JsonObject> spans = new ArrayList<>();
        for (JsonElement e : events) {
            JsonObject o = e.getAsJsonObject();
            if (o.has("dur") && "X".equals(o.get("ph").getAsString())) {
                spans.add(o);
            }
        }
        // by thread, then start; an enclosing event starts no later and lasts longer
        spans.sort(Comparator.comparing((JsonObject o) -> o.get("tid").getAsString())
                .thenComparingDouble(o -> o.get("ts").getAsDouble())
                .thenComparingDouble(o -> -o.get("dur").getAsDouble()));
        Map<String, Integer> byName = new TreeMap<>();
        Map<String, Double> microsByName = new TreeMap<>();
        List<String> sequence = new ArrayList<>();
        int total = 0;
        double gaps = 0;
        String thread = null;
        double openUntil = Double.NEGATIVE_INFINITY;
        for (JsonObject o : spans) {
            String tid = o.get("tid").getAsString();
            double start = o.get("ts").getAsDouble();
            double end = start + o.get("dur").getAsDouble();
            if (!tid.equals(thread) || start >= openUntil) {
                if (tid.equals(thread)) {
                    gaps += start - openUntil;
                }
                thread = tid;
                openUntil = end;
                total++;
                String name = o.get("name").getAsString();
                byName.merge(name, 1, Integer::sum);
                microsByName.merge(name, end - start, Double::sum);
                sequence.add(name.replace("aten::", ""));
            }
        }
        return new EngineCalls(total, byName, sequence, microsByName, gaps);
    }
}
