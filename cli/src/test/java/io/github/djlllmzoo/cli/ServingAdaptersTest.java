package io.github.djlllmzoo.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.LoraConfig;
import io.github.djlllmzoo.blocks.LoraWeights;
import io.github.djlllmzoo.server.OpenAiServer;
import io.github.djlllmzoo.server.ServerOptions;
import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.PeftAdapter;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code serve --adapter NAME=DIR}: several LoRA adapters of one base model in one server. */
class ServingAdaptersTest {

    private static final String PROMPT = "the cat";

    @TempDir Path temp;

    @Test
    void twoAdaptersAndTheBaseAnswerAsTheirSingleModelCommandLinesDo() throws Exception {
        Path base = temp.resolve("base");
        CliRunner train = CliRunner.run("finetune", "--model", TinyWordModel.write(temp.resolve("model")).toString(),
                "--from-scratch", "--data", TinyWordModel.text(temp.resolve("train.txt"), 200).toString(),
                "--batch", "2", "--seq-len", "8", "--steps", "2", "--out", base.toString());
        assertEquals(0, train.exitCode, train.err);
        Map<String, Path> adapters = new LinkedHashMap<>();
        adapters.put("storyteller", randomAdapter(base, temp.resolve("a"), 1, List.of("c_attn", "c_fc")));
        adapters.put("poet", randomAdapter(base, temp.resolve("b"), 2, List.of("c_attn", "attn.c_proj")));

        Map<String, String> cli = new LinkedHashMap<>();
        cli.put("base", generate("--model", base.toString()));
        for (Map.Entry<String, Path> e : adapters.entrySet()) {
            cli.put(e.getKey(), generate("--model", base.toString(), "--adapter", e.getValue().toString()));
        }
        assertEquals(3, Set.copyOf(cli.values()).size(), "the three answer differently: " + cli);

        HttpClient client = HttpClient.newHttpClient();
        try (LocalModel model = LocalModel.load(base)) {
            try (OpenAiServer server = OpenAiServer.start(
                    model,
                    adapters,
                    ServerOptions.DEFAULTS.withAddress("127.0.0.1", 0).withModelId("base")
                            .withScheduling(32, 8, Duration.ofMillis(300)))) {
                answersAsTheCommandLine(client, server, cli);
            }
            // attaching under a name still taken would throw: closing the server detached them
            model.attachAdapter(adapters.get("poet"), "poet");
        }
    }

    private static void answersAsTheCommandLine(HttpClient client, OpenAiServer server, Map<String, String> cli)
            throws Exception {
        JsonArray listed = JsonParser.parseString(get(client, server.uri().resolve("/v1/models")).body())
                .getAsJsonObject().getAsJsonArray("data");
        assertEquals(List.of("base", "storyteller", "poet"),
                listed.asList().stream().map(m -> m.getAsJsonObject().get("id").getAsString()).toList());
        for (Map.Entry<String, String> e : cli.entrySet()) {
            HttpResponse<String> answer = complete(client, server.uri(), e.getKey());
            assertEquals(200, answer.statusCode(), answer.body());
            assertEquals(e.getKey(), JsonParser.parseString(answer.body()).getAsJsonObject().get("model").getAsString());
            assertEquals(e.getValue(), text(answer), e.getKey());
        }
        // at once: requests of different adapters share the batch, each row answering with its own adapter
        Map<String, List<CompletableFuture<HttpResponse<String>>>> concurrent = new LinkedHashMap<>();
        for (int round = 0; round < 2; round++) {
            for (String name : cli.keySet()) {
                concurrent.computeIfAbsent(name, k -> new ArrayList<>())
                        .add(client.sendAsync(completion(server.uri(), name), HttpResponse.BodyHandlers.ofString()));
            }
        }
        for (Map.Entry<String, List<CompletableFuture<HttpResponse<String>>>> e : concurrent.entrySet()) {
            for (CompletableFuture<HttpResponse<String>> answer : e.getValue()) {
                assertEquals(cli.get(e.getKey()), text(answer.get()), e.getKey() + ", sent with the others");
            }
        }
        HttpResponse<String> unknown = complete(client, server.uri(), "novelist");
        assertEquals(404, unknown.statusCode(), unknown.body());
        assertTrue(unknown.body().contains("model_not_found"), unknown.body());
        assertEquals(200, get(client, server.uri().resolve("/v1/models/poet")).statusCode());
        assertEquals(404, get(client, server.uri().resolve("/v1/models/novelist")).statusCode());
    }

    /** A fresh adapter whose B is random too, so that it changes the model's answers. */
    private static Path randomAdapter(Path base, Path dir, int seed, List<String> targets) throws Exception {
        Engine.getEngine("PyTorch").setRandomSeed(seed);
        try (LocalModel model = LocalModel.load(base)) {
            LoraAdapter adapter = LoraAdapter.declare(model.block(), new LoraConfig(4, 8, 0, targets), false)
                    .initialize(model.model().getNDManager(), DataType.FLOAT32);
            for (LoraWeights pair : adapter.modules().values()) {
                pair.b().getArray().addi(model.model().getNDManager().randomNormal(0, 2f, pair.bShape(), DataType.FLOAT32));
            }
            Files.createDirectories(dir);
            PeftAdapter.write(adapter, dir, base.toString());
        }
        return dir;
    }

    private static String generate(String... model) {
        String[] options = {"--prompt", PROMPT, "--max-new-tokens", "6", "--greedy", "--output", "json"};
        String[] args = new String[1 + model.length + options.length];
        args[0] = "generate";
        System.arraycopy(model, 0, args, 1, model.length);
        System.arraycopy(options, 0, args, 1 + model.length, options.length);
        CliRunner run = CliRunner.run(args);
        assertEquals(0, run.exitCode, run.err);
        return JsonParser.parseString(run.out).getAsJsonObject().get("text").getAsString();
    }

    private static String text(HttpResponse<String> answer) {
        assertEquals(200, answer.statusCode(), answer.body());
        return JsonParser.parseString(answer.body()).getAsJsonObject().getAsJsonArray("choices").get(0)
                .getAsJsonObject().get("text").getAsString();
    }

    private static HttpRequest completion(URI uri, String model) {
        String body = "{\"model\": \"" + model + "\", \"prompt\": \"" + PROMPT + "\", \"max_tokens\": 6, \"temperature\": 0}";
        return HttpRequest.newBuilder(uri.resolve("/v1/completions"))
                .timeout(Duration.ofSeconds(60))
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(body))
                .build();
    }

    private static HttpResponse<String> complete(HttpClient client, URI uri, String model) throws Exception {
        return client.send(completion(uri, model), HttpResponse.BodyHandlers.ofString());
    }

    private static HttpResponse<String> get(HttpClient client, URI uri) throws Exception {
        return client.send(HttpRequest.newBuilder(uri).timeout(Duration.ofSeconds(30)).build(),
                HttpResponse.BodyHandlers.ofString());
    }
}
