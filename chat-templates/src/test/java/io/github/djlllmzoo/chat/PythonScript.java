package io.github.djlllmzoo.chat;

import com.google.gson.JsonArray;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.URL;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.TimeUnit;

/**
 * A Python reference script run by a test: a JSON list of cases on its stdin, a JSON list of
 * answers, one per case, on its stdout. Tests ask {@link #unavailableReason} first and skip,
 * saying why, where {@code python3} or the module the script needs is absent.
 */
public final class PythonScript {

    private PythonScript() {}

    /**
     * @param module the Python module the script imports, e.g. {@code jinja2}
     * @return why the script cannot run here, or null when it can
     */
    public static String unavailableReason(String module) {
        try {
            Process process =
                    new ProcessBuilder("python3", "-c", "import " + module)
                            .redirectErrorStream(true)
                            .start();
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return "python3 -c 'import " + module + "' did not finish in 60 s";
            }
            return process.exitValue() == 0
                    ? null
                    : "python3 has no " + module + " module (pip install " + module + "): " + out.strip();
        } catch (IOException e) {
            return "no python3 on the PATH: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while looking for python3";
        }
    }

    /**
     * Runs a script over every case in one Python process.
     *
     * @param script the script (a test resource)
     * @param cases the cases
     * @return one answer per case, in order
     * @throws IOException if the script fails or answers a different number of cases
     */
    public static JsonArray run(URL script, JsonArray cases)
            throws IOException, InterruptedException {
        // a copy on disk: the script may sit inside a test jar (another module's test resources)
        Path file = Files.createTempFile("llmzoo-reference-", ".py");
        String out;
        try {
            try (InputStream source = script.openStream()) {
                Files.copy(source, file, StandardCopyOption.REPLACE_EXISTING);
            }
            Process process =
                    new ProcessBuilder("python3", file.toString())
                            .redirectError(ProcessBuilder.Redirect.INHERIT)
                            .start();
            try (OutputStream in = process.getOutputStream()) {
                in.write(cases.toString().getBytes(StandardCharsets.UTF_8));
            }
            out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(120, TimeUnit.SECONDS) || process.exitValue() != 0) {
                process.destroyForcibly();
                throw new IOException(script + " failed; its output: " + out);
            }
        } finally {
            Files.deleteIfExists(file);
        }
        JsonArray answers = JsonParser.parseString(out).getAsJsonArray();
        if (answers.size() != cases.size()) {
            throw new IOException(
                    script + " answered " + answers.size() + " of " + cases.size() + " cases");
        }
        return answers;
    }
}
