package io.github.djlllmzoo.chat;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

/**
 * Python's Jinja2 with Hugging Face's {@code apply_chat_template} settings, run as {@code python3
 * render_jinja2.py} (a test resource): the reference the Jinjava renderings are compared with. On
 * a machine without {@code python3} or its {@code jinja2} module, {@link #unavailableReason()}
 * says so and the comparisons are skipped.
 */
public final class Jinja2Reference {

    /**
     * One rendering: the text, or the template's error message.
     *
     * @param output the rendered text, or null on an error
     * @param error the template's error message, or null
     */
    public record Result(String output, String error) {}

    private Jinja2Reference() {}

    /** @return why Jinja2 cannot run here, or null when it can */
    public static String unavailableReason() {
        return PythonScript.unavailableReason("jinja2");
    }

    /**
     * Renders every case in one Python process.
     *
     * @param cases each {@code {"template": ..., "context": {...}}}
     * @return one result per case, in order
     */
    public static List<Result> render(JsonArray cases)
            throws IOException, InterruptedException {
        List<Result> results = new ArrayList<>();
        JsonArray answers =
                PythonScript.run(
                        Jinja2Reference.class.getResource("/chat-templates/render_jinja2.py"),
                        cases);
        for (JsonElement e : answers) {
            JsonObject o = e.getAsJsonObject();
            results.add(
                    new Result(
                            o.has("output") ? o.get("output").getAsString() : null,
                            o.has("error") ? o.get("error").getAsString() : null));
        }
        return results;
    }
}
