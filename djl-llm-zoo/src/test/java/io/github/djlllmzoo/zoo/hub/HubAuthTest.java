package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HubAuthTest {

    private static final String TOKEN = "hf_testtoken123";

    @TempDir Path cache;
    private FakeHub hub;
    private FakeHub.Repo repo;

    @BeforeEach
    void start() throws Exception {
        hub = new FakeHub();
        repo = HubFixtures.tinyGpt2(hub, "meta/gated-llm", 30_000).gated(TOKEN);
    }

    @AfterEach
    void stop() {
        hub.close();
    }

    private HubClient client(String token) {
        return new HubClient(HubFixtures.config(hub, cache).token(token).build(), null);
    }

    @Test
    void gatedModelWithoutTokenFailsSayingHowToGetAccess() {
        GatedModelException e =
                assertThrows(
                        GatedModelException.class, () -> client(null).snapshot("meta/gated-llm"));

        assertEquals("meta/gated-llm", e.getRepoId());
        assertEquals(401, e.getStatus());
        assertTrue(e.getMessage().contains("'meta/gated-llm'"), e.getMessage());
        assertTrue(e.getMessage().contains("gated or private"), e.getMessage());
        assertTrue(e.getMessage().contains(hub.endpoint() + "/meta/gated-llm"), e.getMessage());
        assertTrue(e.getMessage().contains("HF_TOKEN"), e.getMessage());
        assertTrue(e.getMessage().contains("no token was sent"), e.getMessage());
        assertNull(hub.requests().get(0).authorization());
    }

    @Test
    void gatedModelWithAWrongTokenSaysTheTokenHasNoAccess() {
        GatedModelException e =
                assertThrows(
                        GatedModelException.class,
                        () -> client("hf_wrong").file("meta/gated-llm", "main", "config.json"));

        assertTrue(e.getMessage().contains("has no access"), e.getMessage());
    }

    @Test
    void gatedModelWithTheTokenDownloadsAndSendsItAsBearer() throws Exception {
        Path snapshot = client(TOKEN).snapshot("meta/gated-llm");

        assertArrayEquals(
                repo.content("model.safetensors"),
                Files.readAllBytes(snapshot.resolve("model.safetensors")));
        List<FakeHub.Request> requests = hub.requests();
        assertFalse(requests.isEmpty());
        for (FakeHub.Request r : requests) {
            assertEquals("Bearer " + TOKEN, r.authorization(), r.path());
        }
    }

    @Test
    void tokenIsNotForwardedToARedirectTargetOnAnotherOrigin() throws Exception {
        hub.cdn = FakeHub.Cdn.OTHER_ORIGIN;

        Path snapshot = client(TOKEN).snapshot("meta/gated-llm");

        assertArrayEquals(
                repo.content("model.safetensors"),
                Files.readAllBytes(snapshot.resolve("model.safetensors")));
        List<FakeHub.Request> cdn =
                hub.requests().stream().filter(r -> r.port() == hub.otherOriginPort()).toList();
        assertEquals(1, cdn.size(), "the weights came from the other origin");
        assertNull(cdn.get(0).authorization());
        assertTrue(
                hub.requests().stream()
                        .filter(r -> r.port() == hub.port())
                        .allMatch(r -> ("Bearer " + TOKEN).equals(r.authorization())));
    }
}
