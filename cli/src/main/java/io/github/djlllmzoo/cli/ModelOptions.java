package io.github.djlllmzoo.cli;

import ai.djl.repository.zoo.ModelNotFoundException;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.ModelReference;
import io.github.djlllmzoo.zoo.gguf.GgufCheckpoint;
import io.github.djlllmzoo.zoo.gguf.GgufFile;
import io.github.djlllmzoo.zoo.hub.HubClient;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** The options every command that loads a model shares. */
final class ModelOptions {

    @Option(
            names = "--model",
            paramLabel = "M",
            description = "A registry name (see 'llmzoo models'), a Hugging Face id (org/name), a checkpoint directory, "
                    + "a llama.cpp GGUF file (FILE.gguf) or a hub GGUF by its quantization tag (org/name:Q4_K_M) "
                    + "(default: the project's story model in models/default).")
    String model;

    @Option(
            names = "--gguf-file",
            paramLabel = "FILE",
            description = "Load this GGUF file of the Hugging Face repository --model instead of its safetensors.")
    String ggufFile;

    @Option(
            names = "--adapter",
            paramLabel = "[NAME=]DIR",
            description = "A Hugging Face PEFT LoRA adapter of --model (adapter_config.json, adapter_model.safetensors) "
                    + "to compute with. serve takes several, NAME=DIR each (NAME defaults to DIR's name), and serves "
                    + "each as the model NAME beside the base, whose weights they share.")
    List<String> adapters = new ArrayList<>();

    @Mixin ComputeOptions compute;

    private Path directory;

    /**
     * The checkpoint directory of {@code --model}, downloading into the Hugging Face cache when it
     * names a hub model that is not cached yet; without {@code --model}, the {@link DefaultModel}.
     */
    Path directory() throws IOException, ModelNotFoundException {
        if (directory == null) {
            directory = model == null ? DefaultModel.directory() : resolve(model, ggufFile);
        }
        return directory;
    }

    /**
     * Resolves a {@code --model} value to a checkpoint directory or GGUF file.
     *
     * @throws ModelNotFoundException if it names a file other than a GGUF file, or nothing
     */
    static Path resolve(String reference) throws IOException, ModelNotFoundException {
        return resolve(reference, null);
    }

    /**
     * Resolves a {@code --model} value (with its {@code --gguf-file}, or {@code null}) to a
     * checkpoint directory or GGUF file.
     *
     * @throws ModelNotFoundException if it names a file other than a GGUF file, or nothing
     */
    static Path resolve(String reference, String ggufFile) throws IOException, ModelNotFoundException {
        Path path = Path.of(reference);
        if (Files.isRegularFile(path) && !GgufFile.isGguf(path)) {
            Path parent = path.toAbsolutePath().getParent();
            String hint =
                    parent != null && Files.isRegularFile(parent.resolve(CheckpointFiles.CONFIG))
                            ? "; pass its directory " + parent
                            : "; pass the checkpoint directory (config.json, model.safetensors, tokenizer files)"
                                    + " or a .gguf file";
            throw new ModelNotFoundException("--model " + reference + " is a file, not a model directory" + hint);
        }
        return ModelReference.resolve(reference, null, ggufFile, HubClient.fromEnvironment());
    }

    /**
     * The name a server gives the model, as vLLM does: the {@code --model} value when it is a
     * registry name or Hugging Face id (a hub snapshot's directory is named after its commit), a
     * GGUF file's name without {@code .gguf}, else {@code null}, for the checkpoint directory's name.
     */
    String servedName() {
        if (model != null && GgufFile.isGguf(Path.of(model))) {
            String name = Path.of(model).getFileName().toString();
            return name.substring(0, name.length() - ".gguf".length());
        }
        if (model == null || model.startsWith("file:") || Files.exists(Path.of(model))) {
            return null;
        }
        return model;
    }

    /** Loads {@code --model}, computing with its one {@code --adapter} if given. */
    LocalModel load() throws Exception {
        Map<String, Path> named = namedAdapters();
        if (named.size() > 1) {
            throw new IllegalArgumentException("--adapter: this command computes with one adapter, not " + named.size());
        }
        LocalModel model = loadBase();
        try {
            for (Path dir : named.values()) {
                model.attachAdapter(dir, LoraAdapter.DEFAULT);
            }
        } catch (Exception e) {
            model.close();
            throw e;
        }
        return model;
    }

    /** Loads {@code --model} alone. */
    LocalModel loadBase() throws Exception {
        Path source = directory();
        compute.kvCacheDtype(); // a bad value refused before the model loads
        WeightFormat weights = compute.weightFormat();
        if (GgufFile.isGguf(source) && !compute.dtypeGiven() && !compute.device().isGpu()) {
            try (GgufFile gguf = GgufFile.open(source)) {
                weights = GgufCheckpoint.nativeFormat(gguf);
            }
        }
        LocalModel model =
                LocalModel.load(source, compute.device(), compute.dataType(), weights, compute.float16Overflow());
        compute.applyKvCacheDtype(model.block());
        return model;
    }

    /**
     * The {@code --adapter} values by name, in order.
     *
     * @throws IllegalArgumentException for an empty name or directory, or a name given twice
     */
    Map<String, Path> namedAdapters() {
        Map<String, Path> out = new LinkedHashMap<>();
        for (String value : adapters) {
            int eq = value.indexOf('=');
            Path dir = Path.of(eq < 0 ? value : value.substring(eq + 1));
            Path fileName = dir.toAbsolutePath().normalize().getFileName();
            String name = eq < 0 ? (fileName == null ? "" : fileName.toString()) : value.substring(0, eq);
            if (name.isEmpty() || dir.toString().isEmpty()) {
                throw new IllegalArgumentException("--adapter " + value + ": expected NAME=DIR or DIR");
            }
            if (out.put(name, dir) != null) {
                throw new IllegalArgumentException("--adapter: two adapters are named '" + name + "'");
            }
        }
        return out;
    }
}
