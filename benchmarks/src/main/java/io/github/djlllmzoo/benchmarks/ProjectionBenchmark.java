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
import org.openjdk.jmh.infra.Blackhole;

/**
 * The engine calls an affine projection of one token can use, over the four projections of all 12
 * GPT-2 small layers (340 MB of weights, far past the caches, as in a decode step), and the tied
 * LM head (768 x 50257): the evidence behind {@code Conv1D}'s choice of call.
 *
 * <ul>
 *   <li>{@code matmulAdd}: {@code x.matMul(w).addi(b)} with w (in, out) as GPT-2 stores it;
 *   <li>{@code linearTransposedView}: {@code linear(x, w.transpose(), b)}, one fused addmm;
 *   <li>{@code linearOutIn}: {@code linear(x, w, b)} with w stored (out, in) as nn.Linear does.
 * </ul>
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-DOPT_OUT_TRACKING=true", "-Doffline=true", "-Xmx2g"})
@State(Scope.Thread)
public class ProjectionBenchmark {

    private static final int[][] SHAPES = {{768, 2304}, {768, 768}, {768, 3072}, {3072, 768}};

    @Param({"matmulAdd", "linearTransposedView", "linearOutIn"})
    String layout;

    @Param({"1"})
    int tokens;

    private NDManager manager;
    private NDArray[] weights;
    private NDArray[] biases;
    private NDArray wte;

    @Setup(Level.Trial)
    public void setUp() {
        manager = NDManager.newBaseManager("PyTorch");
        int layers = Gpt2Small.CONFIG.nLayer();
        weights = new NDArray[layers * SHAPES.length];
        biases = new NDArray[weights.length];
        for (int i = 0; i < weights.length; i++) {
            int[] s = SHAPES[i % SHAPES.length];
            Shape shape = "linearOutIn".equals(layout) ? new Shape(s[1], s[0]) : new Shape(s[0], s[1]);
            weights[i] = manager.randomNormal(0, 0.02f, shape, ai.djl.ndarray.types.DataType.FLOAT32);
            biases[i] = manager.zeros(new Shape(s[1]));
        }
        wte = manager.randomNormal(0, 0.02f, new Shape(Gpt2Small.CONFIG.vocabSize(), 768),
                ai.djl.ndarray.types.DataType.FLOAT32);
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        manager.close();
    }

    @Benchmark
    public void layerProjections(Blackhole blackhole) {
        try (NDManager step = manager.newSubManager()) {
            NDArray narrow = Gpt2Small.activations(step, new Shape(1, tokens, 768), 1);
            NDArray wide = Gpt2Small.activations(step, new Shape(1, tokens, 3072), 2);
            for (int i = 0; i < weights.length; i++) {
                NDArray x = SHAPES[i % SHAPES.length][0] == 768 ? narrow : wide;
                blackhole.consume(project(x, weights[i], biases[i]));
            }
        }
    }

    @Benchmark
    public void lmHead(Blackhole blackhole) {
        try (NDManager step = manager.newSubManager()) {
            NDArray x = Gpt2Small.activations(step, new Shape(1, tokens, 768), 1);
            blackhole.consume(x.getNDArrayInternal().linear(x, wte, null).singletonOrThrow());
        }
    }

    private NDArray project(NDArray x, NDArray w, NDArray b) {
        switch (layout) {
            case "matmulAdd":
                return x.matMul(w).addi(b);
            case "linearTransposedView":
                try (NDArray view = w.transpose()) {
                    return x.getNDArrayInternal().linear(x, view, b).singletonOrThrow();
                }
            default:
                return x.getNDArrayInternal().linear(x, w, b).singletonOrThrow();
        }
    }
}
