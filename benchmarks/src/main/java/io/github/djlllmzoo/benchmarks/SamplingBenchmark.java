package io.github.djlllmzoo.benchmarks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
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
 * Greedy token choice from one step's logits over GPT-2's 50257-token vocabulary, per batch of
 * {@code batch} sequences: the engine's argmax (one native call, B longs back) against copying the
 * logits to Java and scanning them there (what a sampler that needs the whole distribution does).
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-DOPT_OUT_TRACKING=true", "-Doffline=true"})
@State(Scope.Thread)
public class SamplingBenchmark {

    @Param({"1", "8"})
    int batch;

    private NDManager manager;
    private NDArray logits;

    @Setup(Level.Trial)
    public void setUp() {
        manager = NDManager.newBaseManager("PyTorch");
        logits = Gpt2Small.activations(manager, new Shape(batch, 1, Gpt2Small.CONFIG.vocabSize()), 3);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        manager.close();
    }

    @Benchmark
    public long[] engineArgmax() {
        try (NDArray ids = logits.argMax(-1)) {
            return ids.toLongArray();
        }
    }

    @Benchmark
    public long[] javaArgmax() {
        float[] all = logits.toFloatArray();
        int vocab = Gpt2Small.CONFIG.vocabSize();
        long[] ids = new long[batch];
        for (int b = 0; b < batch; b++) {
            int offset = b * vocab;
            int best = 0;
            for (int i = 1; i < vocab; i++) {
                if (all[offset + i] > all[offset + best]) {
                    best = i;
                }
            }
            ids[b] = best;
        }
        return ids;
    }
}
