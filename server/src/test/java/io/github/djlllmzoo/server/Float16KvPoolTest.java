package io.github.djlllmzoo.server;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KvCacheDtype;
import io.github.djlllmzoo.blocks.SlotKvCache;
import io.github.djlllmzoo.blocks.SlotPasses;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The server's KV pool with a float16 cache ({@code --kv-cache-dtype float16}): a position takes half
 * the bytes, so the budget drawn from the memory available holds twice the positions, and the pool
 * reports the bytes it holds at the float16 size.
 */
class Float16KvPoolTest {

    @TempDir Path dir;

    private static long bytesPerToken(LocalModel model) {
        try (SlotKvCache shape = new SlotPasses(model.block()).newCache(model.model().getNDManager())) {
            return shape.bytesPerPosition();
        }
    }

    @Test
    void aFloat16PoolAdmitsTwiceTheTokensForTheSameBytes() throws Exception {
        try (LocalModel model = TinyModels.randomGpt2(dir, 64)) {
            CausalLmBlock block = model.block();
            long float32Bytes = bytesPerToken(model);
            block.setKvCacheDtype(KvCacheDtype.FLOAT16);
            long float16Bytes = bytesPerToken(model);
            assertEquals(float32Bytes, 2 * float16Bytes, "a float16 position takes half the bytes");
            long available = 41 * float32Bytes; // half of it: 20 float32 positions, 41 float16 ones
            assertEquals(20, KvPoolBudget.defaultTokens(8, 64, float32Bytes, available));
            assertEquals(41, KvPoolBudget.defaultTokens(8, 64, float16Bytes, available));

            GenerationConfig config = GenerationConfig.forCheckpoint(dir, model.config()).build().toBuilder()
                    .greedy()
                    .maxNewTokens(4)
                    .build();
            try (GenerationScheduler scheduler = new GenerationScheduler(model, ServerOptions.DEFAULTS
                    .withScheduling(2, 2, Duration.ZERO)
                    .withKvPool(32, 16)
                    .withTimeouts(Duration.ofMinutes(1), Duration.ZERO))) {
                GenerationJob job = scheduler.trySubmit(new long[] {464, 3290}, config, false);
                assertNotNull(job, "admitted");
                assertEquals(4, job.result().get(30, TimeUnit.SECONDS).tokenIds().length);
                assertEquals(float16Bytes, scheduler.stats().kvBytesPerToken(), "the pool's bytes at the float16 size");
            }
        }
    }
}
