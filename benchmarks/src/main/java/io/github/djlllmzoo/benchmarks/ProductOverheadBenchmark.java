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
 * What a decode product costs beside its kernel: one product of a small compressed weight that
 * stays in the caches (512 x 256, still split across the cores), two such products, the same two
 * as a pair ({@code projectPair}: one hand-over to the cores), and the engine operations a product
 * makes around its kernel (an empty output array, a reshape). Every
 * array a benchmark makes is closed in it, so each figure includes one close per array.
 * {@code -jvmArgsAppend -Dllmzoo.cpu.threads=1} shows the cost without the hand-over.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Warmup(iterations = 3, time = 1)
@Measurement(iterations = 5, time = 1)
@Fork(value = 1, jvmArgsAppend = {"-DOPT_OUT_TRACKING=true", "-Doffline=true", "-Dai.djl.pytorch.num_threads=1"})
@State(Scope.Thread)
public class ProductOverheadBenchmark {

    private static final int OUT = 512;
    private static final int IN = 256;

    @Param({"int8", "bfloat16"})
    String dtype;

    private NDManager manager;
    private Kernels kernels;
    private ProjectionWeight first;
    private ProjectionWeight second;
    private NDArray x;
    private NDArray output;

    @Setup(Level.Trial)
    public void setUp() {
        Engine engine = Engine.getEngine("PyTorch");
        engine.setRandomSeed(1);
        manager = NDManager.newBaseManager(Device.cpu(), "PyTorch");
        kernels = Kernels.forModel(engine, Device.cpu(), DataType.FLOAT32);
        WeightFormat format = WeightFormat.parse(dtype);
        first = projection("first", format);
        second = projection("second", format);
        x = manager.randomNormal(new Shape(1, 1, IN)); // a decode step: (B, T, in)
        output = manager.create(new Shape(1, OUT), DataType.FLOAT32);
    }

    private ProjectionWeight projection(String name, WeightFormat format) {
        Parameter weight = Parameter.builder().setName(name).setType(Parameter.Type.WEIGHT).build();
        weight.setArray(manager.randomNormal(0, 0.02f, new Shape(OUT, IN), DataType.FLOAT32));
        ProjectionWeight projection = new ProjectionWeight(ProjectionWeight.Layout.OUT_IN, weight, null);
        projection.compress(format);
        return projection;
    }

    @TearDown(Level.Trial)
    public void tearDown() {
        manager.close();
    }

    @Benchmark
    public long project() {
        return closed(kernels.project(x, first, null, false));
    }

    @Benchmark
    public long twoProjects() {
        return closed(kernels.project(x, first, null, false)) + closed(kernels.project(x, second, null, false));
    }

    @Benchmark
    public long projectPair() {
        NDArray[] both = kernels.projectPair(x, first, second, null, false);
        return closed(both[0]) + closed(both[1]);
    }

    @Benchmark
    public long emptyOutput() {
        return closed(manager.create(new Shape(1, 1, OUT), DataType.FLOAT32));
    }

    @Benchmark
    public long reshape() {
        return closed(output.reshape(1, 1, OUT));
    }

    private static long closed(NDArray array) {
        long size = array.size();
        array.close();
        return size;
    }
}
