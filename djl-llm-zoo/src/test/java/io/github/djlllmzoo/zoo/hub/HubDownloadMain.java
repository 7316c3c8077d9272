package io.github.djlllmzoo.zoo.hub;

import java.net.URI;
import java.nio.file.Path;

/** Loads a snapshot in a separate JVM: {@code HubDownloadMain <endpoint> <cacheDir> <repoId>}. */
public final class HubDownloadMain {

    private HubDownloadMain() {}

    public static void main(String[] args) throws Exception {
        HubConfig config =
                HubConfig.builder()
                        .endpoint(URI.create(args[0]))
                        .cacheDir(Path.of(args[1]))
                        .progressBars(false)
                        .build();
        new HubClient(config, null).snapshot(args[2]);
    }
}
