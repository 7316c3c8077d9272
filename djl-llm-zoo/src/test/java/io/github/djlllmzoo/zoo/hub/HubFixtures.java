package io.github.djlllmzoo.zoo.hub;

import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.stream.Stream;

/** Fixture models for the fake hub and clients pointed at it. */
final class HubFixtures {

    static final List<String> NEEDED =
            List.of(
                    "config.json",
                    "generation_config.json",
                    "tokenizer.json",
                    "tokenizer_config.json",
                    "special_tokens_map.json",
                    "vocab.json",
                    "merges.txt",
                    "model.safetensors");

    private HubFixtures() {}

    /** A GPT-2-like repository: the files a causal LM needs plus files it must not fetch. */
    static FakeHub.Repo tinyGpt2(FakeHub hub, String repoId, int weightBytes) {
        return hub.repo(repoId)
                .file("config.json", "{\"model_type\":\"gpt2\",\"n_layer\":2,\"n_embd\":8}")
                .file("generation_config.json", "{\"bos_token_id\":0,\"eos_token_id\":0}")
                .file("tokenizer.json", "{\"version\":\"1.0\",\"model\":{\"type\":\"BPE\"}}")
                .file("tokenizer_config.json", "{\"model_max_length\":64}")
                .file("special_tokens_map.json", "{\"eos_token\":\"<|endoftext|>\"}")
                .file("vocab.json", "{\"a\":0,\"b\":1}")
                .file("merges.txt", "#version: 0.2\na b\n")
                .file("model.safetensors", hub.randomBytes(weightBytes))
                .file("pytorch_model.bin", hub.randomBytes(4096))
                .file("README.md", "# tiny\n")
                .file(".gitattributes", "*.safetensors filter=lfs\n");
    }

    /** A repository whose weights are two shards listed by a safetensors index. */
    static FakeHub.Repo shardedLlama(FakeHub hub, String repoId) {
        String index =
                "{\"metadata\":{\"total_size\":300000},\"weight_map\":{"
                        + "\"model.embed_tokens.weight\":\"model-00001-of-00002.safetensors\","
                        + "\"model.norm.weight\":\"model-00002-of-00002.safetensors\","
                        + "\"lm_head.weight\":\"model-00002-of-00002.safetensors\"}}";
        return hub.repo(repoId)
                .file("config.json", "{\"model_type\":\"llama\",\"num_hidden_layers\":1}")
                .file("tokenizer.json", "{\"version\":\"1.0\"}")
                .file("model.safetensors.index.json", index)
                .file("model-00001-of-00002.safetensors", hub.randomBytes(150_000))
                .file("model-00002-of-00002.safetensors", hub.randomBytes(150_000))
                .file("README.md", "# sharded\n");
    }

    static HubConfig.Builder config(FakeHub hub, Path cache) {
        return HubConfig.builder()
                .endpoint(hub.endpoint())
                .cacheDir(cache)
                .progressBars(false)
                .downloadTimeout(Duration.ofSeconds(5))
                .metadataTimeout(Duration.ofSeconds(5));
    }

    static HubClient client(FakeHub hub, Path cache) {
        return new HubClient(config(hub, cache).build(), (PrintStream) null);
    }

    /** @return every path under {@code dir} whose name ends with {@code suffix} */
    static List<Path> find(Path dir, String suffix) throws IOException {
        if (!Files.exists(dir)) {
            return List.of();
        }
        try (Stream<Path> s = Files.walk(dir)) {
            return s.filter(p -> p.getFileName().toString().endsWith(suffix)).toList();
        }
    }
}
