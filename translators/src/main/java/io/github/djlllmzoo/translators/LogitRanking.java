package io.github.djlllmzoo.translators;

import java.util.Arrays;

/** Ranks tokens by logit without sorting the whole vocabulary. */
final class LogitRanking {

    private LogitRanking() {}

    /**
     * The {@code m} most likely tokens among the finite logits, most likely first (ties by index).
     *
     * @param logits the logits
     * @param m how many, at most the number of finite logits
     * @return their indices in descending order of logit
     */
    static int[] mostLikely(float[] logits, int m) {
        // keys order like (-logit, index): the m smallest keys are the m most likely tokens,
        // gathered in a max-heap of keys
        long[] heap = new long[m];
        int size = 0;
        for (int i = 0; i < logits.length; i++) {
            if (!Float.isFinite(logits[i])) {
                continue;
            }
            long key = key(logits[i], i);
            if (size < m) {
                heap[size] = key;
                siftUp(heap, size++);
            } else if (key < heap[0]) {
                heap[0] = key;
                siftDown(heap, size);
            }
        }
        Arrays.sort(heap, 0, size);
        int[] order = new int[size];
        for (int i = 0; i < size; i++) {
            order[i] = (int) heap[i];
        }
        return order;
    }

    /** The negated value's bits made to compare like the float, above the index. */
    private static long key(float logit, int index) {
        int bits = Float.floatToIntBits(-logit + 0f);
        bits ^= (bits >> 31) & 0x7fffffff;
        return ((long) bits << 32) | index;
    }

    private static void siftUp(long[] heap, int i) {
        while (i > 0) {
            int parent = (i - 1) / 2;
            if (heap[parent] >= heap[i]) {
                return;
            }
            swap(heap, parent, i);
            i = parent;
        }
    }

    private static void siftDown(long[] heap, int size) {
        int i = 0;
        while (true) {
            int left = 2 * i + 1;
            int largest = i;
            if (left < size && heap[left] > heap[largest]) {
                largest = left;
            }
            if (left + 1 < size && heap[left + 1] > heap[largest]) {
                largest = left + 1;
            }
            if (largest == i) {
                return;
            }
            swap(heap, i, largest);
            i = largest;
        }
    }

    private static void swap(long[] heap, int a, int b) {
        long t = heap[a];
        heap[a] = heap[b];
        heap[b] = t;
    }
}
