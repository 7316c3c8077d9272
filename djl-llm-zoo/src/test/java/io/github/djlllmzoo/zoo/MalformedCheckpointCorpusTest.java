package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.DecoderModels;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * A corpus of malformed checkpoints, each built from a golden checkpoint (GPT-2 or Llama) by one
 * mutation: loading it through {@link LocalModel#load(Path)} must fail with an {@link
 * InvalidCheckpointException} whose message names the culprit file and field or tensor.
 */
class MalformedCheckpointCorpusTest {

    private static final Path GOLDEN = Paths.get(System.getProperty("llmzoo.testdata"), "golden");

    /** The golden checkpoints the cases start from, with a tensor name as each stores it. */
    private enum Family {
        GPT2("gpt2-tiny", "h.1.mlp.c_fc.weight"),
        LLAMA("llama-gqa", "model.layers.1.mlp.up_proj.weight");

        final String golden;
        final String someTensor;

        Family(String golden, String someTensor) {
            this.golden = golden;
            this.someTensor = someTensor;
        }

        String field(String gpt2, String llama) {
            return this == GPT2 ? gpt2 : llama;
        }
    }

    /** A mutation of a checkpoint directory. */
    private interface Mutation {
        void apply(Path dir) throws Exception;
    }

    /**
     * One malformed checkpoint: how to break a golden copy, and what the error must name.
     *
     * @param name what is wrong
     * @param family the golden checkpoint it starts from
     * @param mutation how it is broken
     * @param culpritFile the file name the message must contain ({@code ""} for the directory)
     * @param culprit the field, tensor or value the message must contain
     */
    private record Case(String name, Family family, Mutation mutation, String culpritFile, String culprit) {
        @Override
        public String toString() {
            return family + ": " + name;
        }
    }

    static Stream<Arguments> corpus() {
        Stream.Builder<Case> cases = Stream.builder();
        for (Family f : Family.values()) {
            cases.add(new Case("config.json missing", f, d -> Files.delete(d.resolve("config.json")), "config.json", "not found"));
            cases.add(new Case("config.json not JSON", f, d -> Files.writeString(d.resolve("config.json"), "{\"model_type\": \"gpt2\", n_embd"), "config.json", "not valid JSON"));
            cases.add(new Case("config.json an array", f, d -> Files.writeString(d.resolve("config.json"), "[1, 2]"), "config.json", "JSON object"));
            String hidden = f.field("n_embd", "hidden_size");
            cases.add(new Case("required field missing", f, config(c -> c.remove(hidden)), "config.json", "'" + hidden + "'"));
            String layers = f.field("n_layer", "num_hidden_layers");
            cases.add(new Case("field of the wrong type", f, config(c -> c.addProperty(layers, "two")), "config.json", "'" + layers + "'"));
            cases.add(new Case("model_type missing", f, config(c -> c.remove("model_type")), "config.json", "'model_type'"));
            cases.add(new Case("unknown model_type", f, config(c -> c.addProperty("model_type", "gpt_neox")), "config.json", "gpt_neox"));
            String heads = f.field("n_head", "num_attention_heads");
            cases.add(new Case("zero heads", f, config(c -> c.addProperty(heads, 0)), "config.json", "'" + heads + "'"));
            cases.add(new Case("hidden size not divisible by heads", f, config(c -> {
                c.addProperty(heads, 3);
                if (f == Family.LLAMA) {
                    c.addProperty("num_key_value_heads", 1);
                }
            }), "config.json", "'" + hidden + "'"));
            cases.add(new Case("negative vocabulary", f, config(c -> c.addProperty("vocab_size", -5)), "config.json", "'vocab_size'"));
            cases.add(new Case("tensor missing", f, weights(w -> w.remove(f.someTensor)), "", f.someTensor));
            cases.add(new Case("tensor of the wrong shape", f, weights(w -> w.put(f.someTensor, w.get(f.someTensor).get(":, 1:"))), "model.safetensors", f.someTensor));
            cases.add(new Case("vocabulary larger than the config says", f, config(c -> c.addProperty("vocab_size", 1024)), "model.safetensors", f.field("wte.weight", "model.embed_tokens.weight")));
            cases.add(new Case("weights truncated", f, d -> truncate(d.resolve("model.safetensors"), 4), "model.safetensors", "8"));
            cases.add(new Case("no weights at all", f, d -> Files.delete(d.resolve("model.safetensors")), "", "model.safetensors"));
            cases.add(new Case("sharded index naming a missing shard", f, MalformedCheckpointCorpusTest::shardWithMissingSecondShard, "model.safetensors.index.json", "model-00002-of-00002.safetensors"));
            cases.add(new Case("tokenizer vocabulary larger than the model's", f, d -> wordLevelTokenizer(d, 600), "tokenizer.json", "600"));
        }
        cases.add(new Case("kv heads not dividing heads", Family.LLAMA, config(c -> c.addProperty("num_key_value_heads", 3)), "config.json", "'num_key_value_heads'"));
        cases.add(new Case("zero kv heads", Family.LLAMA, config(c -> c.addProperty("num_key_value_heads", 0)), "config.json", "'num_key_value_heads'"));
        return cases.build().map(c -> Arguments.of(c));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("corpus")
    void aMalformedCheckpointIsATypedErrorNamingFileAndCulprit(Case c, @TempDir Path tmp) throws Exception {
        Path dir = copyOf(c.family, tmp);
        c.mutation.apply(dir);
        InvalidCheckpointException e = assertThrows(InvalidCheckpointException.class, () -> LocalModel.load(dir).close(), c.name);
        String message = e.getMessage();
        Path expectedFile = c.culpritFile.isEmpty() ? dir : dir.resolve(c.culpritFile);
        assertEquals(expectedFile, e.getFile(), c + ": " + message);
        assertTrue(message.startsWith(expectedFile.toString()), c + ": the message should start with " + expectedFile + ": " + message);
        assertTrue(message.contains(c.culprit), c + ": the message should name " + c.culprit + ": " + message);
    }

    @Test
    void unexpectedTensorsAreLoadedPastAndNamedInTheWarning(@TempDir Path tmp) throws Exception {
        for (Family f : Family.values()) {
            Path dir = copyOf(f, tmp.resolve(f.name()));
            String extra = f.field("h.0.attn.extra_proj.weight", "model.layers.0.self_attn.extra_proj.weight");
            weights(w -> w.put(extra, w.get(f.someTensor).duplicate())).apply(dir);
            CausalLmBlock block = DecoderModels.create(Configs.read(dir));
            try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
                List<String> ignored = CheckpointWeights.load(block, dir, manager, DataType.FLOAT32);
                assertEquals(List.of(extra), ignored, f.name());
            }
            try (LocalModel model = LocalModel.load(dir)) {
                assertFalse(model.isClosed(), "an extra tensor does not stop loading");
            }
            Path clean = copyOf(f, tmp.resolve(f.name() + "-clean"));
            try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
                assertTrue(
                        CheckpointWeights.load(DecoderModels.create(Configs.read(clean)), clean, manager, DataType.FLOAT32).isEmpty(),
                        "a checkpoint that matches its config names no tensor");
            }
        }
    }

    private static Path copyOf(Family family, Path tmp) throws IOException {
        Path dir = tmp.resolve(family.golden);
        Files.createDirectories(dir);
        for (String name : new String[] {"config.json", "model.safetensors"}) {
            Files.copy(GOLDEN.resolve(family.golden).resolve(name), dir.resolve(name));
        }
        return dir;
    }

    private static Mutation config(Consumer<JsonObject> edit) {
        return dir -> {
            Path file = dir.resolve("config.json");
            JsonObject json = JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8)).getAsJsonObject();
            edit.accept(json);
            Files.writeString(file, json.toString(), StandardCharsets.UTF_8);
        };
    }

    /** Rewrites {@code model.safetensors} after editing its tensors (name → array, in file order). */
    private static Mutation weights(Consumer<Map<String, NDArray>> edit) {
        return dir -> {
            Path file = dir.resolve("model.safetensors");
            try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
                Map<String, NDArray> tensors = new LinkedHashMap<>();
                try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
                    for (String name : reader.tensors().keySet()) {
                        tensors.put(name, reader.load(name, manager));
                    }
                }
                edit.accept(tensors);
                SafeTensorsWriter.write(file, tensors, Map.of("format", "pt"));
            }
        };
    }

    private static void truncate(Path file, int bytes) throws IOException {
        byte[] all = Files.readAllBytes(file);
        Files.write(file, Arrays.copyOf(all, bytes));
    }

    /** Moves the weights to shard 1 of 2 and writes an index that puts one tensor in shard 2. */
    private static void shardWithMissingSecondShard(Path dir) throws IOException, InvalidCheckpointException {
        Path first = dir.resolve("model-00001-of-00002.safetensors");
        Files.move(dir.resolve("model.safetensors"), first);
        JsonObject map = new JsonObject();
        try (SafeTensorsReader reader = SafeTensorsReader.open(first)) {
            for (String name : reader.tensors().keySet()) {
                map.addProperty(name, first.getFileName().toString());
            }
        }
        map.addProperty("lm_head.weight", "model-00002-of-00002.safetensors");
        JsonObject index = new JsonObject();
        index.add("weight_map", map);
        Files.writeString(dir.resolve("model.safetensors.index.json"), index.toString(), StandardCharsets.UTF_8);
    }

    /** A word-level tokenizer.json with {@code size} tokens. */
    private static void wordLevelTokenizer(Path dir, int size) throws IOException {
        JsonObject vocab = new JsonObject();
        vocab.addProperty("[UNK]", 0);
        for (int i = 1; i < size; i++) {
            vocab.addProperty("w" + i, i);
        }
        JsonObject model = new JsonObject();
        model.addProperty("type", "WordLevel");
        model.add("vocab", vocab);
        model.addProperty("unk_token", "[UNK]");
        JsonObject preTokenizer = new JsonObject();
        preTokenizer.addProperty("type", "Whitespace");
        JsonObject json = new JsonObject();
        json.addProperty("version", "1.0");
        json.add("model", model);
        json.add("pre_tokenizer", preTokenizer);
        Files.writeString(dir.resolve("tokenizer.json"), json.toString(), StandardCharsets.UTF_8);
    }
}
