package io.github.djlllmzoo.cli;

import ai.djl.Device;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.training.TrainingCheckpoint;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code llmzoo merge-adapter}: fold a LoRA adapter into its base model's weights. */
@Command(
        name = "merge-adapter",
        mixinStandardHelpOptions = true,
        description = {
            "Write a full Hugging Face checkpoint whose weights are the base model's with a PEFT LoRA adapter "
                    + "folded in, W + (alpha/r) B A for each adapted projection, as PEFT's merge_and_unload does. "
                    + "It computes what --model with --adapter computes, without the adapter.",
            ""
        })
final class MergeAdapterCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Option(names = "--model", required = true, paramLabel = "M", description = "The base model: a registry name, a Hugging Face id or a directory.")
    String model;

    @Option(names = "--adapter", required = true, paramLabel = "DIR", description = "The PEFT LoRA adapter directory (adapter_config.json, adapter_model.safetensors).")
    Path adapter;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Checkpoint directory to write (must not exist); written whole or not at all.")
    Path out;

    @Override
    public Integer call() throws Exception {
        if (Files.exists(out)) {
            throw new ParameterException(spec.commandLine(), "--out " + out + " already exists; choose a new directory");
        }
        Path source = ModelOptions.resolve(model);
        try (LocalModel base = LocalModel.load(source, Device.cpu(), DataType.FLOAT32)) {
            LoraAdapter attached = base.attachAdapter(adapter, LoraAdapter.DEFAULT);
            attached.merge();
            TrainingCheckpoint.publishModel(out, base.block(), source);
            spec.commandLine().getOut().println(
                    "wrote " + out + ": " + model + " with " + adapter + " merged into "
                            + attached.modules().size() + " projections (r " + attached.config().rank()
                            + ", alpha " + attached.config().alpha() + ")");
        }
        return 0;
    }
}
