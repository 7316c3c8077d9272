package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code llmzoo serve}'s command line (the server itself: {@code OpenAiServerTest}). */
class ServeCommandTest {

    private static String[] run(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = LlmZoo.execute(args, new PrintWriter(out), new PrintWriter(err));
        return new String[] {String.valueOf(code), out.toString(), err.toString()};
    }

    @Test
    void invalidSchedulingOptionsAreUsageErrorsNamingTheOption(@TempDir Path dir) {
        String[] port = run("serve", "--model", dir.toString(), "--port", "70000");
        assertEquals("2", port[0]);
        assertTrue(port[2].contains("port must be in [0, 65535]"), port[2]);
        String batch = run("serve", "--model", dir.toString(), "--max-batch", "0")[2];
        assertTrue(batch.contains("maxBatch must be at least 1"), batch);
        String timeout = run("serve", "--model", dir.toString(), "--request-timeout-seconds", "0")[2];
        assertTrue(timeout.contains("requestTimeout must be > 0"), timeout);
        String drain = run("serve", "--model", dir.toString(), "--drain-seconds", "-1")[2];
        assertTrue(drain.contains("drainTimeout must be >= 0"), drain);
        String prefix = run("serve", "--model", dir.toString(), "--prefix-cache-tokens", "-5")[2];
        assertTrue(prefix.contains("prefixCacheTokens must be >= 0"), prefix);
        for (String step : new String[] {"0", "fast"}) {
            String[] refused = run("serve", "--model", dir.toString(), "--prefill-step", step);
            assertEquals("2", refused[0], refused[2]);
            assertTrue(refused[2].contains("--prefill-step must be 'decode' or a number of tokens >= 1, got '"
                    + step + "'"), refused[2]);
        }
    }

    @Test
    void workersIsRefusedWithAnErrorLineSayingWhy(@TempDir Path dir) {
        String[] run = run("serve", "--model", dir.toString(), "--workers", "2");
        assertEquals("2", run[0], run[2]);
        String first = run[2].lines().findFirst().orElse("");
        assertTrue(first.startsWith("error: --workers was removed: one decode loop serves every request"), run[2]);
        assertTrue(first.contains("run several servers behind a load balancer"), first);
        assertTrue(!run("serve", "--help")[1].contains("--workers"), "help still lists --workers");
    }

    @Test
    void aPortInUseIsOneErrorLineNamingHostAndPortAndExitCode1() throws IOException {
        try (ServerSocket taken = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            String port = String.valueOf(taken.getLocalPort());
            String[] run = run("serve", "--host", "127.0.0.1", "--port", port);
            assertEquals("1", run[0], run[2]);
            String error = run[2].strip();
            assertTrue(
                    error.startsWith("error: cannot listen on 127.0.0.1:" + port + ": "), error);
            assertTrue(error.contains("already in use"), error);
            assertEquals(1, error.lines().count(), error);
        }
    }

    /**
     * {@code serve --model org/name} from a Hugging Face cache (the default model's files as a hub
     * snapshot, offline), in its own JVM since {@code serve} runs until the process stops.
     */
    @Test
    void aHubModelIsServedUnderItsHubIdNotItsSnapshotsCommit(@TempDir Path cache) throws Exception {
        String repo = "someorg/story";
        String commit = "0123456789abcdef0123456789abcdef01234567";
        Path repoDir = cache.resolve("models--someorg--story");
        Path snapshot = Files.createDirectories(repoDir.resolve("snapshots").resolve(commit));
        try (Stream<Path> files = Files.list(DefaultModel.directory())) {
            for (Path file : files.filter(Files::isRegularFile).toList()) {
                Files.copy(file, snapshot.resolve(file.getFileName()));
            }
        }
        Files.createDirectories(repoDir.resolve("refs"));
        Files.writeString(repoDir.resolve("refs").resolve("main"), commit);
        ProcessBuilder builder = serveProcess("--model", repo, "--port", "0");
        builder.environment().put("HF_HUB_CACHE", cache.toString());
        builder.environment().put("HF_HUB_OFFLINE", "1");
        Process serve = builder.start();
        try {
            Matcher started = awaitStartLine(serve);
            assertEquals(repo, started.group(1));
            URI base = URI.create(started.group(2));
            HttpClient client = HttpClient.newHttpClient();
            JsonObject models = JsonParser.parseString(get(client, base.resolve("/v1/models"))).getAsJsonObject();
            assertEquals(repo, models.getAsJsonArray("data").get(0).getAsJsonObject().get("id").getAsString());
            JsonObject model = JsonParser.parseString(get(client, base.resolve("/v1/models/" + repo))).getAsJsonObject();
            assertEquals(repo, model.get("id").getAsString());
            HttpResponse<String> completion =
                    client.send(
                            HttpRequest.newBuilder(base.resolve("/v1/completions"))
                                    .timeout(Duration.ofSeconds(60))
                                    .header("Content-Type", "application/json")
                                    .POST(HttpRequest.BodyPublishers.ofString(
                                            "{\"model\": \"" + repo + "\", \"prompt\": \"Once upon a time\", \"max_tokens\": 2}"))
                                    .build(),
                            HttpResponse.BodyHandlers.ofString());
            assertEquals(200, completion.statusCode(), completion.body());
        } finally {
            serve.destroy();
            if (!serve.waitFor(30, TimeUnit.SECONDS)) {
                serve.destroyForcibly();
            }
        }
    }

    /**
     * SIGTERM on a running {@code serve}: the running stream is answered whole and the process
     * exits 0; the keys come from {@code LLMZOO_API_KEY}.
     */
    @Test
    void sigtermFinishesTheRunningStreamAndExits0(@TempDir Path logs) throws Exception {
        ProcessBuilder builder =
                serveProcess("--model", DefaultModel.directory().toString(), "--port", "0", "--drain-seconds", "60",
                        "--kv-cache-tokens", "3000");
        builder.environment().put("LLMZOO_API_KEY", "first-key, second-key");
        Process serve = builder.start();
        try {
            Matcher started = awaitStartLine(serve);
            assertTrue(started.group(0).matches(".*; KV pool 3000 positions, \\d+ MiB of float32 keys and values; 2 API key\\(s\\)\\)"),
                    started.group(0));
            URI base = URI.create(started.group(2));
            HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            HttpRequest.Builder models = HttpRequest.newBuilder(base.resolve("/v1/models")).timeout(Duration.ofSeconds(30));
            assertEquals(401, client.send(models.build(), HttpResponse.BodyHandlers.ofString()).statusCode());
            assertEquals(
                    200,
                    client.send(models.header("Authorization", "Bearer second-key").build(), HttpResponse.BodyHandlers.ofString())
                            .statusCode());
            HttpResponse<java.io.InputStream> stream =
                    client.send(
                            HttpRequest.newBuilder(base.resolve("/v1/completions"))
                                    .timeout(Duration.ofSeconds(60))
                                    .header("Content-Type", "application/json")
                                    .header("Authorization", "Bearer first-key")
                                    .POST(HttpRequest.BodyPublishers.ofString(
                                            "{\"prompt\": \"Once upon a time\", \"max_tokens\": 200, \"ignore_eos\": true,"
                                                    + " \"stream\": true, \"stream_options\": {\"include_usage\": true}}"))
                                    .build(),
                            HttpResponse.BodyHandlers.ofInputStream());
            assertEquals(200, stream.statusCode());
            assertEquals('d', stream.body().read(), "the stream started");
            assertTrue(serve.toHandle().destroy(), "SIGTERM sent"); // Process.destroy would close its pipes
            String rest = new String(stream.body().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(rest.endsWith("data: [DONE]\n\n"), rest);
            assertTrue(rest.contains("\"completion_tokens\":200"), rest);
            assertTrue(serve.waitFor(60, TimeUnit.SECONDS), "serve stopped");
            assertEquals(0, serve.exitValue());
            String err = new String(serve.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(err.contains("llmzoo serve: stopped\n"), err);
        } finally {
            serve.destroyForcibly();
        }
    }

    /** {@code llmzoo serve ARGS} in a JVM of its own, its stdout discarded. */
    private static ProcessBuilder serveProcess(String... args) {
        List<String> command =
                new ArrayList<>(
                        List.of(
                                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                                "-Xmx1g",
                                "-DOPT_OUT_TRACKING=true",
                                "-Doffline=true",
                                "-cp",
                                System.getProperty("java.class.path"),
                                LlmZoo.class.getName(),
                                "serve"));
        command.addAll(List.of(args));
        ProcessBuilder builder = new ProcessBuilder(command);
        builder.environment().put("OPT_OUT_TRACKING", "true");
        builder.redirectOutput(ProcessBuilder.Redirect.DISCARD);
        return builder;
    }

    /** Reads the server's stderr up to its start line: {@code llmzoo serve: model 'ID' on URI ...}. */
    private static Matcher awaitStartLine(Process serve) throws IOException {
        Pattern start = Pattern.compile("llmzoo serve: model '(.*)' on (\\S+) .*");
        BufferedReader err = new BufferedReader(new InputStreamReader(serve.getErrorStream(), StandardCharsets.UTF_8));
        StringBuilder seen = new StringBuilder();
        for (String line = err.readLine(); line != null; line = err.readLine()) {
            Matcher m = start.matcher(line);
            if (m.matches()) {
                return m;
            }
            seen.append(line).append('\n');
        }
        throw new AssertionError("serve ended before it listened:\n" + seen);
    }

    private static String get(HttpClient client, URI uri) throws Exception {
        HttpResponse<String> response =
                client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).build(), HttpResponse.BodyHandlers.ofString());
        assertEquals(200, response.statusCode(), uri + ": " + response.body());
        return response.body();
    }

    @Test
    void apiKeysComeFromTheOptionsElseFromTheEnvironmentsCommaSeparatedList() {
        assertEquals(List.of("a"), ServeCommand.apiKeys(List.of("a"), "b,c"));
        assertEquals(List.of("b", "c"), ServeCommand.apiKeys(List.of(), " b, ,c "));
        assertEquals(List.of(), ServeCommand.apiKeys(List.of(), null));
    }

    @Test
    void helpListsTheServerOptions() {
        String[] help = run("serve", "--help");
        assertEquals("0", help[0]);
        for (String option :
                new String[] {
                    "--model", "--host", "--port", "--max-concurrency", "--max-batch",
                    "--api-key", "--request-timeout-seconds", "--drain-seconds", "--prefix-cache-tokens"
                }) {
            assertTrue(help[1].contains(option), option);
        }
    }
}
