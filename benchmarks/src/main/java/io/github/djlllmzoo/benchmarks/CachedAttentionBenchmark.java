package io.github.djlllmzoo.benchmarks;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.Kernels;
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
import org.openjdk.jmh.infra.Blackhole;

/**
 * Attention alone, of one new token per sequence over a written cache of {@code position} tokens,
 * through all 12 GPT-2 small layers: {@code kernel} as a decode step computes it (the CPU kernels,
 * which take the native kernel where it is loaded), {@code engine} by PyTorch's products over
 * views of the cache (the CPU kernels with {@code -Dllmzoo.cpu.off=decodeAttention}). The cache is
 * truncated back after each call. {@code softcap} above 0 soft-caps the scores as Gemma 2 does
 * (e.g. {@code -p softcap=0,50}).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-DOPT_OUT_TRACKING=true", "-Doffline=true", "-Xmx4g"})
@State(Scope.Thread)
public class CachedAttentionBenchmark {

    @Param({"kernel", "engine"})
    String path;

    @Param({"8"})
    int batch;

    @Param({"64", "512"})
    int position;

    @Param({"0"})
    double softcap;

    private NDManager manager;
    private KvCache cache;
    private Kernels kernels;

    @Setup(Level.Trial)
    public void setUp() {
        Engine.getEngine("PyTorch").setRandomSeed(1);
        manager = NDManager.newBaseManager("PyTorch");
        cache = Gpt2Small.filledCache(manager, batch, position, position + 1);
        String previous = System.setProperty("llmzoo.cpu.off", "kernel".equals(path) ? "" : "decodeAttention");
        try {
            kernels = Gpt2Small.kernels();
        } finally {
            if (previous == null) {
                System.clearProperty("llmzoo.cpu.off");
            } else {
                System.setProperty("llmzoo.cpu.off", previous);
            }
        }
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        cache.close();
        manager.close();
    }

    @Benchmark
    public void step(Blackhole blackhole) {
        int layers = Gpt2Small.CONFIG.nLayer();
        Shape shape = new Shape(batch, Gpt2Small.CONFIG.nHead(), 1, Gpt2Small.CONFIG.headDim());
        AttentionScores scores = new AttentionScores(1 / Math.sqrt(Gpt2Small.CONFIG.headDim()), softcap);
        try (NDManager step = manager.newSubManager()) {
            NDArray q = Gpt2Small.activations(step, shape, position);
            NDArray kv = Gpt2Small.activations(step, shape, position + 1L);
            for (int layer = 0; layer < layers; layer++) {
                blackhole.consume(kernels.attend(q, cache.update(layer, kv, kv), null, scores, 0f, false));
            }
        }
        cache.truncate(position);
    }
}
