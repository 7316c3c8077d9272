package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import java.nio.ByteBuffer;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The workers read the start of the next hand-over's weights while the calling thread works alone
 * ({@link WeightReadAhead}): learned from the order of a step's hand-overs, read from each core's
 * first run, and without any effect on the products; off unless {@code -Dllmzoo.cpu.readAheadKib}
 * gives it a budget.
 */
class WeightReadAheadTest extends CompressedWeightsTest {

    private ProjectionWeight projection(int out, int in) {
        ProjectionWeight weight = Projections.of(
                Layout.OUT_IN, manager.randomNormal(0, 0.02f, new Shape(out, in), DataType.FLOAT32), null);
        weight.compress(WeightFormat.INT4);
        return weight;
    }

    /** One layer's hand-overs: q/k/v, the gated MLP, the down product into the residual. */
    private static NDArray[] layer(CpuKernels kernels, NDArray x, NDArray inner, ProjectionWeight[] qkv,
            ProjectionWeight gate, ProjectionWeight up, ProjectionWeight down) {
        NDArray[] out = new NDArray[5];
        NDArray[] projected = kernels.projectAll(x, qkv, null, false);
        System.arraycopy(projected, 0, out, 0, 3);
        out[3] = kernels.gatedProject(x, gate, up, HiddenActivation.SILU, null, false);
        out[4] = kernels.projectAdd(inner, down, x.duplicate(), null, false);
        return out;
    }

    @Test
    void withABudgetDecodeStepsReadTheNextHandOverAheadAndComputeWhatTheyComputeWithout() throws InterruptedException {
        assumeTrue(CoreWorkers.PARALLELISM > 1, "one core: no worker to read ahead");
        int in = 512;
        ProjectionWeight[] qkv = {projection(512, in), projection(128, in), projection(128, in)};
        ProjectionWeight gate = projection(1408, in);
        ProjectionWeight up = projection(1408, in);
        ProjectionWeight down = projection(in, 1408);
        NDArray x = manager.randomNormal(new Shape(1, 1, in));
        NDArray inner = manager.randomNormal(new Shape(1, 1, 1408));
        System.setProperty(WeightReadAhead.PROPERTY, "4096");
        CpuKernels on;
        try {
            on = new CpuKernels(true, true);
        } finally {
            System.clearProperty(WeightReadAhead.PROPERTY);
        }
        CpuKernels off = new CpuKernels(true, true);
        assertTrue(on.toString().contains("read ahead 4096 KiB"), on.toString());
        assertTrue(off.toString().contains("read ahead off"), off.toString());

        NDArray[] without = layer(off, x, inner, qkv, gate, up, down);
        layer(off, x, inner, qkv, gate, up, down);
        assertFalse(WeightReadAhead.knowsNext(qkv[0].compressed()), "off by default: nothing learned");

        int before = WeightReadAhead.chunksRead();
        NDArray[] with = null;
        for (int step = 0; step < 3; step++) {
            with = layer(on, x, inner, qkv, gate, up, down);
        }
        assertTrue(WeightReadAhead.knowsNext(qkv[0].compressed()), "q/k/v's successor learned");
        assertTrue(WeightReadAhead.knowsNext(gate.compressed()), "the gated MLP's successor learned");
        assertTrue(WeightReadAhead.knowsNext(down.compressed()), "the down product's successor learned");
        long deadline = System.nanoTime() + 10_000_000_000L;
        while (WeightReadAhead.chunksRead() == before && System.nanoTime() < deadline) {
            Thread.sleep(1);
        }
        assertTrue(WeightReadAhead.chunksRead() > before, "the workers read ahead");
        for (int i = 0; i < without.length; i++) {
            assertArrayEquals(without[i].toFloatArray(), with[i].toFloatArray(), 0f, "output " + i);
        }
    }

    @Test
    void aPlanReadsEachCoresFirstRunOfEveryWeightBeforeItsSecond() {
        assumeTrue(CoreWorkers.PARALLELISM == 2, "the order below is two cores'");
        CompressedWeight gate = compressed(1024, 256, WeightFormat.INT4); // a run: 32 rows of 128 bytes, one chunk
        CompressedWeight up = compressed(1024, 256, WeightFormat.INT4);
        WeightReadAhead.Plan plan = WeightReadAhead.Plan.of(new CompressedWeight[] {gate, up}, true, 4 << 20);
        List<Object[]> chunks = plan.chunks();
        int runs = 2 * CoreWorkers.BLOCK_RUNS + CoreWorkers.POOL_RUNS;
        int rowBytes = 256 / 2; // int4: half a byte an input
        int secondStart = CoreWorkers.start(1024, CoreWorkers.BLOCK_RUNS, runs);
        int runRows = CoreWorkers.start(1024, 1, runs);
        ByteBuffer gateCodes = gate.directBuffers()[0];
        assertSame(gateCodes, chunks.get(0)[0], "the first core's gate codes first");
        assertEquals(0, chunks.get(0)[1]);
        assertSame(gateCodes, chunks.get(1)[0], "then the second core's");
        assertEquals(secondStart * rowBytes, chunks.get(1)[1]);
        // each core's first run: the gate's codes, its scales, then the up projection's codes
        assertSame(gate.directBuffers()[1], chunks.get(2)[0]);
        assertEquals(runRows * rowBytes, (int) chunks.get(0)[2] - (int) chunks.get(0)[1], "a run's rows");
        assertSame(up.directBuffers()[0], chunks.get(4)[0]);
        int bytes = 0;
        for (Object[] chunk : chunks) {
            bytes += (int) chunk[2] - (int) chunk[1];
            assertTrue((int) chunk[2] - (int) chunk[1] <= WeightReadAhead.CHUNK);
        }
        assertTrue(bytes <= 4 << 20, bytes + " bytes read");

        int small = 0;
        for (Object[] chunk : WeightReadAhead.Plan.of(new CompressedWeight[] {gate, up}, true, 16 << 10).chunks()) {
            small += (int) chunk[2] - (int) chunk[1];
        }
        assertEquals(16 << 10, small, "a 16 KiB budget: 8 KiB a core");

        List<Object[]> halves = WeightReadAhead.Plan.of(new CompressedWeight[] {gate, up}, false, 4 << 20).chunks();
        assertEquals(0, halves.get(0)[1], "one share a core: the first from row 0");
        assertEquals(512 * rowBytes, halves.get(1)[1], "the second from the middle row");
    }

    @Test
    void aReadDroppedByTheNextHandOverIsShortenedAndAWholeReadGrows() {
        CompressedWeight weight = compressed(1024, 256, WeightFormat.INT4);
        WeightReadAhead.Plan plan = WeightReadAhead.Plan.of(new CompressedWeight[] {weight}, true, 4 << 20);
        int all = plan.chunks().size();
        assertTrue(all >= 8, all + " chunks");
        assertEquals(all, plan.limit(), "at first: all of it");
        WeightReadAhead.Reading dropped = plan.start();
        for (int i = 0; i < 4; i++) {
            assertTrue(dropped.readChunk());
        }
        dropped.drop();
        assertFalse(dropped.readChunk(), "nothing is read after the drop");
        assertEquals(3, plan.limit(), "three quarters of the 4 read");
        WeightReadAhead.Reading whole = plan.start();
        for (int i = 0; i < 3; i++) {
            assertTrue(whole.readChunk());
        }
        assertFalse(whole.readChunk(), "the limit reached");
        whole.drop();
        assertEquals(4, plan.limit(), "read whole: one more (a quarter, at least one)");
    }
}
