package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCache;
import io.github.djlllmzoo.blocks.RoundingBound;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import java.util.Arrays;
import java.util.Locale;

/**
 * Decoding with the KV cache (a prefill chunk, then one token per step) gives the logits of a full
 * recompute over the whole sequence at every position: rotary positions continue across steps and
 * the cache holds the right key/value heads.
 */
class LlamaKvCacheTest {

    @ParameterizedTest
    @MethodSource("io.github.djlllmzoo.zoo.GoldenCase#llamaShaped")
    void cachedDecodingEqualsFullRecomputeAtEveryStep(String name) throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        long[] ids =
                Arrays.copyOf(
                        golden.promptIds(), golden.promptIds().length + golden.greedyIds().length);
        System.arraycopy(
                golden.greedyIds(), 0, ids, golden.promptIds().length, golden.greedyIds().length);
        int prefill = golden.promptIds().length;
        try (LocalModel model = LocalModel.load(golden.dir());
                NDManager manager = model.model().getNDManager().newSubManager()) {
            CausalLmBlock block = model.block();
            NDArray full =
                    block.forward(
                            null,
                            manager.create(ids, new Shape(1, ids.length)),
                            null,
                            null,
                            null,
                            false,
                            false);
            double maxError;
            try (KvCache cache = block.newCache(manager, 1, 8)) {
                long[] head = Arrays.copyOf(ids, prefill);
                NDArray logits =
                        block.forward(
                                null,
                                manager.create(head, new Shape(1, prefill)),
                                null,
                                null,
                                cache,
                                false,
                                false);
                maxError = maxAbsDiff(full.get(new NDIndex(":, :{}, :", prefill)), logits);
                for (int i = prefill; i < ids.length; i++) {
                    try (NDManager step = manager.newSubManager()) {
                        NDArray one =
                                block.forward(
                                        null,
                                        step.create(new long[] {ids[i]}, new Shape(1, 1)),
                                        null,
                                        null,
                                        cache,
                                        false,
                                        false);
                        maxError =
                                Math.max(
                                        maxError,
                                        maxAbsDiff(
                                                full.get(new NDIndex(":, {}:{}, :", i, i + 1)),
                                                one));
                    }
                }
                assertEquals(ids.length, cache.length());
            }
            System.out.printf(
                    Locale.ROOT, "kv cache %s: max |cached - full| logit = %.3g%n", name, maxError);
            float bound = RoundingBound.ofLogits(model.config(), ids.length, full);
            assertTrue(maxError < bound, name + ": max |cached - full| = " + maxError + ", bound " + bound);
        }
    }

    static double maxAbsDiff(NDArray a, NDArray b) {
        assertEquals(a.getShape(), b.getShape());
        return a.sub(b).abs().max().getFloat();
    }
}
