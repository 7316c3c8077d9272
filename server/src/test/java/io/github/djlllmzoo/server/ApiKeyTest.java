package io.github.djlllmzoo.server;

import static io.github.djlllmzoo.server.TestHttp.CLIENT;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.zoo.LocalModel;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** A server started with API keys: every {@code /v1} route asks for one, {@code /health} does not. */
class ApiKeyTest {

    private static final String COMPLETION = "{\"prompt\": \"Hi\", \"max_tokens\": 2}";

    @TempDir static Path dir;

    private static LocalModel model;
    private static OpenAiServer server;

    @BeforeAll
    static void start() throws Exception {
        model = TinyModels.randomGpt2(dir, 64);
        server =
                OpenAiServer.start(
                        model,
                        ServerOptions.DEFAULTS
                                .withAddress("127.0.0.1", 0)
                                .withApiKeys(List.of("sk-first", "second-key-longer")));
    }

    @AfterAll
    static void stop() {
        if (server != null) {
            server.close();
        }
        if (model != null) {
            model.close();
        }
    }

    private static HttpResponse<String> send(String method, String path, String authorization)
            throws Exception {
        HttpRequest.Builder request =
                HttpRequest.newBuilder(server.uri().resolve(path)).timeout(Duration.ofSeconds(60));
        if (authorization != null) {
            request.header("Authorization", authorization);
        }
        if (method.equals("POST")) {
            request.header("Content-Type", "application/json")
                    .POST(HttpRequest.BodyPublishers.ofString(COMPLETION));
        }
        return CLIENT.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static void assertUnauthorized(HttpResponse<String> response) {
        assertEquals(401, response.statusCode(), response.body());
        assertEquals("Bearer", response.headers().firstValue("WWW-Authenticate").orElse(null));
        JsonObject error =
                JsonParser.parseString(response.body()).getAsJsonObject().getAsJsonObject("error");
        assertEquals("invalid_request_error", error.get("type").getAsString());
        assertEquals("invalid_api_key", error.get("code").getAsString());
    }

    @Test
    void everyV1RouteRefusesARequestWithoutAKeyOrWithAWrongOne() throws Exception {
        for (String wrong : new String[] {null, "sk-first", "Basic c2stZmlyc3Q=", "Bearer sk-firs", "Bearer sk-first2", "Bearer "}) {
            assertUnauthorized(send("POST", "/v1/completions", wrong));
            assertUnauthorized(send("POST", "/v1/chat/completions", wrong));
            assertUnauthorized(send("GET", "/v1/models", wrong));
            assertUnauthorized(send("GET", "/v1/models/" + server.modelId(), wrong));
        }
    }

    @Test
    void eachKeyIsAcceptedWithTheBearerSchemeInAnyCase() throws Exception {
        assertEquals(200, send("POST", "/v1/completions", "Bearer sk-first").statusCode());
        assertEquals(200, send("POST", "/v1/completions", "bearer second-key-longer").statusCode());
        assertEquals(200, send("GET", "/v1/models", "Bearer second-key-longer").statusCode());
    }

    @Test
    void healthAndMetricsStayOpen() throws Exception {
        assertEquals(200, send("GET", "/health", null).statusCode());
        HttpResponse<String> metrics = send("GET", "/metrics", null);
        assertEquals(200, metrics.statusCode());
        long refused = Long.parseLong(metrics.body().lines().filter(l -> l.startsWith("llmzoo_unauthorized_requests_total ")).findFirst().orElseThrow().split(" ")[1]);
        assertUnauthorized(send("GET", "/v1/models", null));
        assertTrue(send("GET", "/metrics", null).body().contains("llmzoo_unauthorized_requests_total " + (refused + 1) + "\n"));
    }

    @Test
    void optionsNeverShowTheKeysAndRefuseOnesNoHeaderCanCarry() {
        String shown = server.toString() + ServerOptions.DEFAULTS.withApiKeys(List.of("sk-first")).toString();
        assertFalse(shown.contains("sk-first"), shown);
        for (String bad : new String[] {"", " sk", "two words", "caf\u00e9"}) {
            assertThrows(
                    IllegalArgumentException.class,
                    () -> ServerOptions.DEFAULTS.withApiKeys(List.of(bad)));
        }
    }
}
