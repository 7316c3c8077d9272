package io.github.djlllmzoo.server;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonParser;
import java.io.IOException;
import java.io.OutputStream;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * Python's {@code jsonschema} (Draft 2020-12, formats checked), run as {@code python3
 * validate_json.py} (a test resource): a validator independent of the constrained decoding under
 * test. Where {@code python3} or its {@code jsonschema} module is absent, {@link
 * #unavailableReason()} says so and the tests that need it are skipped.
 */
final class SchemaValidator {

    private SchemaValidator() {}

    /** @return why the validator cannot run here, or null when it can */
    static String unavailableReason() {
        try {
            Process process =
                    new ProcessBuilder("python3", "-c", "import jsonschema")
                            .redirectErrorStream(true)
                            .start();
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return "python3 -c 'import jsonschema' did not finish in 60 s";
            }
            return process.exitValue() == 0
                    ? null
                    : "python3 has no jsonschema module (pip install jsonschema): " + out.strip();
        } catch (IOException e) {
            return "no python3 on the PATH: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while looking for python3";
        }
    }

    /**
     * Validates every case in one Python process.
     *
     * @param cases each {@code {"schema": {...}, "text": "..."}}
     * @return per case null when valid, else the validator's messages
     */
    static List<String> validate(JsonArray cases)
            throws IOException, InterruptedException, URISyntaxException {
        Path script = Paths.get(SchemaValidator.class.getResource("/validate_json.py").toURI());
        Process process =
                new ProcessBuilder("python3", script.toString())
                        .redirectError(ProcessBuilder.Redirect.INHERIT)
                        .start();
        try (OutputStream in = process.getOutputStream()) {
            in.write(cases.toString().getBytes(StandardCharsets.UTF_8));
        }
        String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!process.waitFor(120, TimeUnit.SECONDS) || process.exitValue() != 0) {
            process.destroyForcibly();
            throw new IOException("validate_json.py failed; its output: " + out);
        }
        List<String> results = new ArrayList<>();
        for (JsonElement e : JsonParser.parseString(out).getAsJsonArray()) {
            results.add(e.isJsonNull() ? null : e.getAsString());
        }
        if (results.size() != cases.size()) {
            throw new IOException(
                    "validate_json.py answered " + results.size() + " of " + cases.size() + " cases");
        }
        return results;
    }
}
