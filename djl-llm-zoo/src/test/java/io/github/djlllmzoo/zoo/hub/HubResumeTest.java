package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HubResumeTest {

    private static final int SIZE = 600_000;

    @TempDir Path cache;
    private FakeHub hub;
    private FakeHub.Repo repo;
    private String etag;

    @BeforeEach
    void start() throws Exception {
        hub = new FakeHub();
        repo = HubFixtures.tinyGpt2(hub, "org/big", SIZE);
        etag = repo.etag("model.safetensors");
    }

    @AfterEach
    void stop() {
        hub.close();
    }

    private List<String> cdnRanges() {
        return hub.requests("GET", "/cdn/" + etag).stream().map(FakeHub.Request::range).toList();
    }

    private void assertWeightsIntact(Path snapshot) throws Exception {
        byte[] got = Files.readAllBytes(snapshot.resolve("model.safetensors"));
        assertArrayEquals(repo.content("model.safetensors"), got);
        assertEquals(etag, FakeHub.sha256(got));
        assertTrue(HubFixtures.find(cache, ".incomplete").isEmpty());
    }

    @Test
    void droppedConnectionMidFileIsResumedWithARangeRequest() throws Exception {
        hub.dropFile = "model.safetensors";
        hub.dropAfterBytes = 250_000;
        hub.drops.set(1);

        Path snapshot = HubFixtures.client(hub, cache).snapshot("org/big");

        List<String> ranges = cdnRanges();
        assertEquals(2, ranges.size(), ranges.toString());
        assertEquals(null, ranges.get(0));
        assertTrue(ranges.get(1).matches("bytes=[1-9][0-9]*-"), ranges.toString());
        long resumedAt = Long.parseLong(ranges.get(1).replaceAll("\\D", ""));
        assertTrue(resumedAt <= 250_000, ranges.toString());
        assertWeightsIntact(snapshot);
    }

    @Test
    void partialDownloadLeftByAnEarlierRunIsResumed() throws Exception {
        Path part = cache.resolve("models--org--big/blobs/" + etag + ".incomplete");
        Files.createDirectories(part.getParent());
        Files.write(part, Arrays.copyOf(repo.content("model.safetensors"), 100_000));

        Path snapshot = HubFixtures.client(hub, cache).snapshot("org/big");

        assertEquals(List.of("bytes=100000-"), cdnRanges());
        assertWeightsIntact(snapshot);
    }

    @Test
    void serverIgnoringTheRangeRestartsFromZero() throws Exception {
        Path part = cache.resolve("models--org--big/blobs/" + etag + ".incomplete");
        Files.createDirectories(part.getParent());
        Files.write(part, new byte[100_000]);
        hub.ignoreRange = true;

        Path snapshot = HubFixtures.client(hub, cache).snapshot("org/big");

        assertEquals(List.of("bytes=100000-"), cdnRanges());
        assertWeightsIntact(snapshot);
    }

    @Test
    void stalledDownloadIsAbandonedAfterTheTimeoutAndResumed() throws Exception {
        hub.stallFile = "model.safetensors";
        hub.stallMillis = 3_000;
        HubClient client =
                new HubClient(
                        HubFixtures.config(hub, cache)
                                .downloadTimeout(Duration.ofMillis(300))
                                .build(),
                        null);

        long start = System.nanoTime();
        Path snapshot = client.snapshot("org/big");

        assertTrue(System.nanoTime() - start < 2_500_000_000L, "did not wait for the stall");
        List<String> ranges = cdnRanges();
        assertEquals(2, ranges.size(), ranges.toString());
        assertTrue(ranges.get(1).startsWith("bytes="), ranges.toString());
        assertWeightsIntact(snapshot);
    }

    @Test
    void connectionThatKeepsDroppingFailsAfterBoundedRetriesAndKeepsThePartialFile() {
        hub.dropFile = "model.safetensors";
        hub.dropAfterBytes = 65_536;
        hub.drops.set(Integer.MAX_VALUE);
        HubClient client =
                new HubClient(HubFixtures.config(hub, cache).maxRetries(2).build(), null);

        HubException e = assertThrows(HubException.class, () -> client.snapshot("org/big"));

        assertTrue(e.getMessage().contains("'model.safetensors'"), e.getMessage());
        assertTrue(e.getMessage().contains("'org/big'"), e.getMessage());
        assertTrue(e.getMessage().contains("failed 3 times"), e.getMessage());
        assertEquals(3, cdnRanges().size());
        assertTrue(
                Files.exists(cache.resolve("models--org--big/blobs/" + etag + ".incomplete")),
                "kept for resuming later");
        assertFalse(Files.exists(cache.resolve("models--org--big/blobs/" + etag)));
    }
}
