package io.github.djlllmzoo.benchmarks;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.Gpt2Mlp;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Measurement;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;
import org.openjdk.jmh.annotations.Warmup;
import org.openjdk.jmh.infra.Blackhole;

/**
 * The MLP ({@code c_fc}, gelu_new, {@code c_proj}) of every GPT-2 small layer on {@code tokens}
 * tokens: 1 is a decode step (bound by reading 113 MB of weights), 128 a prefill.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-DOPT_OUT_TRACKING=true", "-Doffline=true"})
@State(Scope.Thread)
public class MlpBenchmark {

    @Param({"1", "128"})
    int tokens;

    private NDManager manager;
    private Gpt2Mlp[] layers;

    @Setup(Level.Trial)
    public void setUp() {
        Gpt2Config config = Gpt2Small.CONFIG;
        Engine.getEngine("PyTorch").setRandomSeed(1);
        manager = NDManager.newBaseManager("PyTorch");
        layers = new Gpt2Mlp[config.nLayer()];
        for (int i = 0; i < layers.length; i++) {
            layers[i] = new Gpt2Mlp(config);
            layers[i].useKernels(Gpt2Small.kernels());
            layers[i].initialize(manager, DataType.FLOAT32, new Shape(1, 1, config.nEmbd()));
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        manager.close();
    }

    @Benchmark
    public void forward(Blackhole blackhole) {
        try (NDManager step = manager.newSubManager()) {
            NDArray x = Gpt2Small.activations(step, new Shape(1, tokens, Gpt2Small.CONFIG.nEmbd()), tokens);
            for (Gpt2Mlp layer : layers) {
                blackhole.consume(layer.forward(null, x, false));
            }
        }
    }
}
