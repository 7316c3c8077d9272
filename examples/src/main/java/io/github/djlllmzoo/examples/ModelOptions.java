package io.github.djlllmzoo.examples;

import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;

/** The options every command that loads a checkpoint shares. */
final class ModelOptions {

    @Option(names = "--model", required = true, paramLabel = "DIR", description = "Checkpoint directory in Hugging Face layout.")
    Path model;

    @Mixin ComputeOptions compute;

    LocalModel load() throws Exception {
        return LocalModel.load(model, compute.device(), compute.dataType());
    }
}
