package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.WeightFormat;
import org.junit.jupiter.api.BeforeEach;

/** Tests of the native kernels' products with compressed weights of a realistic scale. */
abstract class CompressedWeightsTest extends ManagedArraysTest {

    @BeforeEach
    void kernelBuiltAndLoadedWhereTheCpuHasAvx512() throws Exception {
        NativeKernelsAssumption.assumeKernelsLoaded();
    }

    /** A random (out, in) weight, std 0.02, compressed to {@code format}. */
    protected CompressedWeight compressed(int out, int in, WeightFormat format) {
        float[] w = manager.randomNormal(0, 0.02f, new Shape(out, in), DataType.FLOAT32).toFloatArray();
        return CompressedWeight.compress(w, out, in, format);
    }
}
