package io.github.djlllmzoo.zoo.hub;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class HubConfigTest {

    @TempDir Path home;

    @Test
    void defaultsMatchHuggingfaceHub() {
        HubConfig c = HubConfig.fromEnvironment(Map.of(), home);

        assertEquals(URI.create("https://huggingface.co"), c.endpoint());
        assertEquals(home.resolve(".cache/huggingface/hub"), c.cacheDir());
        assertNull(c.token());
        assertFalse(c.offline());
        assertTrue(c.progressBars());
        assertEquals(Duration.ofSeconds(10), c.metadataTimeout());
        assertEquals(Duration.ofSeconds(10), c.downloadTimeout());
    }

    @Test
    void readsEndpointCacheTokenOfflineAndTimeoutsFromTheEnvironment() {
        HubConfig c =
                HubConfig.fromEnvironment(
                        Map.of(
                                "HF_ENDPOINT", "http://mirror.example:8080/",
                                "HF_HUB_CACHE", "~/models/hf",
                                "HF_HOME", "/ignored/for/cache",
                                "HF_TOKEN", "hf_abc",
                                "HUGGING_FACE_HUB_TOKEN", "hf_older",
                                "HF_HUB_OFFLINE", "1",
                                "HF_HUB_ETAG_TIMEOUT", "2.5",
                                "HF_HUB_DOWNLOAD_TIMEOUT", "30",
                                "HF_HUB_DISABLE_PROGRESS_BARS", "true"),
                        home);

        assertEquals(URI.create("http://mirror.example:8080"), c.endpoint());
        assertEquals(home.resolve("models/hf"), c.cacheDir());
        assertEquals("hf_abc", c.token());
        assertTrue(c.offline());
        assertEquals(Duration.ofMillis(2500), c.metadataTimeout());
        assertEquals(Duration.ofSeconds(30), c.downloadTimeout());
        assertFalse(c.progressBars());
    }

    @Test
    void cacheFollowsHfHomeThenXdgCacheHome() {
        assertEquals(
                Path.of("/data/hf/hub"),
                HubConfig.fromEnvironment(Map.of("HF_HOME", "/data/hf"), home).cacheDir());
        assertEquals(
                Path.of("/xdg/huggingface/hub"),
                HubConfig.fromEnvironment(Map.of("XDG_CACHE_HOME", "/xdg"), home).cacheDir());
        assertEquals(
                Path.of("/old/hub"),
                HubConfig.fromEnvironment(Map.of("HUGGINGFACE_HUB_CACHE", "/old/hub"), home)
                        .cacheDir());
    }

    @Test
    void offlineAcceptsTheSameSpellingsAsPython() {
        for (String on : new String[] {"1", "true", "TRUE", "yes", "on"}) {
            assertTrue(HubConfig.fromEnvironment(Map.of("HF_HUB_OFFLINE", on), home).offline(), on);
        }
        for (String off : new String[] {"0", "false", "", "no"}) {
            assertFalse(
                    HubConfig.fromEnvironment(Map.of("HF_HUB_OFFLINE", off), home).offline(), off);
        }
    }

    @Test
    void tokenFallsBackToTheOlderVariableThenTheLoginTokenFile() throws Exception {
        assertEquals(
                "hf_older",
                HubConfig.fromEnvironment(Map.of("HUGGING_FACE_HUB_TOKEN", "hf_older"), home)
                        .token());
        Path hfHome = home.resolve("hf");
        Files.createDirectories(hfHome);
        Files.writeString(hfHome.resolve("token"), "hf_from_login\n");

        assertEquals(
                "hf_from_login",
                HubConfig.fromEnvironment(Map.of("HF_HOME", hfHome.toString()), home).token());
    }

    @Test
    void rejectsUnusableValuesNamingTheVariable() {
        IllegalArgumentException timeout =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                HubConfig.fromEnvironment(
                                        Map.of("HF_HUB_ETAG_TIMEOUT", "soon"), home));
        assertTrue(timeout.getMessage().contains("HF_HUB_ETAG_TIMEOUT"), timeout.getMessage());
        assertThrows(
                IllegalArgumentException.class,
                () -> HubConfig.fromEnvironment(Map.of("HF_ENDPOINT", "ftp://x"), home));
    }

    @Test
    void toStringDoesNotRevealTheToken() {
        HubConfig c = HubConfig.builder().cacheDir(home).token("hf_secret_value").build();

        assertFalse(c.toString().contains("hf_secret_value"), c.toString());
        assertEquals("hf_secret_value", c.toBuilder().build().token());
    }
}
