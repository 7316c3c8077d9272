package io.github.djlllmzoo.translators;

/**
 * Keeps the {@code k} most likely tokens: every logit below the {@code k}-th largest becomes
 * -infinity (tokens tied with the {@code k}-th are kept, as in Hugging Face).
 */
public final class TopKProcessor implements LogitsProcessor {

    private final int k;

    /** @param k tokens to keep (≥ 1) */
    public TopKProcessor(int k) {
        if (k < 1) {
            throw new IllegalArgumentException("topK (top_k) must be at least 1 here, got " + k);
        }
        this.k = k;
    }

    @Override
    public void process(long[] context, int length, float[] logits) {
        if (k >= logits.length) {
            return;
        }
        float threshold = kthLargest(logits, k);
        for (int i = 0; i < logits.length; i++) {
            if (logits[i] < threshold) {
                logits[i] = Float.NEGATIVE_INFINITY;
            }
        }
    }

    /**
     * The {@code k}-th largest value, by a min-heap of the {@code k} largest seen so far.
     *
     * @param values the values
     * @param k the rank (1 = the largest), at most {@code values.length}
     * @return the value of that rank
     */
    static float kthLargest(float[] values, int k) {
        float[] heap = new float[k];
        int size = 0;
        for (float v : values) {
            if (size < k) {
                heap[size] = v;
                siftUp(heap, size++);
            } else if (v > heap[0]) {
                heap[0] = v;
                siftDown(heap, size);
            }
        }
        return heap[0];
    }

    private static void siftUp(float[] heap, int i) {
        while (i > 0) {
            int parent = (i - 1) / 2;
            if (heap[parent] <= heap[i]) {
                return;
            }
            swap(heap, parent, i);
            i = parent;
        }
    }

    private static void siftDown(float[] heap, int size) {
        int i = 0;
        while (true) {
            int left = 2 * i + 1;
            int smallest = i;
            if (left < size && heap[left] < heap[smallest]) {
                smallest = left;
            }
            if (left + 1 < size && heap[left + 1] < heap[smallest]) {
                smallest = left + 1;
            }
            if (smallest == i) {
                return;
            }
            swap(heap, i, smallest);
            i = smallest;
        }
    }

    private static void swap(float[] heap, int a, int b) {
        float t = heap[a];
        heap[a] = heap[b];
        heap[b] = t;
    }
}
