package io.github.djlllmzoo.benchmarks;

import com.google.gson.JsonArray;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;

/**
 * What a client saw of one streamed {@code /v1/completions} answer (server-sent events): when its
 * first and last text came, how many tokens it had, and whether it ended cleanly ({@code data:
 * [DONE]} after a {@code finish_reason}, no error event) or the client left it on purpose.
 *
 * @param firstTextNanos when the first non-empty text arrived ({@link System#nanoTime()}), 0 if none
 * @param lastTextNanos when the last non-empty text arrived, 0 if none
 * @param tokens completion tokens: the usage chunk's when the server sent one, else the text
 *     chunks counted
 * @param clean whether the stream ended with a finish reason and {@code [DONE]}, without an error
 * @param disconnected whether the client closed the stream before its end, on purpose
 * @param problem what was wrong when not clean, else {@code null}
 */
record StreamedAnswer(
        long firstTextNanos,
        long lastTextNanos,
        long tokens,
        boolean clean,
        boolean disconnected,
        String problem) {

    /**
     * Reads a stream to its end, or until {@code leaveAfterChunks} text chunks were read, then
     * closes it.
     *
     * @param body the response body
     * @param leaveAfterChunks text chunks after which the client disconnects; 0 never
     * @return what was seen
     * @throws IOException if reading fails
     */
    static StreamedAnswer read(InputStream body, int leaveAfterChunks) throws IOException {
        long first = 0;
        long last = 0;
        long textChunks = 0;
        long usageTokens = -1;
        String finishReason = null;
        try (BufferedReader reader =
                new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8))) {
            for (String line = reader.readLine(); line != null; line = reader.readLine()) {
                if (!line.startsWith("data: ")) {
                    continue; // blank separators, comments
                }
                String data = line.substring("data: ".length()).strip();
                if (data.equals("[DONE]")) {
                    long tokens = usageTokens >= 0 ? usageTokens : textChunks;
                    return finishReason == null
                            ? new StreamedAnswer(first, last, tokens, false, false, "[DONE] without a finish_reason")
                            : new StreamedAnswer(first, last, tokens, true, false, null);
                }
                JsonObject chunk = JsonParser.parseString(data).getAsJsonObject();
                if (chunk.has("error")) {
                    return new StreamedAnswer(first, last, textChunks, false, false, "error event: " + chunk.get("error"));
                }
                if (chunk.has("usage") && chunk.get("usage").isJsonObject()) {
                    usageTokens = chunk.getAsJsonObject("usage").get("completion_tokens").getAsLong();
                }
                JsonArray choices = chunk.has("choices") ? chunk.getAsJsonArray("choices") : new JsonArray();
                for (JsonElement element : choices) {
                    JsonObject choice = element.getAsJsonObject();
                    JsonElement text = choice.get("text");
                    if (text != null && !text.isJsonNull() && !text.getAsString().isEmpty()) {
                        last = System.nanoTime();
                        if (first == 0) {
                            first = last;
                        }
                        textChunks++;
                    }
                    JsonElement reason = choice.get("finish_reason");
                    if (reason != null && !reason.isJsonNull()) {
                        finishReason = reason.getAsString();
                    }
                }
                if (leaveAfterChunks > 0 && textChunks >= leaveAfterChunks && finishReason == null) {
                    return new StreamedAnswer(first, last, textChunks, false, true, null);
                }
            }
        }
        return new StreamedAnswer(first, last, textChunks, false, false, "the stream ended without [DONE]");
    }
}
