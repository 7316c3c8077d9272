package io.github.djlllmzoo.cli;

import ai.djl.repository.zoo.ModelNotFoundException;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.ModelReference;
import io.github.djlllmzoo.zoo.hub.HubClient;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** The options every command that loads a model shares. */
final class ModelOptions {

    @Option(
            names = "--model",
            paramLabel = "M",
            description = "A registry name (see 'llmzoo models'), a Hugging Face id (org/name) or a checkpoint directory "
                    + "(default: the project's story model in models/default).")
    String model;

    @Mixin ComputeOptions compute;

    private Path directory;

    /**
     * The checkpoint directory of {@code --model}, downloading into the Hugging Face cache when it
     * names a hub model that is not cached yet; without {@code --model}, the {@link DefaultModel}.
     */
    Path directory() throws IOException, ModelNotFoundException {
        if (directory == null) {
            directory = model == null ? DefaultModel.directory() : resolve(model);
        }
        return directory;
    }

    /**
     * Resolves a {@code --model} value to a checkpoint directory.
     *
     * @throws ModelNotFoundException if it names a file (a checkpoint is a directory) or nothing
     */
    static Path resolve(String reference) throws IOException, ModelNotFoundException {
        Path path = Path.of(reference);
        if (Files.isRegularFile(path)) {
            Path parent = path.toAbsolutePath().getParent();
            String hint =
                    parent != null && Files.isRegularFile(parent.resolve(CheckpointFiles.CONFIG))
                            ? "; pass its directory " + parent
                            : "; pass the checkpoint directory (config.json, model.safetensors, tokenizer files)";
            throw new ModelNotFoundException("--model " + reference + " is a file, not a model directory" + hint);
        }
        return ModelReference.resolve(reference, null, HubClient.fromEnvironment());
    }

    /**
     * The name a server gives the model, as vLLM does: the {@code --model} value when it is a
     * registry name or Hugging Face id (a hub snapshot's directory is named after its commit), else
     * {@code null}, for the checkpoint directory's name.
     */
    String servedName() {
        if (model == null || model.startsWith("file:") || Files.exists(Path.of(model))) {
            return null;
        }
        return model;
    }

    LocalModel load() throws Exception {
        return LocalModel.load(directory(), compute.device(), compute.dataType(), compute.weightFormat());
    }
}
