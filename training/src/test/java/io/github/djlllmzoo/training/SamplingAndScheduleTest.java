package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDManager;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.tracker.Tracker;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Set;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Test;

/** The data order, the held-out split and the learning-rate schedule. */
class SamplingAndScheduleTest {

    private static PackedTextDataset records(int count) {
        // Record i starts with token i * 2, so a record is identified by its first token.
        return PackedTextDataset.builder().setTokens(IntStream.range(0, 2 * count + 1).toArray()).setSequenceLength(2).build();
    }

    private static List<List<Long>> take(ShuffledBatchSampler sampler, RandomAccessDataset data, int count) {
        Iterator<List<Long>> it = sampler.sample(data);
        List<List<Long>> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            out.add(it.next());
        }
        return out;
    }

    @Test
    void everyEpochVisitsDistinctRecordsInFullBatches() {
        RandomAccessDataset data = records(10);
        List<List<Long>> batches = take(new ShuffledBatchSampler(3, 1, 0), data, 6); // 2 epochs of 3
        for (int epoch = 0; epoch < 2; epoch++) {
            Set<Long> seen = new HashSet<>();
            for (List<Long> batch : batches.subList(epoch * 3, epoch * 3 + 3)) {
                assertEquals(3, batch.size());
                seen.addAll(batch);
            }
            assertEquals(9, seen.size(), "epoch " + epoch + " repeats a record");
        }
        assertNotEquals(batches.subList(0, 3), batches.subList(3, 6), "each epoch is shuffled anew");
    }

    @Test
    void aStreamStartedAtBatchKContinuesTheFullStream() {
        RandomAccessDataset data = records(10);
        List<List<Long>> full = take(new ShuffledBatchSampler(3, 7, 0), data, 11);
        List<List<Long>> resumed = take(new ShuffledBatchSampler(3, 7, 4), data, 7);
        assertEquals(full.subList(4, 11), resumed);
        assertNotEquals(full, take(new ShuffledBatchSampler(3, 8, 0), data, 11), "the seed changes the order");
    }

    @Test
    void heldOutSplitTakesEveryKthRecordDeterministically() throws Exception {
        PackedTextDataset data = records(40);
        HeldOutSplit split = HeldOutSplit.of(data, 0.1);
        assertEquals(36, split.train().size());
        assertEquals(4, split.eval().size());
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            Set<Long> firstTokens = new HashSet<>();
            for (long i = 0; i < split.eval().size(); i++) {
                long first = split.eval().get(manager, i).getData().singletonOrThrow().toLongArray()[0];
                assertEquals(9, (first / 2) % 10, "record " + first / 2 + " is not every 10th");
                firstTokens.add(first);
            }
            for (long i = 0; i < split.train().size(); i++) {
                firstTokens.add(split.train().get(manager, i).getData().singletonOrThrow().toLongArray()[0]);
            }
            assertEquals(40, firstTokens.size(), "train and eval together cover every record once");
        }
        assertEquals(1, HeldOutSplit.of(records(5), 0.1).eval().size(), "small data still holds one record out");
    }

    @Test
    void learningRateWarmsUpLinearlyThenFollowsAHalfCosine() {
        float peak = 1e-3f;
        int warmup = 10;
        int steps = 110;
        Tracker tracker = LearningRateSchedule.warmupCosine(peak, warmup, steps);
        // DJL's trackers compute in float: half a dozen roundings of values up to the peak
        double tolerance = 4 * Math.ulp(peak);
        for (int u : new int[] {1, 5, 9}) {
            assertEquals(peak * u / warmup, tracker.getNewValue(u), tolerance, "warm-up update " + u);
        }
        for (int u : new int[] {10, 40, 60, 100, 110}) {
            double expected = peak * (1 + Math.cos(Math.PI * (u - warmup) / (steps - warmup + 1))) / 2;
            assertEquals(expected, tracker.getNewValue(u), tolerance, "decay update " + u);
        }
        assertTrue(tracker.getNewValue(steps) > 0, "the last update still moves the weights");
    }
}
