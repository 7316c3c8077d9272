package io.github.djlllmzoo.benchmarks;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.AttentionContext;
import io.github.djlllmzoo.blocks.Gpt2Attention;
import io.github.djlllmzoo.blocks.KvCache;
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
 * One decode step (one new token) through the attention of every GPT-2 small layer with a KV cache
 * holding {@code position} earlier tokens: fused QKV projection, cache write, attention over the
 * cache, output projection. The cache is cut back to {@code position} after each step, so every
 * call measures the same position; time should grow only slowly with it.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-DOPT_OUT_TRACKING=true", "-Doffline=true"})
@State(Scope.Thread)
public class AttentionDecodeBenchmark {

    @Param({"64", "512", "960"})
    int position;

    private NDManager manager;
    private Gpt2Attention[] layers;
    private KvCache cache;
    private NDArray positionIds;

    @Setup(Level.Trial)
    public void setUp() {
        Gpt2Config config = Gpt2Small.CONFIG;
        Engine.getEngine("PyTorch").setRandomSeed(1);
        manager = NDManager.newBaseManager("PyTorch");
        layers = new Gpt2Attention[config.nLayer()];
        for (int i = 0; i < layers.length; i++) {
            layers[i] = new Gpt2Attention(config, i);
            layers[i].useKernels(Gpt2Small.kernels());
            layers[i].initialize(manager, DataType.FLOAT32, new Shape(1, 1, config.nEmbd()));
        }
        cache = Gpt2Small.filledCache(manager, 1, position, config.nPositions());
        positionIds = manager.create(new long[] {position}, new Shape(1, 1));
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        cache.close();
        manager.close();
    }

    @Benchmark
    public void step(Blackhole blackhole) {
        try (NDManager step = manager.newSubManager()) {
            NDArray x = Gpt2Small.activations(step, new Shape(1, 1, Gpt2Small.CONFIG.nEmbd()), position);
            AttentionContext context = new AttentionContext(positionIds, null, cache, manager);
            for (Gpt2Attention layer : layers) {
                blackhole.consume(layer.forward(null, x, context, false));
            }
        }
        cache.truncate(position);
    }
}
