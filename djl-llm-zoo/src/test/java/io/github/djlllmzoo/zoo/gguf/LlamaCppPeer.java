package io.github.djlllmzoo.zoo.gguf;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import io.github.djlllmzoo.zoo.safetensors.TensorInfo;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A llama.cpp peer built as the kit {@code ../shared/peers/llamacpp} builds its own (its {@code
 * build.sh}, or {@code scripts/llamacpp-newer.sh} for another llama.cpp source) into the folder
 * {@code -Dllmzoo.llamacpp.home} or {@code $LLAMACPP_HOME} names (default {@code /tmp/llamacpp-peer},
 * the kit's), and its converter, for tests that compare with llama.cpp; they skip, saying why, where
 * it is not built or predates the architecture compared.
 */
final class LlamaCppPeer {

    /** The layer count llama.cpp's gemma2 knows as the 2B: one of the three the kit's c392e50 runs. */
    private static final int GEMMA2_2B_LAYERS = 26;

    final Path home;
    final Path bin;

    private LlamaCppPeer(Path home) {
        this.home = home;
        this.bin = home.resolve("src/build/bin");
    }

    /** The peer, or the test is skipped with the reason. */
    static LlamaCppPeer require() {
        String configured = System.getProperty("llmzoo.llamacpp.home", System.getenv("LLAMACPP_HOME"));
        Path home = Path.of(configured == null || configured.isBlank() ? "/tmp/llamacpp-peer" : configured);
        LlamaCppPeer peer = new LlamaCppPeer(home);
        Assumptions.assumeTrue(
                Files.isExecutable(peer.bin.resolve("llama-tokenize")) && Files.isExecutable(home.resolve("greedy_ids"))
                        && Files.isRegularFile(home.resolve("make_gguf.py")),
                "llama.cpp peer not built in " + home + ": run ../shared/peers/llamacpp/build.sh (skipping)");
        Assumptions.assumeTrue(fixtures() != null, "../shared/fixtures is absent (skipping)");
        return peer;
    }

    /**
     * The peer, or the test is skipped where it is not built or its llama.cpp does not know the
     * architecture (its {@code src/llama-arch.cpp} does not name it: the kit's c392e50 predates
     * {@code qwen3} and {@code gemma3}).
     */
    static LlamaCppPeer require(String architecture) throws IOException {
        LlamaCppPeer peer = require();
        Path names = peer.home.resolve("src/src/llama-arch.cpp");
        Assumptions.assumeTrue(Files.isRegularFile(names)
                        && Files.readString(names, StandardCharsets.UTF_8).contains('"' + architecture + '"'),
                "llama.cpp in " + peer.home + " (" + peer.commit() + ") predates the " + architecture
                        + " architecture: build a newer one with scripts/llamacpp-newer.sh SOURCE and set LLAMACPP_HOME"
                        + " to the folder it prints (skipping)");
        return peer;
    }

    /** The llama.cpp commit built: the {@code COMMIT} file scripts/llamacpp-newer.sh writes, else the kit's. */
    String commit() throws IOException {
        Path commit = home.resolve("COMMIT");
        return Files.isRegularFile(commit) ? Files.readString(commit, StandardCharsets.UTF_8).trim()
                : "the kit's c392e50";
    }

    static Path fixtures() {
        String dir = System.getProperty("llmzoo.fixtures");
        return dir != null && Files.isDirectory(Path.of(dir)) ? Path.of(dir) : null;
    }

    /**
     * A checkpoint directory with a golden case's weights, its vocabulary widened to a real
     * tokenizer's (the extra embedding and head rows random, of the golden rows' scale) and that
     * tokenizer's files.
     */
    static Path checkpoint(Path golden, Path tokenizer, int vocab, Path dir, NDManager manager) throws Exception {
        Files.createDirectories(dir);
        JsonObject config = JsonParser.parseString(Files.readString(golden.resolve("config.json"))).getAsJsonObject();
        config.addProperty("vocab_size", vocab);
        Files.writeString(dir.resolve("config.json"), config.toString(), StandardCharsets.UTF_8);
        for (String file : new String[] {"tokenizer.json", "tokenizer_config.json"}) {
            if (Files.isRegularFile(tokenizer.resolve(file))) {
                Files.copy(tokenizer.resolve(file), dir.resolve(file));
            }
        }
        Map<String, NDArray> tensors = new LinkedHashMap<>();
        Random random = new Random(31);
        try (SafeTensorsReader reader = SafeTensorsReader.open(golden.resolve("model.safetensors"))) {
            for (Map.Entry<String, TensorInfo> e : reader.tensors().entrySet()) {
                long[] shape = e.getValue().toShape().getShape();
                float[] values = reader.toFloatArray(e.getKey());
                boolean vocabRows = e.getKey().matches("(model\\.embed_tokens|wte|lm_head)\\.weight");
                if (vocabRows) {
                    double scale = 0;
                    for (float v : values) {
                        scale += v * v;
                    }
                    scale = Math.sqrt(scale / values.length);
                    float[] wider = new float[Math.toIntExact(vocab * shape[1])];
                    System.arraycopy(values, 0, wider, 0, values.length);
                    for (int i = values.length; i < wider.length; i++) {
                        wider[i] = (float) (random.nextGaussian() * scale);
                    }
                    values = wider;
                    shape = new long[] {vocab, shape[1]};
                }
                tensors.put(e.getKey(), manager.create(values, new Shape(shape)));
            }
        }
        SafeTensorsWriter.write(dir.resolve("model.safetensors"), tensors, Map.of("format", "pt"));
        return dir;
    }

    /**
     * The golden Gemma 3 case as llama.cpp's {@code gemma3} runs it. llama.cpp fixes what Hugging
     * Face's config sets ({@code src/llama-model.cpp}, {@code load_hparams}, at 1eeb523c): a global
     * layer after every five local ones ({@code set_swa_pattern(6)}), scores scaled by {@code
     * 1/sqrt(head_dim)} (by {@code 1/sqrt(hidden/heads)} for the 62-layer 27B), the local rotary
     * base 10000, and reads neither {@code attention.scale} nor {@code sliding_window_pattern}. So
     * {@code query_pre_attn_scalar} becomes {@code head_dim}, the pattern 6, and the layers six, one
     * global after five local: layer {@code i} repeats the golden layer {@code i mod n}.
     */
    static Path gemma3AsLlamaCppRunsIt(Path golden, Path dir, NDManager manager) throws Exception {
        int layers = 6;
        return rewritten(golden, dir, layers, config -> {
            if (config.get("rope_local_base_freq").getAsDouble() != 10_000.0) {
                throw new IllegalArgumentException(golden + ": llama.cpp's local rotary base is 10000, not "
                        + config.get("rope_local_base_freq"));
            }
            config.addProperty("query_pre_attn_scalar", config.get("head_dim").getAsInt());
            config.addProperty("sliding_window_pattern", layers);
            config.remove("layer_types");
        }, manager);
    }

    /**
     * The golden Gemma 2 case as llama.cpp's {@code gemma2} runs it. llama.cpp reads the sliding
     * window and both soft-capping values from the file, makes every even layer local ({@code
     * set_swa_pattern(2)}, as Hugging Face's {@code layer_idx % 2 == 0}), and fixes the score scale
     * by the layer count ({@code src/llama-model.cpp}, {@code load_hparams}, {@code
     * LLM_ARCH_GEMMA2}, at 1eeb523c: {@code 1/sqrt(hidden/heads)} for the 46-layer 27B, else {@code
     * 1/sqrt(head_dim)}; it reads no {@code attention.scale}); the kit's c392e50 aborts on any count
     * but 26, 42 and 46 ({@code src/llama.cpp}, {@code build_gemma2}: {@code GGML_ABORT} in the scale's
     * switch). So {@code query_pre_attn_scalar} becomes {@code head_dim} and the layers 26 (the 2B's
     * count), layer {@code i} repeating the golden layer {@code i mod n} (an even count, so each
     * keeps its local or global kind).
     */
    static Path gemma2AsLlamaCppRunsIt(Path golden, Path dir, NDManager manager) throws Exception {
        return rewritten(golden, dir, GEMMA2_2B_LAYERS,
                config -> config.addProperty("query_pre_attn_scalar", config.get("head_dim").getAsInt()), manager);
    }

    /**
     * The golden Mistral case with a sliding window that holds {@code positions}: llama.cpp's {@code
     * llama} architecture has no sliding window ({@code src/llama-model.cpp}, {@code load_hparams},
     * {@code LLM_ARCH_LLAMA} reads no {@code attention.sliding_window}, and {@code build_graph} builds
     * {@code llm_build_llama} on the plain causal mask), so it equals Mistral's only while every
     * position stays inside the window.
     */
    static Path mistralInsideItsWindow(Path golden, int positions, Path dir, NDManager manager) throws Exception {
        JsonObject config = JsonParser.parseString(Files.readString(golden.resolve("config.json"))).getAsJsonObject();
        return rewritten(golden, dir, config.get("num_hidden_layers").getAsInt(),
                c -> c.addProperty("sliding_window", positions), manager);
    }

    /**
     * A golden case's weights with its config edited and {@code layers} layers, layer {@code i} the
     * golden layer {@code i mod n}.
     */
    private static Path rewritten(Path golden, Path dir, int layers, java.util.function.Consumer<JsonObject> edit,
            NDManager manager) throws Exception {
        Files.createDirectories(dir);
        JsonObject config = JsonParser.parseString(Files.readString(golden.resolve("config.json"))).getAsJsonObject();
        int goldenLayers = config.get("num_hidden_layers").getAsInt();
        config.addProperty("num_hidden_layers", layers);
        edit.accept(config);
        Files.writeString(dir.resolve("config.json"), config.toString(), StandardCharsets.UTF_8);
        java.util.regex.Pattern layer = java.util.regex.Pattern.compile("model\\.layers\\.(\\d+)\\.(.+)");
        Map<String, NDArray> tensors = new LinkedHashMap<>();
        try (SafeTensorsReader reader = SafeTensorsReader.open(golden.resolve("model.safetensors"))) {
            for (Map.Entry<String, TensorInfo> e : reader.tensors().entrySet()) {
                NDArray values = manager.create(reader.toFloatArray(e.getKey()), e.getValue().toShape());
                java.util.regex.Matcher m = layer.matcher(e.getKey());
                if (!m.matches()) {
                    tensors.put(e.getKey(), values);
                    continue;
                }
                for (int l = Integer.parseInt(m.group(1)); l < layers; l += goldenLayers) {
                    tensors.put("model.layers." + l + "." + m.group(2), values);
                }
            }
        }
        SafeTensorsWriter.write(dir.resolve("model.safetensors"), tensors, Map.of("format", "pt"));
        for (String file : new String[] {"tokenizer.json", "tokenizer_config.json"}) {
            if (Files.isRegularFile(golden.resolve(file))) {
                Files.copy(golden.resolve(file), dir.resolve(file));
            }
        }
        return dir;
    }

    /**
     * A random Llama checkpoint whose rows are whole k-quant super-blocks (256 wide), weights
     * normal(0, 0.02) as a trained model's initialization, with Llama 2's tokenizer.
     */
    static Path randomLlama(Path dir, NDManager manager) throws Exception {
        Files.createDirectories(dir);
        int hidden = 256;
        int inter = 768;
        int layers = 2;
        int heads = 4;
        int kvHeads = 2;
        int vocab = 32000;
        JsonObject c = new JsonObject();
        c.addProperty("model_type", "llama");
        c.addProperty("hidden_size", hidden);
        c.addProperty("intermediate_size", inter);
        c.addProperty("num_hidden_layers", layers);
        c.addProperty("num_attention_heads", heads);
        c.addProperty("num_key_value_heads", kvHeads);
        c.addProperty("max_position_embeddings", 256);
        c.addProperty("vocab_size", vocab);
        c.addProperty("rms_norm_eps", 1e-5);
        c.addProperty("rope_theta", 10000.0);
        c.addProperty("tie_word_embeddings", false);
        c.addProperty("bos_token_id", 1);
        c.addProperty("eos_token_id", 2);
        Files.writeString(dir.resolve("config.json"), c.toString(), StandardCharsets.UTF_8);
        Path tokenizer = fixtures().resolve("llama2-tokenizer");
        Files.copy(tokenizer.resolve("tokenizer.json"), dir.resolve("tokenizer.json"));
        Files.copy(tokenizer.resolve("tokenizer_config.json"), dir.resolve("tokenizer_config.json"));
        int kv = hidden / heads * kvHeads;
        Map<String, long[]> shapes = new LinkedHashMap<>();
        shapes.put("model.embed_tokens.weight", new long[] {vocab, hidden});
        for (int l = 0; l < layers; l++) {
            String p = "model.layers." + l + ".";
            shapes.put(p + "input_layernorm.weight", new long[] {hidden});
            shapes.put(p + "self_attn.q_proj.weight", new long[] {hidden, hidden});
            shapes.put(p + "self_attn.k_proj.weight", new long[] {kv, hidden});
            shapes.put(p + "self_attn.v_proj.weight", new long[] {kv, hidden});
            shapes.put(p + "self_attn.o_proj.weight", new long[] {hidden, hidden});
            shapes.put(p + "post_attention_layernorm.weight", new long[] {hidden});
            shapes.put(p + "mlp.gate_proj.weight", new long[] {inter, hidden});
            shapes.put(p + "mlp.up_proj.weight", new long[] {inter, hidden});
            shapes.put(p + "mlp.down_proj.weight", new long[] {hidden, inter});
        }
        shapes.put("model.norm.weight", new long[] {hidden});
        shapes.put("lm_head.weight", new long[] {vocab, hidden});
        Random random = new Random(31);
        Map<String, NDArray> tensors = new LinkedHashMap<>();
        for (Map.Entry<String, long[]> e : shapes.entrySet()) {
            long[] shape = e.getValue();
            float[] values = new float[Math.toIntExact(new Shape(shape).size())];
            for (int i = 0; i < values.length; i++) {
                values[i] = shape.length == 1 ? 1f : (float) (random.nextGaussian() * 0.02);
            }
            tensors.put(e.getKey(), manager.create(values, new Shape(shape)));
        }
        SafeTensorsWriter.write(dir.resolve("model.safetensors"), tensors, Map.of("format", "pt"));
        return dir;
    }

    /**
     * A random Llama ({@link #randomLlama}) with its F32 GGUF file written by the peer's converter,
     * a prompt of {@link GgufLlamaCppParityTest#TEXT} and our float32 log-probabilities of it.
     */
    record RandomLlama(Path dir, Path f32, long[] prompt, float[] exact) {}

    /** The random Llama of the k-quant comparisons, written under {@code tmp}. */
    RandomLlama randomLlama(Path tmp) throws Exception {
        Path dir;
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            dir = randomLlama(tmp.resolve("model"), manager);
        }
        Path f32 = convert(dir, tmp.resolve("model-f32.gguf"));
        try (LocalModel model = LocalModel.load(dir)) {
            long[] prompt = model.tokenizer().encode(GgufLlamaCppParityTest.TEXT);
            return new RandomLlama(dir, f32, prompt, model.generator().scoreTokens(prompt));
        }
    }

    /**
     * llama-quantize: the file in another ggml file type (Q4_K_M, Q5_K_M, Q6_K, Q8_0, Q4_0, ...).
     *
     * @param options llama-quantize's options before the files ({@code --pure}: every tensor in the type)
     */
    Path quantize(Path f32, Path out, String type, String... options) throws Exception {
        List<String> command = new java.util.ArrayList<>(List.of(bin.resolve("llama-quantize").toString()));
        command.addAll(List.of(options));
        command.addAll(List.of(f32.toString(), out.toString(), type, "2"));
        run(command);
        return out;
    }

    /**
     * Every tensor of a GGUF file dequantized by llama.cpp's Python package ({@code gguf-py}'s
     * {@code quants.dequantize}), as raw little-endian float32 files named after the tensors.
     */
    Path dequantize(Path gguf, Path outDir) throws Exception {
        Files.createDirectories(outDir);
        String script = String.join("\n",
                "import sys, types, numpy as np",
                "sys.path.insert(0, sys.argv[1])",
                "stub = types.ModuleType('sentencepiece'); stub.SentencePieceProcessor = object",
                "sys.modules.setdefault('sentencepiece', stub)  # imported by gguf-py, unused here",
                "from gguf import GGUFReader",
                "from gguf.quants import dequantize",
                "r = GGUFReader(sys.argv[2])",
                "for t in r.tensors:",
                "    a = dequantize(t.data, t.tensor_type).astype('<f4')",
                "    a.tofile(sys.argv[3] + '/' + t.name + '.f32')");
        run(List.of("python3", "-c", script, home.resolve("src/gguf-py").toString(), gguf.toString(), outDir.toString()));
        return outDir;
    }

    /**
     * llama-gguf-split: the file split into parts of at most {@code maxTensors} tensors, named {@code
     * PREFIX-0000i-of-0000n.gguf} (the test is skipped where the peer's build lacks the tool: {@code
     * cmake --build build --target llama-gguf-split} in its source folder builds it).
     *
     * @return the parts, in order
     */
    List<Path> split(Path gguf, String prefix, int maxTensors) throws Exception {
        Path tool = bin.resolve("llama-gguf-split");
        Assumptions.assumeTrue(Files.isExecutable(tool), tool + " is not built (skipping)");
        run(List.of(tool.toString(), "--split", "--split-max-tensors", Integer.toString(maxTensors), gguf.toString(),
                prefix));
        Path parent = Path.of(prefix).getParent();
        String name = Path.of(prefix).getFileName().toString();
        try (java.util.stream.Stream<Path> files = Files.list(parent)) {
            return files.filter(f -> f.getFileName().toString().matches(java.util.regex.Pattern.quote(name)
                    + "-\\d{5}-of-\\d{5}\\.gguf")).sorted().toList();
        }
    }

    /**
     * llama.cpp's converter (the kit's make_gguf.py): an F32 GGUF of a checkpoint directory. Mistral
     * as {@code convert_hf_to_gguf.py} converts it ({@code MistralForCausalLM} registered to its
     * {@code LlamaModel}, which writes no sliding window): the kit's converter, which refuses the
     * model type {@code mistral}, is given the checkpoint with {@code model_type} {@code llama}.
     */
    Path convert(Path dir, Path out) throws Exception {
        JsonObject config = JsonParser.parseString(Files.readString(dir.resolve("config.json"))).getAsJsonObject();
        Path source = dir;
        if (config.get("model_type").getAsString().equals("mistral")) {
            source = Files.createTempDirectory(out.getParent(), "as-llama");
            config.addProperty("model_type", "llama");
            Files.writeString(source.resolve("config.json"), config.toString(), StandardCharsets.UTF_8);
            try (java.util.stream.Stream<Path> files = Files.list(dir)) {
                for (Path f : files.filter(f -> !f.getFileName().toString().equals("config.json")).toList()) {
                    Files.createSymbolicLink(source.resolve(f.getFileName()), f.toAbsolutePath());
                }
            }
        }
        run(List.of("python3", home.resolve("make_gguf.py").toString(), source.toString(), out.toString()));
        return out;
    }

    /**
     * The {@code tokenizer.*} metadata llama.cpp's converter writes for a checkpoint's tokenizer (the
     * kit's make_gguf.py: {@code set_vocab_llama} for a byte-fallback BPE {@code tokenizer.json},
     * {@code set_vocab_gpt2} for a byte-level one), alone in a GGUF file of no tensors: the
     * vocabulary of families that converter does not write ({@link GoldenGguf#write(Path, Path,
     * GgufType, Path, Map)}).
     */
    Path vocabulary(Path dir, Path out) throws Exception {
        String script = String.join("\n",
                "import json, sys",
                "from pathlib import Path",
                "sys.path.insert(0, sys.argv[1])",
                "import make_gguf as m",
                "d = Path(sys.argv[2])",
                "hp = json.loads((d / 'config.json').read_text())",
                "tj = json.loads((d / 'tokenizer.json').read_text(encoding='utf-8'))",
                "w = m.gguf.GGUFWriter(path=None, arch='llama')",
                "(m.set_vocab_llama if tj['model'].get('byte_fallback') else m.set_vocab_gpt2)(w, d, hp)",
                "w.write_header_to_file(path=sys.argv[3])",
                "w.write_kv_data_to_file()",
                "w.write_tensors_to_file(progress=False)",
                "w.close()");
        run(List.of("python3", "-c", script, home.toString(), dir.toString(), out.toString()));
        return out;
    }

    /** llama-tokenize's ids of a text (read from a file, as it is). */
    long[] tokenize(Path gguf, String text, Path scratch) throws Exception {
        Path prompt = Files.writeString(scratch.resolve("prompt.txt"), text, StandardCharsets.UTF_8);
        String out = run(List.of(bin.resolve("llama-tokenize").toString(), "-m", gguf.toString(), "-f",
                prompt.toString(), "--ids", "--log-disable"));
        String list = out.substring(out.lastIndexOf('[') + 1, out.lastIndexOf(']'));
        return parseIds(list.replace(" ", ""));
    }

    /** greedy_ids' continuation with an F32 KV cache, cut before its first step of a top-2 margin under {@code margin}. */
    long[] greedy(Path gguf, long[] prompt, int n, double margin) throws Exception {
        List<String> command = new ArrayList<>(List.of(home.resolve("greedy_ids").toString(), "-m", gguf.toString(),
                "--kv", "f32", "-n", Integer.toString(n), "--no-eog-stop", "--ids"));
        StringBuilder ids = new StringBuilder();
        for (long id : prompt) {
            ids.append(ids.length() == 0 ? "" : ",").append(id);
        }
        command.add(ids.toString());
        String out = run(command);
        long[] all = new long[0];
        int keep = Integer.MAX_VALUE;
        int step = 0;
        for (String line : out.split("\n")) {
            if (line.startsWith("greedy_ids:")) {
                all = parseIds(line.substring("greedy_ids:".length()).trim());
            } else if (line.startsWith("step")) {
                double m = Double.parseDouble(line.substring(line.indexOf("margin") + "margin".length()).trim());
                if (m < margin && keep == Integer.MAX_VALUE) {
                    keep = step;
                }
                step++;
            }
        }
        return java.util.Arrays.copyOf(all, Math.min(keep, all.length));
    }

    /**
     * llama.cpp's log-probability of each prompt token after the ones before it (as {@code
     * Generator.scoreTokens}), with an F32 KV cache: {@code score_ids} (this module's test resource
     * {@code llamacpp/score_ids.cpp}, a variant of the kit's {@code greedy_ids}), compiled against the
     * peer's libllama on first use.
     */
    float[] score(Path gguf, long[] prompt) throws Exception {
        StringBuilder ids = new StringBuilder();
        for (long id : prompt) {
            ids.append(ids.length() == 0 ? "" : ",").append(id);
        }
        String out = run(List.of(scoreTool().toString(), "-m", gguf.toString(), "--kv", "f32", "--ids", ids.toString()));
        String line = out.substring(out.lastIndexOf("logprobs:") + "logprobs:".length()).trim();
        String[] parts = line.split(",");
        float[] logprobs = new float[parts.length];
        for (int i = 0; i < parts.length; i++) {
            logprobs[i] = Float.parseFloat(parts[i]);
        }
        return logprobs;
    }

    private synchronized Path scoreTool() throws Exception {
        Path source = Path.of(LlamaCppPeer.class.getResource("/llamacpp/score_ids.cpp").toURI());
        // one build per peer and source: libllama's API and ABI change between llama.cpp commits
        String key = Integer.toHexString(java.util.Objects.hash(home.toAbsolutePath().toString(),
                Files.readString(source), Files.readString(source.resolveSibling("f32_attention.h"))));
        Path tool = Path.of("target", "llamacpp", key, "score_ids").toAbsolutePath();
        if (!Files.isExecutable(tool)) {
            Files.createDirectories(tool.getParent());
            run(List.of("g++", "-O2", "-std=c++17", "-o", tool.toString(), source.toString(), "-I" + source.getParent(),
                    "-I" + home.resolve("src/include"), "-I" + home.resolve("src/ggml/include"), "-L" + bin,
                    "-lllama", "-lggml", "-lggml-base", "-Wl,-rpath," + bin));
        }
        return tool;
    }

    /** The mean |a - b| over tokens: how far one model's log-probabilities are from another's. */
    static double meanDifference(float[] a, float[] b) {
        if (a.length != b.length) {
            throw new IllegalArgumentException(a.length + " vs " + b.length + " log-probabilities");
        }
        double sum = 0;
        for (int i = 0; i < a.length; i++) {
            sum += Math.abs(a[i] - b[i]);
        }
        return sum / a.length;
    }

    private static long[] parseIds(String list) {
        if (list.isBlank()) {
            return new long[0];
        }
        String[] parts = list.split(",");
        long[] ids = new long[parts.length];
        for (int i = 0; i < parts.length; i++) {
            ids[i] = Long.parseLong(parts[i].trim());
        }
        return ids;
    }

    private static String run(List<String> command) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(command).redirectErrorStream(true).start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(5, TimeUnit.MINUTES) || p.exitValue() != 0) {
            throw new IOException(command + " failed:\n" + new String(out, StandardCharsets.UTF_8));
        }
        return new String(out, StandardCharsets.UTF_8);
    }
}
