package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/**
 * While sequences decode, a prefill pass takes as many chunks as keep one of its layers within the
 * recent decode passes' median, from the last prefill work's time per token and layer; with no
 * sequence decoding, or a budget in tokens, as many as allowed.
 */
class PrefillBudgetTest {

    private static final long MS = 1_000_000L;

    @Test
    void aPassTakesTheChunksWhoseLayerFitsTheDecodePassesMedian() {
        PrefillBudget budget = new PrefillBudget(ContinuousBatch.PREFILL_AS_LONG_AS_DECODE, 12);
        assertEquals(1, budget.passChunks(4, 64, true), "nothing measured yet: one chunk");
        for (long took : new long[] {5 * MS, 6 * MS, 7 * MS}) {
            budget.decodePassTook(took);
        }
        budget.prefillTook(64, 3, 3 * 2_400_000L); // 2.4 ms a 64-token layer
        assertEquals(2, budget.passChunks(4, 64, true), "6 ms of decode holds two 64-token layers' worth");
        budget.prefillTook(128, 1, 3_800_000L); // wider passes cost less a token
        assertEquals(3, budget.passChunks(4, 64, true));
        budget.prefillTook(64, 1, 100_000L);
        assertEquals(4, budget.passChunks(4, 64, true), "never more than the most allowed");
    }

    @Test
    void withNoSequenceDecodingOrABudgetInTokensAPassTakesTheMostAllowed() {
        PrefillBudget byTime = new PrefillBudget(ContinuousBatch.PREFILL_AS_LONG_AS_DECODE, 12);
        assertEquals(4, byTime.passChunks(4, 64, false));
        PrefillBudget byTokens = new PrefillBudget(64, 12);
        byTokens.decodePassTook(MS);
        byTokens.prefillTook(64, 1, 10 * MS);
        assertEquals(4, byTokens.passChunks(4, 64, true));
    }
}
