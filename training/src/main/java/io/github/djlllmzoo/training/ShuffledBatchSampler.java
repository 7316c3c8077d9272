package io.github.djlllmzoo.training;

import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Sampler;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Random;

/**
 * An endless stream of batches for step-based training: epoch after epoch, each a fresh seeded
 * shuffle of the dataset cut into full batches (the remainder of an epoch is dropped; a dataset
 * smaller than one batch gives one short batch per epoch). The stream depends only on the seed, the
 * dataset size and the batch size, and can start at any batch, so a resumed run sees exactly the
 * batches the interrupted one would have seen next.
 */
public final class ShuffledBatchSampler implements Sampler {

    private final int batchSize;
    private final long seed;
    private final long firstBatch;

    /**
     * @param batchSize records per batch
     * @param seed the shuffle seed
     * @param firstBatch how many batches of the stream to skip
     */
    public ShuffledBatchSampler(int batchSize, long seed, long firstBatch) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be at least 1, got " + batchSize);
        }
        if (firstBatch < 0) {
            throw new IllegalArgumentException("first batch must be non-negative, got " + firstBatch);
        }
        this.batchSize = batchSize;
        this.seed = seed;
        this.firstBatch = firstBatch;
    }

    @Override
    public Iterator<List<Long>> sample(RandomAccessDataset dataset) {
        int size = Math.toIntExact(dataset.size());
        if (size == 0) {
            throw new IllegalArgumentException("cannot sample batches from an empty dataset");
        }
        return new Stream(size);
    }

    @Override
    public int getBatchSize() {
        return batchSize;
    }

    private final class Stream implements Iterator<List<Long>> {
        private final int size;
        private final int perBatch;
        private final long batchesPerEpoch;
        private final Random random = new Random(seed);
        private long[] order;
        private long epoch = -1;
        private long next;

        Stream(int size) {
            this.size = size;
            this.perBatch = Math.min(batchSize, size);
            this.batchesPerEpoch = size / perBatch;
            this.next = firstBatch;
        }

        @Override
        public boolean hasNext() {
            return true;
        }

        @Override
        public List<Long> next() {
            if (next == Long.MAX_VALUE) {
                throw new NoSuchElementException();
            }
            long wantEpoch = next / batchesPerEpoch;
            while (epoch < wantEpoch) {
                order = shuffle();
                epoch++;
            }
            int from = Math.toIntExact((next % batchesPerEpoch) * perBatch);
            List<Long> batch = new ArrayList<>(perBatch);
            for (int i = 0; i < perBatch; i++) {
                batch.add(order[from + i]);
            }
            next++;
            return batch;
        }

        /** The next epoch's order: a Fisher-Yates shuffle drawn from the seeded generator. */
        private long[] shuffle() {
            long[] indices = new long[size];
            for (int i = 0; i < size; i++) {
                indices[i] = i;
            }
            for (int i = size - 1; i > 0; i--) {
                int j = random.nextInt(i + 1);
                long swap = indices[i];
                indices[i] = indices[j];
                indices[j] = swap;
            }
            return indices;
        }
    }
}
