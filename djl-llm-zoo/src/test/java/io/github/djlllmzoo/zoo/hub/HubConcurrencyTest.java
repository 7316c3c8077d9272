package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HubConcurrencyTest {

    @TempDir Path cache;
    private FakeHub hub;
    private FakeHub.Repo repo;

    @BeforeEach
    void start() throws Exception {
        hub = new FakeHub();
        repo = HubFixtures.tinyGpt2(hub, "org/shared", 400_000);
    }

    @AfterEach
    void stop() {
        hub.close();
    }

    private void assertEachFileDownloadedOnceAndIntact(Path snapshot) throws Exception {
        for (String name : HubFixtures.NEEDED) {
            String path =
                    repo.files.get(name).lfs()
                            ? "/cdn/" + repo.etag(name)
                            : "/org/shared/resolve/" + repo.commit + "/" + name;
            assertEquals(1, hub.requests("GET", path).size(), name + " downloaded once");
            assertArrayEquals(repo.content(name), Files.readAllBytes(snapshot.resolve(name)), name);
        }
        assertTrue(HubFixtures.find(cache, ".incomplete").isEmpty());
        assertTrue(HubFixtures.find(cache, ".tmp").isEmpty());
    }

    @Test
    void eightThreadsLoadingTheSameModelDownloadEachFileOnce() throws Exception {
        hub.chunkDelayMillis = 20;
        ExecutorService pool = Executors.newFixedThreadPool(8);
        CountDownLatch go = new CountDownLatch(1);
        List<Future<Path>> results = new ArrayList<>();
        try {
            for (int i = 0; i < 8; i++) {
                results.add(
                        pool.submit(
                                () -> {
                                    go.await();
                                    return HubFixtures.client(hub, cache).snapshot("org/shared");
                                }));
            }
            go.countDown();
            HashSet<Path> snapshots = new HashSet<>();
            for (Future<Path> f : results) {
                snapshots.add(f.get(20, TimeUnit.SECONDS));
            }

            assertEquals(1, snapshots.size());
            assertEachFileDownloadedOnceAndIntact(snapshots.iterator().next());
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void separateProcessesLoadingTheSameModelShareTheCacheSafely() throws Exception {
        hub.chunkDelayMillis = 100;
        String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<Process> processes = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            ProcessBuilder pb =
                    new ProcessBuilder(
                            java,
                            "-Xshare:auto",
                            "-XX:TieredStopAtLevel=1",
                            "-cp",
                            System.getProperty("java.class.path"),
                            HubDownloadMain.class.getName(),
                            hub.endpoint().toString(),
                            cache.toString(),
                            "org/shared");
            pb.environment().put("OPT_OUT_TRACKING", "true");
            pb.redirectErrorStream(true);
            pb.redirectOutput(cache.resolveSibling("process-" + i + ".log").toFile());
            processes.add(pb.start());
        }
        for (int i = 0; i < processes.size(); i++) {
            Process p = processes.get(i);
            assertTrue(p.waitFor(30, TimeUnit.SECONDS), "process " + i + " finished");
            File log = cache.resolveSibling("process-" + i + ".log").toFile();
            assertEquals(0, p.exitValue(), Files.readString(log.toPath()));
        }

        assertEachFileDownloadedOnceAndIntact(
                cache.resolve("models--org--shared/snapshots/" + repo.commit));
    }
}
