package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.WeightFormat;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** A prefill's products with compressed weights, widened into one reused buffer. */
class WideningBufferTest extends CompressedWeightsTest {

    /** (out, in) of weights multiplied in turn: larger, smaller, then larger again. */
    private static final int[][] SHAPES = {{96, 64}, {301, 96}, {40, 64}, {513, 128}, {7, 32}};

    /** Today's path: the engine's product over a fresh array of the natively widened weight. */
    private float[] overAFreshArray(NDArray x, CompressedWeight weight, NDArray bias) {
        NDArray w = CompressedProduct.widened(weight, manager); // (out, in)
        float[] product = EngineKernels.product(x, w, bias, Layout.OUT_IN).toFloatArray();
        w.close();
        return product;
    }

    @ParameterizedTest
    @EnumSource(value = WeightFormat.class, names = {"INT8", "BFLOAT16", "FLOAT16"})
    void productsThroughOneBufferAreBitForBitThoseOverAFreshWidenedWeight(WeightFormat format) {
        WideningBuffer buffer = new WideningBuffer();
        for (int round = 0; round < 2; round++) {
            for (int[] shape : SHAPES) {
                CompressedWeight weight = compressed(shape[0], shape[1], format);
                NDArray x = manager.randomNormal(new Shape(2, 17, shape[1])); // a prefill: (B, T, in)
                for (NDArray bias : new NDArray[] {manager.randomNormal(new Shape(shape[0])), null}) {
                    NDArray actual = buffer.product(x, weight, bias);
                    assertEquals(new Shape(2, 17, shape[0]), actual.getShape());
                    assertArrayEquals(overAFreshArray(x, weight, bias), actual.toFloatArray(),
                            format + " " + shape[0] + "x" + shape[1] + " bias " + (bias != null));
                }
            }
        }
    }

    /**
     * On one PyTorch thread (as {@code bin/llmzoo} runs) a large weight's product is split across the
     * cores by output columns, each core widening and multiplying its own rows: the engine's
     * product over the whole widened weight to float32 rounding, in the input's leading shape.
     */
    @ParameterizedTest
    @EnumSource(value = WeightFormat.class, names = {"INT8", "BFLOAT16", "FLOAT16"})
    void aLargeWeightsProductOnOneTorchThreadIsTheWholeProductToRounding(WeightFormat format) {
        CompressedWeight weight = compressed(1031, 256, format); // over SplitProjection.MIN_ELEMENTS, odd
        NDArray widened = weight.toFloat32(manager); // (out, in)
        NDArray x = manager.randomNormal(new Shape(1, 130, 256)); // (B, T, in)
        NDArray bias = manager.randomNormal(new Shape(1031));
        int threads = TorchThreads.intraOp();
        try {
            TorchThreads.setIntraOp(1);
            WideningBuffer buffer = new WideningBuffer();
            for (NDArray b : new NDArray[] {bias, null}) {
                NDArray actual = buffer.product(x, weight, b);
                assertEquals(new Shape(1, 130, 1031), actual.getShape());
                assertArrayEquals(overAFreshArray(x, weight, b), actual.toFloatArray(),
                        RoundingBound.ofProduct(x, widened, b, true), format + " bias " + (b != null));
            }
        } finally {
            TorchThreads.setIntraOp(threads);
        }
    }

    @Test
    void theBufferGrowsToTheLargestWeightAndIsReusedAfterIt() {
        WideningBuffer buffer = new WideningBuffer();
        assertEquals(0, buffer.capacity());
        long largest = 0;
        for (int[] shape : SHAPES) {
            buffer.product(manager.randomNormal(new Shape(16, shape[1])), compressed(shape[0], shape[1],
                    WeightFormat.INT8), null);
            largest = Math.max(largest, (long) shape[0] * shape[1] * Float.BYTES);
            assertEquals(largest, buffer.capacity(), shape[0] + "x" + shape[1]);
        }
        for (int[] shape : SHAPES) {
            buffer.product(manager.randomNormal(new Shape(16, shape[1])), compressed(shape[0], shape[1],
                    WeightFormat.INT8), null);
            assertEquals(largest, buffer.capacity(), "no weight is larger: the buffer is kept");
        }
    }

    @Test
    void noArrayOverTheBufferOutlivesItsProduct() {
        WideningBuffer buffer = new WideningBuffer();
        NDArray x = manager.randomNormal(new Shape(16, 64));
        CompressedWeight weight = compressed(96, 64, WeightFormat.BFLOAT16);
        List<NDArray> before = manager.getManagedArrays();
        NDArray product = buffer.product(x, weight, null);
        List<NDArray> after = manager.getManagedArrays();
        assertEquals(before.size() + 1, after.size(), "the product alone is left in the input's manager");
        assertTrue(after.contains(product));
    }

    @Test
    void aProductWhileAnotherThreadHoldsTheBufferWidensIntoAFreshArray() throws Exception {
        WideningBuffer buffer = new WideningBuffer();
        CompressedWeight small = compressed(40, 64, WeightFormat.INT8);
        CompressedWeight large = compressed(513, 128, WeightFormat.INT8);
        NDArray xSmall = manager.randomNormal(new Shape(16, 64));
        NDArray xLarge = manager.randomNormal(new Shape(16, 128));
        float[] want = overAFreshArray(xLarge, large, null);
        CountDownLatch inside = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        Thread holder = new Thread(() -> buffer.holding(() -> {
            inside.countDown();
            try {
                release.await(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        holder.start();
        assertTrue(inside.await(30, TimeUnit.SECONDS));
        try {
            assertArrayEquals(want, buffer.product(xLarge, large, null).toFloatArray());
            assertEquals(0, buffer.capacity(), "the held buffer was not touched");
        } finally {
            release.countDown();
            holder.join();
        }
        assertArrayEquals(overAFreshArray(xSmall, small, null), buffer.product(xSmall, small, null).toFloatArray());
        assertFalse(buffer.capacity() == 0, "free again: the buffer is used");
    }
}
