package io.github.djlllmzoo.benchmarks;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import java.util.List;
import java.util.Random;

/** The GPT-2 small shape the benchmarks use, and random inputs for it. */
final class Gpt2Small {

    /** GPT-2 small: 12 layers, 768 wide, 12 heads, 50257 tokens, 1024 positions; no dropout. */
    static final Gpt2Config CONFIG =
            new Gpt2Config(50257, 1024, 768, 12, 12, 3072, 1e-5f, 0f, 0f, 0f, 50256, List.of(50256), false);

    private Gpt2Small() {}

    /**
     * The kernels a float32 model on this CPU computes with, for blocks benchmarked on their own
     * (a block outside a model computes with the engine's operations).
     *
     * @return the kernels {@link Kernels#forModel} chooses
     */
    static Kernels kernels() {
        return Kernels.forModel(Engine.getEngine("PyTorch"), Device.cpu(), DataType.FLOAT32);
    }

    /**
     * Random normal activations.
     *
     * @param manager the manager to own them (a benchmark step's)
     * @param shape their shape
     * @param seed the seed
     * @return the array
     */
    static NDArray activations(NDManager manager, Shape shape, long seed) {
        Random random = new Random(seed);
        float[] data = new float[Math.toIntExact(shape.size())];
        for (int i = 0; i < data.length; i++) {
            data[i] = (float) random.nextGaussian();
        }
        return manager.create(data, shape);
    }

    /**
     * A cache of {@code batch} sequences holding {@code position} tokens of random keys and values,
     * written, so that attention reads them from memory: a cache only advanced over its zeroed
     * buffers is read from the kernel's shared zero page, far faster than any real cache.
     *
     * @param manager the manager the cache's arrays come from
     * @param batch sequences
     * @param position tokens cached
     * @param capacity positions allocated (at least {@code position})
     * @return the cache, {@code position} long
     */
    static KvCache filledCache(NDManager manager, int batch, int position, int capacity) {
        KvCache cache = new KvCache(manager, new int[CONFIG.nLayer()], batch, CONFIG.nHead(), CONFIG.headDim(), capacity,
                CONFIG.nPositions(), DataType.FLOAT32);
        if (position > 0) {
            Shape shape = new Shape(batch, CONFIG.nHead(), position, CONFIG.headDim());
            for (int layer = 0; layer < CONFIG.nLayer(); layer++) {
                try (NDManager fill = manager.newSubManager()) {
                    cache.update(layer, activations(fill, shape, 2L * layer), activations(fill, shape, 2L * layer + 1));
                }
            }
        }
        return cache;
    }
}
