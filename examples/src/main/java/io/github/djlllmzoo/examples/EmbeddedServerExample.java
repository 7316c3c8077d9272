package io.github.djlllmzoo.examples;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.server.OpenAiServer;
import io.github.djlllmzoo.server.ServerOptions;
import io.github.djlllmzoo.zoo.LocalModel;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;

/**
 * The OpenAI-compatible server embedded in a Java program: {@link OpenAiServer#start} serves a
 * loaded {@link LocalModel} on a port of this process until it is closed; any OpenAI client can
 * then call it, here Java's own HTTP client.
 *
 * <p>Run as {@code EmbeddedServerExample DIR [PROMPT]}; it starts the server on a free loopback
 * port, asks {@code /v1/completions} for 16 greedy tokens, prints the answer's text and stops.
 */
public final class EmbeddedServerExample {

    private EmbeddedServerExample() {}

    /**
     * Serves the checkpoint, sends one completion request and prints its text.
     *
     * @param args {@code DIR [PROMPT]}
     * @throws Exception if the checkpoint cannot be loaded or the request fails
     */
    public static void main(String[] args) throws Exception {
        if (args.length < 1 || args.length > 2) {
            throw new IllegalArgumentException("usage: EmbeddedServerExample DIR [PROMPT]");
        }
        JsonObject request = new JsonObject();
        request.addProperty("prompt", args.length == 2 ? args[1] : "Once upon a time");
        request.addProperty("max_tokens", 16);
        request.addProperty("temperature", 0);
        try (LocalModel model = LocalModel.load(Path.of(args[0]));
                OpenAiServer server =
                        OpenAiServer.start(model, ServerOptions.DEFAULTS.withAddress("127.0.0.1", 0))) {
            HttpResponse<String> response =
                    HttpClient.newHttpClient()
                            .send(
                                    HttpRequest.newBuilder(server.uri().resolve("/v1/completions"))
                                            .header("Content-Type", "application/json")
                                            .POST(HttpRequest.BodyPublishers.ofString(request.toString()))
                                            .build(),
                                    HttpResponse.BodyHandlers.ofString());
            if (response.statusCode() != 200) {
                throw new IllegalStateException("the server answered " + response.statusCode() + ": " + response.body());
            }
            JsonObject answer = JsonParser.parseString(response.body()).getAsJsonObject();
            System.out.println(answer.getAsJsonArray("choices").get(0).getAsJsonObject().get("text").getAsString());
        }
    }
}
