package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/** Requests to a running server for the tests: whole answers, errors and streamed chunks. */
final class ServerCalls {

    private static final HttpClient CLIENT =
            HttpClient.newBuilder()
                    .version(HttpClient.Version.HTTP_1_1)
                    .connectTimeout(Duration.ofSeconds(10))
                    .build();

    private ServerCalls() {}

    static HttpResponse<String> post(OpenAiServer server, String path, JsonObject body)
            throws Exception {
        return CLIENT.send(
                HttpRequest.newBuilder(server.uri().resolve(path))
                        .timeout(Duration.ofSeconds(120))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body.toString()))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    /** The answer of a request that must succeed. */
    static JsonObject ok(OpenAiServer server, String path, JsonObject body) throws Exception {
        HttpResponse<String> response = post(server, path, body);
        assertEquals(200, response.statusCode(), response.body());
        return JsonParser.parseString(response.body()).getAsJsonObject();
    }

    /** The {@code error} object of a request that must fail with {@code status}. */
    static JsonObject error(OpenAiServer server, String path, JsonObject body, int status)
            throws Exception {
        HttpResponse<String> response = post(server, path, body);
        assertEquals(status, response.statusCode(), body + " -> " + response.body());
        return JsonParser.parseString(response.body()).getAsJsonObject().getAsJsonObject("error");
    }

    /** The chunks of a streamed answer, up to {@code data: [DONE]} (which must end it). */
    static List<JsonObject> chunks(OpenAiServer server, String path, JsonObject body)
            throws Exception {
        HttpResponse<String> response = post(server, path, body);
        assertEquals(200, response.statusCode(), response.body());
        List<JsonObject> out = new ArrayList<>();
        List<String> data =
                response.body()
                        .lines()
                        .filter(line -> !line.isEmpty())
                        .map(line -> line.substring("data: ".length()))
                        .toList();
        assertEquals("[DONE]", data.get(data.size() - 1));
        for (String item : data.subList(0, data.size() - 1)) {
            out.add(JsonParser.parseString(item).getAsJsonObject());
        }
        return out;
    }

    /** The first choice of an answer. */
    static JsonObject firstChoice(JsonObject answer) {
        return answer.getAsJsonArray("choices").get(0).getAsJsonObject();
    }
}
