package io.github.djlllmzoo.benchmarks;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.Gpt2Model;
import io.github.djlllmzoo.blocks.KvCache;
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

/**
 * A whole GPT-2 small decode step ({@code batch} new tokens, logits of the last position, engine
 * argmax) with {@code position} tokens already cached; the cache is truncated back after each call
 * so every call measures the same position.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-DOPT_OUT_TRACKING=true", "-Doffline=true", "-Xmx2g"})
@State(Scope.Thread)
public class DecodeStepBenchmark {

    @Param({"64", "960"})
    int position;

    @Param({"1"})
    int batch;

    private NDManager manager;
    private Gpt2Model model;
    private KvCache cache;

    @Setup(Level.Trial)
    public void setUp() {
        Engine.getEngine("PyTorch").setRandomSeed(1);
        manager = NDManager.newBaseManager("PyTorch");
        model = new Gpt2Model(Gpt2Small.CONFIG);
        model.initialize(manager, DataType.FLOAT32, new Shape(1, 1));
        cache = Gpt2Small.filledCache(manager, batch, position, position + 1);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        cache.close();
        manager.close();
    }

    @Benchmark
    public long[] step() {
        try (NDManager step = manager.newSubManager()) {
            long[] ids = new long[batch];
            java.util.Arrays.fill(ids, 464);
            NDArray input = step.create(ids, new Shape(batch, 1));
            long[] next = model.kernels().argMax(model.forward(null, input, null, null, cache, true, false));
            cache.truncate(position);
            return next;
        }
    }
}
