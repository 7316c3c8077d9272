package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.RoundingBound;
import java.nio.file.Path;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;
import java.util.Arrays;
import java.util.Locale;

/**
 * A left-padded batch gives each row the logits it has alone: rotary positions are gathered per row
 * (counting only real tokens), in a plain DJL forward and across KV-cache decode steps.
 */
class LeftPaddingTest {

    private static final int PAD = 3;

    /** Shorter than the short row, so that padded and unpadded windows start differently. */
    private static final int WINDOW = 4;

    @TempDir Path temp;

    @ParameterizedTest
    @ValueSource(strings = {"llama-gqa", "qwen2-bias", "qwen2-tied-bf16", "qwen3-qknorm", "phi3-fused", "mistral-sliding-window",
        "gemma-bf16", "gemma2-softcap-window", "gemma3-local-global"})
    void leftPaddedRowMatchesItsUnpaddedLogitsWithAndWithoutCache(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        assertPaddedRowsMatchAlone(name, golden.dir(), golden);
    }

    /**
     * The same with a window shorter than both rows (the short row's {@code 10 - PAD} real tokens
     * included), so the window's start counts real tokens, not padding, in the mask and the cache.
     */
    @ParameterizedTest
    @MethodSource("io.github.djlllmzoo.zoo.GoldenCase#windowless")
    void leftPaddedRowMatchesItsUnpaddedLogitsUnderAWindowShorterThanThePrompt(String name)
            throws Exception {
        Path dir = GoldenCase.withWindow(name, WINDOW, temp.resolve(name));
        assertPaddedRowsMatchAlone(name + " window " + WINDOW, dir, GoldenCase.load(name));
    }

    /** Rows of {@code prompt}'s first 10 and {@code 10 - PAD} ids, then its first 2 greedy ids. */
    private static void assertPaddedRowsMatchAlone(String name, Path dir, GoldenCase prompt)
            throws Exception {
        long[] longRow = Arrays.copyOf(prompt.promptIds(), 10);
        long[] shortRow = Arrays.copyOfRange(prompt.promptIds(), 0, 10 - PAD);
        long[] next = Arrays.copyOf(prompt.greedyIds(), 2);
        try (LocalModel model = LocalModel.load(dir);
                NDManager manager = model.model().getNDManager().newSubManager()) {
            CausalLmBlock block = model.block();
            long[][] batch = new long[2][10];
            long[][] mask = new long[2][10];
            for (int j = 0; j < 10; j++) {
                batch[0][j] = j < PAD ? 0 : shortRow[j - PAD];
                mask[0][j] = j < PAD ? 0 : 1;
                batch[1][j] = longRow[j];
                mask[1][j] = 1;
            }
            NDArray ids = manager.create(batch);
            NDArray attention = manager.create(mask);

            // Plain DJL forward: [input_ids, attention_mask] -> positions from the mask.
            NDArray padded =
                    block.forward(
                                    new ParameterStore(manager, false),
                                    new NDList(ids, attention),
                                    false)
                            .singletonOrThrow();
            double maxError =
                    maxAbsDiff(
                            padded.get(new NDIndex("0, {}:, :", PAD)),
                            alone(block, manager, shortRow));
            maxError =
                    Math.max(
                            maxError,
                            maxAbsDiff(
                                    padded.get(new NDIndex("1, :, :")),
                                    alone(block, manager, longRow)));

            // Prefill the padded batch into a cache, then decode two tokens per row.
            try (KvCache cache = block.newCache(manager, 2, 12)) {
                NDArray positions = CausalLmBlock.positionsFromMask(attention);
                block.forward(null, ids, positions, attention, cache, true, false);
                NDArray last = positions.get(new NDIndex(":, -1:")); // (B, 1)
                for (int step = 0; step < next.length; step++) {
                    attention = attention.concat(manager.ones(new Shape(2, 1), DataType.INT64), 1);
                    last = last.add(1);
                    NDArray stepIds =
                            manager.create(new long[] {next[step], next[step]}, new Shape(2, 1));
                    NDArray logits =
                            block.forward(null, stepIds, last, attention, cache, true, false);
                    long[] shortSeq = append(shortRow, next, step + 1);
                    long[] longSeq = append(longRow, next, step + 1);
                    maxError =
                            Math.max(
                                    maxError,
                                    maxAbsDiff(
                                            logits.get(new NDIndex("0, :, :")),
                                            lastLogits(block, manager, shortSeq)));
                    maxError =
                            Math.max(
                                    maxError,
                                    maxAbsDiff(
                                            logits.get(new NDIndex("1, :, :")),
                                            lastLogits(block, manager, longSeq)));
                }
            }
            System.out.printf(
                    Locale.ROOT, "left padding %s: max |padded - alone| logit = %.3g%n", name, maxError);
            float bound = RoundingBound.ofLogits(model.config(), 10 + next.length, padded);
            assertTrue(
                    maxError < bound, name + ": max |padded - alone| = " + maxError + ", bound " + bound);
        }
    }

    private static NDArray alone(CausalLmBlock block, NDManager manager, long[] ids) {
        NDArray input = manager.create(ids, new Shape(1, ids.length));
        return block.forward(null, input, null, null, null, false, false).get(0); // (T, V)
    }

    private static NDArray lastLogits(CausalLmBlock block, NDManager manager, long[] ids) {
        NDArray input = manager.create(ids, new Shape(1, ids.length));
        return block.forward(null, input, null, null, null, true, false).get(0); // (1, V)
    }

    private static long[] append(long[] head, long[] tail, int count) {
        long[] out = Arrays.copyOf(head, head.length + count);
        System.arraycopy(tail, 0, out, head.length, count);
        return out;
    }

    private static double maxAbsDiff(NDArray a, NDArray b) {
        return LlamaKvCacheTest.maxAbsDiff(a, b);
    }
}
