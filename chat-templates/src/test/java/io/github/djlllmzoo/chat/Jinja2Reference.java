package io.github.djlllmzoo.chat;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
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
 * Python's Jinja2 with Hugging Face's {@code apply_chat_template} settings, run as {@code python3
 * render_jinja2.py} (a test resource): the reference the Jinjava renderings are compared with. On
 * a machine without {@code python3} or its {@code jinja2} module, {@link #unavailableReason()}
 * says so and the comparisons are skipped.
 */
public final class Jinja2Reference {

    /** One rendering: the text, or the template's error message. */
    /**
     * @param output the rendered text, or null on an error
     * @param error the template's error message, or null
     */
    public record Result(String output, String error) {}

    private Jinja2Reference() {}

    /** @return why Jinja2 cannot run here, or null when it can */
    public static String unavailableReason() {
        try {
            Process process =
                    new ProcessBuilder("python3", "-c", "import jinja2")
                            .redirectErrorStream(true)
                            .start();
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(60, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                return "python3 -c 'import jinja2' did not finish in 60 s";
            }
            return process.exitValue() == 0
                    ? null
                    : "python3 has no jinja2 module (pip install jinja2 or apt install"
                            + " python3-jinja2): "
                            + out.strip();
        } catch (IOException e) {
            return "no python3 on the PATH: " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "interrupted while looking for python3";
        }
    }

    /**
     * Renders every case in one Python process.
     *
     * @param cases each {@code {"template": ..., "context": {...}}}
     * @return one result per case, in order
     */
    public static List<Result> render(JsonArray cases)
            throws IOException, InterruptedException, URISyntaxException {
        Path script =
                Paths.get(
                        Jinja2Reference.class
                                .getResource("/chat-templates/render_jinja2.py")
                                .toURI());
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
            throw new IOException("render_jinja2.py failed; its output: " + out);
        }
        List<Result> results = new ArrayList<>();
        for (JsonElement e : JsonParser.parseString(out).getAsJsonArray()) {
            JsonObject o = e.getAsJsonObject();
            results.add(
                    new Result(
                            o.has("output") ? o.get("output").getAsString() : null,
                            o.has("error") ? o.get("error").getAsString() : null));
        }
        if (results.size() != cases.size()) {
            throw new IOException(
                    "render_jinja2.py answered " + results.size() + " of " + cases.size() + " cases");
        }
        return results;
    }
}
