package io.github.djlllmzoo.training;

import ai.djl.training.dataset.RandomAccessDataset;
import java.util.ArrayList;
import java.util.List;

/**
 * A deterministic train/evaluation split of one dataset: every {@code k}-th record (records {@code
 * k-1, 2k-1, ...}) is held out, so the held-out part is spread over all the data and the same on
 * every run. When the dataset has fewer than {@code k} records but at least two, its last record
 * is held out.
 *
 * @param train the records to train on
 * @param eval the held-out records
 */
public record HeldOutSplit(RandomAccessDataset train, RandomAccessDataset eval) {

    /**
     * Splits a dataset.
     *
     * @param dataset the dataset; both parts keep its batchifiers
     * @param fraction the share to hold out, in (0, 0.5]; every {@code round(1/fraction)}-th
     *     record is held out
     * @return the split
     * @throws IllegalArgumentException if the fraction is out of range or the dataset has fewer
     *     than two records
     */
    public static HeldOutSplit of(RandomAccessDataset dataset, double fraction) {
        if (!(fraction > 0 && fraction <= 0.5)) {
            throw new IllegalArgumentException("held-out fraction must be in (0, 0.5], got " + fraction);
        }
        long size = dataset.size();
        if (size < 2) {
            throw new IllegalArgumentException(
                    "cannot hold out evaluation data from " + size
                            + " record(s); give more data or separate evaluation data");
        }
        long every = Math.max(2, Math.round(1 / fraction));
        List<Long> train = new ArrayList<>();
        List<Long> eval = new ArrayList<>();
        for (long i = 0; i < size; i++) {
            boolean heldOut = size < every ? i == size - 1 : (i + 1) % every == 0;
            (heldOut ? eval : train).add(i);
        }
        return new HeldOutSplit(dataset.subDataset(train), dataset.subDataset(eval));
    }
}
