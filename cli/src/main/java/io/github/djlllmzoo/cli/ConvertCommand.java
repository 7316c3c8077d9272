package io.github.djlllmzoo.cli;

import ai.djl.Device;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.training.TrainingCheckpoint;
import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.gguf.GgufFile;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code llmzoo convert}: a GGUF file as a Hugging Face checkpoint directory. */
@Command(
        name = "convert",
        mixinStandardHelpOptions = true,
        description = {
            "Write a llama.cpp GGUF file as a Hugging Face checkpoint directory (config.json, model.safetensors in "
                    + "float32, tokenizer.json, tokenizer_config.json with the chat template, generation_config.json), "
                    + "so that fine-tuning, LoRA and Spark work from it. Quantized weights are written as the values "
                    + "they stand for (dequantized), Llama's q/k rows in Hugging Face's order.",
            ""
        })
final class ConvertCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Option(names = "--model", required = true, paramLabel = "FILE.gguf",
            description = "The GGUF file, or a hub GGUF: org/name:TAG, or org/name with --gguf-file.")
    String model;

    @Option(names = "--gguf-file", paramLabel = "FILE", description = "The GGUF file of the Hugging Face repository --model.")
    String ggufFile;

    @Option(names = "--out", required = true, paramLabel = "DIR",
            description = "Checkpoint directory to write (must not exist); written whole or not at all.")
    Path out;

    @Override
    public Integer call() throws Exception {
        if (Files.exists(out)) {
            throw new ParameterException(spec.commandLine(), "--out " + out + " already exists; choose a new directory");
        }
        Path source = ModelOptions.resolve(model, ggufFile);
        if (!GgufFile.isGguf(source)) {
            throw new ParameterException(
                    spec.commandLine(), "--model " + model + " is not a GGUF file (convert reads *.gguf files)");
        }
        try (LocalModel gguf = LocalModel.load(source, Device.cpu(), DataType.FLOAT32, WeightFormat.FLOAT32)) {
            TrainingCheckpoint.publishModel(out, gguf.block(), gguf.dir());
            spec.commandLine().getOut().println("wrote " + out + ": " + source.getFileName() + " as a "
                    + gguf.config().getClass().getSimpleName().replace("Config", "") + " checkpoint (float32)");
        }
        return 0;
    }
}
