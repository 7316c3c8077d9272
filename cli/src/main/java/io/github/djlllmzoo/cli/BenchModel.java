package io.github.djlllmzoo.cli;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.benchmarks.ModelShape;
import io.github.djlllmzoo.benchmarks.RandomCheckpoint;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.IOException;
import java.util.List;

/**
 * The model a benchmark command times ({@code bench}, {@code bench-constrained}): a checkpoint
 * directory, or random weights of a shape, in the form and data type {@link ComputeOptions} asks
 * for, with Gemma 2/3's float16 guard applied either way. Closing it frees the weights.
 */
final class BenchModel implements AutoCloseable {

    final CausalLmBlock block;
    final NDManager manager;
    /** The type the model computes in (float32 where the float16 guard kept it there). */
    final DataType dataType;
    final List<Integer> eosTokenIds;
    /** What the JSON's {@code model} field says. */
    final String label;
    private final AutoCloseable owner;

    private BenchModel(
            CausalLmBlock block,
            NDManager manager,
            DataType dataType,
            List<Integer> eosTokenIds,
            String label,
            AutoCloseable owner) {
        this.block = block;
        this.manager = manager;
        this.dataType = dataType;
        this.eosTokenIds = eosTokenIds;
        this.label = label;
        this.owner = owner;
    }

    static BenchModel open(BenchCommand.Source source, ComputeOptions compute, long seed)
            throws IOException, InvalidCheckpointException {
        compute.kvCacheDtype(); // a bad value refused before the model loads
        if (source.model != null) {
            LocalModel model = LocalModel.load(
                    source.model, compute.device(), compute.dataType(), compute.weightFormat(), compute.float16Overflow());
            return new BenchModel(compute.applyKvCacheDtype(model.block()), model.model().getNDManager(), model.model().getDataType(),
                    model.eosTokenIds(), source.model.toString(), model);
        }
        ModelShape shape = ModelShape.of(source.shape);
        DecoderConfig config = BenchCommand.shapeConfig(shape);
        DataType dataType = compute.float16Overflow().computeType(config, compute.dataType());
        NDManager manager = NDManager.newBaseManager(compute.device(), "PyTorch");
        try {
            CausalLmBlock block = compute.applyKvCacheDtype(
                    RandomCheckpoint.create(config, manager, dataType, seed, compute.weightFormat()));
            return new BenchModel(
                    block, manager, dataType, config.eosTokenIds(), shape.label() + " (random weights)", manager);
        } catch (RuntimeException e) {
            manager.close();
            throw e;
        }
    }

    @Override
    public void close() throws Exception {
        owner.close();
    }
}
