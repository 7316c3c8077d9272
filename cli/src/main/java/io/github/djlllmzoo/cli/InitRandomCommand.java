package io.github.djlllmzoo.cli;

import io.github.djlllmzoo.benchmarks.ModelShape;
import io.github.djlllmzoo.benchmarks.RandomCheckpoint;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.concurrent.Callable;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code llmzoo init-random}: write a random-weight checkpoint of a named shape. */
@Command(
        name = "init-random",
        mixinStandardHelpOptions = true,
        description = "Write a checkpoint directory (config.json, model.safetensors) of a model shape with random weights.")
final class InitRandomCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Option(names = "--shape", required = true, paramLabel = "SHAPE", description = "The model shape: gpt2-small, gpt2-tiny, llama-110m, tinyllama-1.1b, qwen2-0.5b or gemma3-270m.")
    String shape;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Directory to write (created if missing).")
    Path out;

    @Option(names = "--tokenizer", paramLabel = "DIR", description = "Copy this directory's tokenizer files into the checkpoint.")
    Path tokenizer;

    @Option(names = "--seed", defaultValue = "42", paramLabel = "N", description = "Seed of the random weights (default: ${DEFAULT-VALUE}).")
    long seed;

    @Override
    public Integer call() throws Exception {
        DecoderConfig config = RandomCheckpoint.write(ModelShape.of(shape), out, seed, tokenizer);
        PrintWriter writer = spec.commandLine().getOut();
        writer.println("wrote " + out + " (" + config.modelType() + ", " + config.numLayers() + " layers, hidden "
                + config.hiddenSize() + ", vocab " + config.vocabSize() + ")");
        writer.flush();
        return 0;
    }
}
