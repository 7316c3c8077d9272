package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class KvPoolBudgetTest {

    private static final long MIB = 1L << 20;

    @Test
    void everyRowGetsAContextWindowWhereHalfTheAvailableMemoryHoldsThem() {
        // Llama-110M: 12 layers x 12 heads x 64 x 2 x 4 bytes = 73,728 bytes a position; 8 x 1,024 = 576 MiB
        assertEquals(8 * 1024, KvPoolBudget.defaultTokens(8, 1024, 73_728, 16_384 * MIB));
    }

    @Test
    void aLongContextWindowIsCappedAtHalfTheAvailableMemory() {
        // Llama 3.2 1B: 16 layers x 8 heads x 64 x 2 x 4 bytes = 131,072 bytes; 8 x 131,072 positions = 128 GiB
        long bytesPerToken = 131_072;
        long available = 16_384 * MIB;
        long budget = KvPoolBudget.defaultTokens(8, 131_072, bytesPerToken, available);
        assertEquals((long) (available * KvPoolBudget.SHARE_OF_AVAILABLE / bytesPerToken), budget);
        assertTrue(budget * bytesPerToken <= available / 2);
    }

    @Test
    void unknownMemoryLeavesTheWindowsBudget() {
        assertEquals(8L * 4096, KvPoolBudget.defaultTokens(8, 4096, 65_536, -1));
    }

    @Test
    void noMemoryAvailableStillLeavesOnePosition() {
        assertEquals(1, KvPoolBudget.defaultTokens(8, 4096, 65_536, 0));
    }

    @Test
    void theMemoryAvailableIsReadOnThisMachine() {
        assertTrue(KvPoolBudget.availableBytes() > 0, "MemAvailable or the JVM's free memory");
    }
}
