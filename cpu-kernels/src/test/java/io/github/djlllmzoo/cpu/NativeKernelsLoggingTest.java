package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.logging.Handler;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

class NativeKernelsLoggingTest {

    @Test
    void aLibraryThatWasNotBuiltIsReportedThroughSlf4jBelowTheDefaultWarnLevel() throws Exception {
        assumeTrue(System.getProperty("os.name", "").toLowerCase().contains("linux")
                        && Files.readString(Paths.get("/proc/cpuinfo")).contains(" avx512f "),
                "the library is only looked for on x86-64 Linux CPUs with AVX-512F");
        List<LogRecord> julRecords = new ArrayList<>();
        Handler handler = new Handler() {
            @Override
            public void publish(LogRecord record) {
                julRecords.add(record);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        Logger root = Logger.getLogger("");
        root.addHandler(handler);
        PrintStream err = System.err;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        System.setErr(new PrintStream(captured, true, StandardCharsets.UTF_8));
        try {
            assertFalse(NativeKernels.load(null), "nothing to load");
        } finally {
            System.setErr(err);
            root.removeHandler(handler);
        }
        assertEquals(List.of(), julRecords, "records sent to java.util.logging");
        // slf4j-simple writes to System.err at the level the build sets, as bin/llmzoo does: warn.
        assertEquals("", captured.toString(StandardCharsets.UTF_8), "written at warn level or above");
    }
}
