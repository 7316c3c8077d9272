package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.server.OpenAiServer;
import io.github.djlllmzoo.server.ServerOptions;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.IOException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * What the README and its pages {@code docs/cli.md} and {@code docs/serving.md} state about the
 * default model and the server agrees with the code: checked against a server on the default
 * model, as {@code serve} without {@code --model} runs it.
 */
class ReadmeServingTest {

    private static String readme;
    private static LocalModel model;
    private static OpenAiServer server;
    private static final HttpClient CLIENT = HttpClient.newHttpClient();

    @BeforeAll
    static void start() throws Exception {
        Path home = Path.of(System.getProperty(DefaultModel.HOME_PROPERTY));
        readme = Files.readString(home.resolve("README.md"))
                + Files.readString(home.resolve("docs").resolve("cli.md"))
                + Files.readString(home.resolve("docs").resolve("serving.md"));
        model = LocalModel.load(DefaultModel.directory());
        server = OpenAiServer.start(model, ServerOptions.DEFAULTS.withAddress("127.0.0.1", 0));
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

    private static String readmeMatch(String regex) {
        Matcher m = Pattern.compile(regex).matcher(readme);
        assertTrue(m.find(), "the README has no match for " + regex);
        return m.group(1);
    }

    private static HttpResponse<String> send(HttpRequest.Builder request) throws Exception {
        return CLIENT.send(request.timeout(Duration.ofSeconds(60)).build(), HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void thePythonExamplesModelIsTheOneServeServesByDefault() throws Exception {
        String requested = readmeMatch("client\\.completions\\.create\\(model=\"([^\"]+)\"");
        String body = "{\"model\": \"" + requested + "\", \"prompt\": \"Once upon a time\", \"max_tokens\": 2}";
        HttpResponse<String> response =
                send(HttpRequest.newBuilder(server.uri().resolve("/v1/completions"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body)));
        assertEquals(200, response.statusCode(), response.body());
    }

    @Test
    void theHealthFieldsTheReadmeListsAreExactlyThoseHealthAnswers() throws Exception {
        String intro = "`/health` answers the fields";
        int start = readme.indexOf(intro);
        assertTrue(start >= 0, "the README lists /health's fields after: " + intro);
        int end = readme.indexOf(". ", start);
        Set<String> listed = new TreeSet<>();
        Matcher field = Pattern.compile("`([a-z_]+)`").matcher(readme.substring(start + intro.length(), end));
        while (field.find()) {
            listed.add(field.group(1));
        }
        HttpResponse<String> response = send(HttpRequest.newBuilder(server.uri().resolve("/health")).GET());
        assertEquals(200, response.statusCode(), response.body());
        JsonObject health = JsonParser.parseString(response.body()).getAsJsonObject();
        assertEquals(new TreeSet<>(health.keySet()), listed);
    }

    @Test
    void theDefaultModelsMaxNewTokensIsTheOneTheReadmeStates() throws IOException {
        String stated = readmeMatch("the default model's file sets `max_new_tokens` (\\d+)");
        JsonObject config =
                JsonParser.parseString(Files.readString(DefaultModel.directory().resolve("generation_config.json")))
                        .getAsJsonObject();
        assertEquals(config.get("max_new_tokens").getAsInt(), Integer.parseInt(stated));
    }
}
