package io.github.djlllmzoo.benchmarks;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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
 * The matrix products of one decode step of a Llama shape and nothing else: each layer's q, k, v,
 * o, gate, up and down projections and the LM head, on random weights held as {@code dtype}, each
 * through the model's kernels on a {@code (batch, 1, in)} input. Set beside {@code bench}'s whole
 * step on the same shape and format, it splits a step's time into products and the rest
 * (attention, norms, activations, the engine's per-operation cost). {@link #smallProducts} makes as
 * many products, each of a (512, 256) weight that stays in the caches and is still split across
 * the cores: the cost of a product apart from reading its weight.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Warmup(iterations = 3, time = 2)
@Measurement(iterations = 5, time = 2)
@Fork(value = 1, jvmArgsAppend = {"-DOPT_OUT_TRACKING=true", "-Doffline=true", "-Xmx4g"})
@State(Scope.Thread)
public class DecodeProductsBenchmark {

    @Param({"llama-110m"})
    String shape;

    @Param({"float32", "bfloat16", "int8"})
    String dtype;

    @Param({"1"})
    int batch;

    private NDManager manager;
    private Kernels kernels;
    private final List<ProjectionWeight> projections = new ArrayList<>();
    private final List<NDArray> inputs = new ArrayList<>();
    private final List<ProjectionWeight> small = new ArrayList<>();
    private final List<NDArray> smallInputs = new ArrayList<>();

    @Setup(Level.Trial)
    public void setUp() throws Exception {
        Engine engine = Engine.getEngine("PyTorch");
        engine.setRandomSeed(1);
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        kernels = Kernels.forModel(engine, Device.cpu(), DataType.FLOAT32);
        Path dir = Files.createTempDirectory("llmzoo-products");
        LlamaConfig config;
        try {
            config = (LlamaConfig) RandomCheckpoint.writeConfig(ModelShape.of(shape), dir);
        } finally {
            Files.deleteIfExists(dir.resolve(CheckpointFiles.CONFIG));
            Files.deleteIfExists(dir);
        }
        WeightFormat format = WeightFormat.parse(dtype);
        int hidden = config.hiddenSize();
        int kv = config.numKvHeads() * config.headDim();
        int mlp = config.intermediateSize();
        for (int layer = 0; layer < config.numLayers(); layer++) {
            int[][] shapes = {
                {hidden, hidden}, {kv, hidden}, {kv, hidden}, {hidden, hidden}, {mlp, hidden}, {mlp, hidden}, {hidden, mlp}
            };
            for (int[] outIn : shapes) {
                add(outIn[0], outIn[1], format, projections, inputs);
                add(512, 256, format, small, smallInputs);
            }
        }
        add(config.vocabSize(), hidden, format, projections, inputs);
        add(512, 256, format, small, smallInputs);
    }

    /** A projection (out, in) of std 0.02 held as {@code format}, and a random input for it. */
    private void add(int out, int in, WeightFormat format, List<ProjectionWeight> weights, List<NDArray> xs) {
        Parameter weight = Parameter.builder().setName("w" + weights.size()).setType(Parameter.Type.WEIGHT).build();
        weight.setArray(manager.randomNormal(0, 0.02f, new Shape(out, in), DataType.FLOAT32));
        ProjectionWeight projection = new ProjectionWeight(ProjectionWeight.Layout.OUT_IN, weight, null);
        projection.compress(format);
        weights.add(projection);
        xs.add(manager.randomNormal(new Shape(batch, 1, in)));
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        manager.close();
    }

    @Benchmark
    public float products() {
        return run(projections, inputs);
    }

    @Benchmark
    public float smallProducts() {
        return run(small, smallInputs);
    }

    private float run(List<ProjectionWeight> weights, List<NDArray> xs) {
        float last = 0;
        try (NDManager step = manager.newSubManager()) {
            for (int i = 0; i < weights.size(); i++) {
                NDArray x = xs.get(i);
                x.tempAttach(step); // the product's arrays go to the step's manager, x back to its own
                last = kernels.project(x, weights.get(i), null, false).getFloat(0, 0, 0);
            }
        }
        return last;
    }
}
