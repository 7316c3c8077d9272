package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.GradientCollector;
import java.io.IOException;
import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;

class DropoutsTest {

    private static final Engine ENGINE = Engine.getEngine("PyTorch");

    @Test
    void trainingDropoutEqualsTheEnginesToTheBitInValuesAndGradients() {
        for (float rate : new float[] {0.05f, 0.1f, 0.5f, 0.9f}) {
            float[][] engine = valueAndGradient(x -> x.getNDArrayInternal().dropout(x, rate, true).singletonOrThrow());
            float[][] ours = valueAndGradient(x -> Dropouts.apply(x, rate, true));
            assertArrayEquals(engine[0], ours[0], "values at rate " + rate);
            assertArrayEquals(engine[1], ours[1], "gradients at rate " + rate);
        }
    }

    @Test
    void theGradientIsTheSameWhenGarbageIsCollectedBetweenTheForwardAndBackwardPasses()
            throws InterruptedException {
        assertArrayEquals(gradient(false), gradient(true));
    }

    /** The input's gradient through dropout from a fixed input and seed. */
    private static float[] gradient(boolean collectBeforeBackward) throws InterruptedException {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            ENGINE.setRandomSeed(11);
            NDArray x = manager.randomNormal(new Shape(3, 17, 64));
            NDArray upstream = manager.randomNormal(new Shape(3, 17, 64));
            x.setRequiresGradient(true);
            try (GradientCollector collector = ENGINE.newGradientCollector()) {
                ENGINE.setRandomSeed(5);
                long baseline = FreedJavaMemory.directBuffers();
                NDArray dropped = Dropouts.apply(x, 0.1f, true);
                List<ByteBuffer> refills =
                        collectBeforeBackward ? FreedJavaMemory.collectAndOverwrite(baseline) : List.of();
                collector.backward(dropped.mul(upstream).sum());
                Reference.reachabilityFence(refills);
            }
            return x.getGradient().toFloatArray();
        }
    }

    @Test
    void whatTrainingDropoutKeepsForTheBackwardPassIsAByteAnElementNotTheInputsFloats() throws IOException {
        assumeTrue(Files.isReadable(Path.of("/proc/self/status")), "needs Linux's /proc/self/status");
        // freed arrays this large go back to the kernel at once under glibc's own thresholds
        assumeTrue(System.getenv("MALLOC_MMAP_THRESHOLD_") == null, "glibc's allocation thresholds changed");
        long n = 24L << 20;
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            NDArray x = manager.randomNormal(new Shape(n));
            x.setRequiresGradient(true);
            try (GradientCollector warmUp = ENGINE.newGradientCollector()) {
                warmUp.backward(Dropouts.apply(x, 0.1f, true).sum());
            }
            try (GradientCollector collector = ENGINE.newGradientCollector()) {
                long before = residentBytes();
                NDArray dropped = Dropouts.apply(x, 0.1f, true);
                long held = residentBytes() - before;
                // the float32 result (4 bytes an element) and a boolean mask (1) stay for backward;
                // the engine's dropout keeps float32 noise (4) instead: the bound lies halfway
                assertTrue(held < 6.5 * n, "bytes held after dropout: " + held + " for " + n + " float32 elements");
                collector.backward(dropped.sum());
            }
        }
    }

    /** The result of {@code dropout} on a fixed input from a fixed seed, and its input's gradient. */
    private static float[][] valueAndGradient(UnaryOperator<NDArray> dropout) {
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            ENGINE.setRandomSeed(11);
            NDArray x = manager.randomNormal(new Shape(3, 17, 64));
            NDArray upstream = manager.randomNormal(new Shape(3, 17, 64));
            x.setRequiresGradient(true);
            float[] value;
            try (GradientCollector collector = ENGINE.newGradientCollector()) {
                ENGINE.setRandomSeed(5);
                NDArray dropped = dropout.apply(x);
                value = dropped.toFloatArray();
                collector.backward(dropped.mul(upstream).sum());
            }
            return new float[][] {value, x.getGradient().toFloatArray()};
        }
    }

    private static long residentBytes() throws IOException {
        for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
            if (line.startsWith("VmRSS:")) {
                return Long.parseLong(line.replaceAll("[^0-9]", "")) * 1024;
            }
        }
        throw new IOException("no VmRSS in /proc/self/status");
    }
}
