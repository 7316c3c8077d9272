package io.github.djlllmzoo.zoo.hub;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;

/**
 * Immutable settings of a {@link HubClient}: hub endpoint, cache directory, token, offline mode,
 * timeouts and progress display. {@link #fromEnvironment()} reads the same environment variables
 * as Python's {@code huggingface_hub}, so both share one cache.
 */
public final class HubConfig {

    /** The public Hugging Face hub. */
    public static final URI DEFAULT_ENDPOINT = URI.create("https://huggingface.co");

    /** Files at least this large get a progress bar unless configured otherwise: 10 MiB. */
    public static final long DEFAULT_PROGRESS_THRESHOLD = 10L * 1024 * 1024;

    private final URI endpoint;
    private final Path cacheDir;
    private final String token;
    private final boolean offline;
    private final Duration connectTimeout;
    private final Duration metadataTimeout;
    private final Duration downloadTimeout;
    private final int maxRetries;
    private final boolean progressBars;
    private final long progressThreshold;

    private HubConfig(Builder b) {
        this.endpoint = checkEndpoint(b.endpoint);
        this.cacheDir = Objects.requireNonNull(b.cacheDir, "cacheDir").toAbsolutePath().normalize();
        this.token = b.token == null || b.token.isBlank() ? null : b.token.trim();
        this.offline = b.offline;
        this.connectTimeout = positive(b.connectTimeout, "connectTimeout");
        this.metadataTimeout = positive(b.metadataTimeout, "metadataTimeout");
        this.downloadTimeout = positive(b.downloadTimeout, "downloadTimeout");
        if (b.maxRetries < 0) {
            throw new IllegalArgumentException("maxRetries must be >= 0: " + b.maxRetries);
        }
        this.maxRetries = b.maxRetries;
        this.progressBars = b.progressBars;
        this.progressThreshold = b.progressThreshold;
    }

    /**
     * Reads the configuration from the process environment; see {@link #fromEnvironment(Map)}.
     *
     * @return the configuration
     */
    public static HubConfig fromEnvironment() {
        return fromEnvironment(System.getenv());
    }

    /**
     * Reads the configuration from {@code env}, with {@code ~} being the {@code user.home} system
     * property.
     *
     * <ul>
     *   <li>{@code HF_ENDPOINT}: hub URL, default {@code https://huggingface.co}.
     *   <li>{@code HF_HUB_CACHE} (or the older {@code HUGGINGFACE_HUB_CACHE}), else {@code
     *       $HF_HOME/hub}; {@code HF_HOME} defaults to {@code $XDG_CACHE_HOME/huggingface}, then
     *       {@code ~/.cache/huggingface}.
     *   <li>{@code HF_TOKEN}, else {@code HUGGING_FACE_HUB_TOKEN}, else the file at {@code
     *       HF_TOKEN_PATH} or {@code $HF_HOME/token} (written by {@code huggingface-cli login}).
     *   <li>{@code HF_HUB_OFFLINE} (or {@code TRANSFORMERS_OFFLINE}) set to {@code 1}, {@code
     *       true}, {@code yes} or {@code on}: never use the network.
     *   <li>{@code HF_HUB_ETAG_TIMEOUT}, {@code HF_HUB_DOWNLOAD_TIMEOUT}: seconds, default 10.
     *   <li>{@code HF_HUB_DISABLE_PROGRESS_BARS}: no progress bars.
     * </ul>
     *
     * @param env the environment variables
     * @return the configuration
     * @throws IllegalArgumentException if a variable has an unusable value
     */
    public static HubConfig fromEnvironment(Map<String, String> env) {
        return fromEnvironment(env, Path.of(System.getProperty("user.home")));
    }

    static HubConfig fromEnvironment(Map<String, String> env, Path home) {
        Builder b = builder();
        String endpoint = get(env, "HF_ENDPOINT");
        if (endpoint != null) {
            b.endpoint(parseEndpoint(endpoint));
        }
        String xdg = get(env, "XDG_CACHE_HOME");
        Path hfHome =
                path(
                        get(env, "HF_HOME"),
                        home,
                        (xdg == null ? home.resolve(".cache") : expand(xdg, home))
                                .resolve("huggingface"));
        String cache = get(env, "HF_HUB_CACHE");
        if (cache == null) {
            cache = get(env, "HUGGINGFACE_HUB_CACHE");
        }
        b.cacheDir(path(cache, home, hfHome.resolve("hub")));
        String token = get(env, "HF_TOKEN");
        if (token == null) {
            token = get(env, "HUGGING_FACE_HUB_TOKEN");
        }
        if (token == null) {
            token = readToken(path(get(env, "HF_TOKEN_PATH"), home, hfHome.resolve("token")));
        }
        b.token(token);
        b.offline(isTrue(get(env, "HF_HUB_OFFLINE")) || isTrue(get(env, "TRANSFORMERS_OFFLINE")));
        String etagTimeout = get(env, "HF_HUB_ETAG_TIMEOUT");
        if (etagTimeout != null) {
            b.metadataTimeout(seconds("HF_HUB_ETAG_TIMEOUT", etagTimeout));
        }
        String downloadTimeout = get(env, "HF_HUB_DOWNLOAD_TIMEOUT");
        if (downloadTimeout != null) {
            b.downloadTimeout(seconds("HF_HUB_DOWNLOAD_TIMEOUT", downloadTimeout));
        }
        b.progressBars(!isTrue(get(env, "HF_HUB_DISABLE_PROGRESS_BARS")));
        return b.build();
    }

    private static String get(Map<String, String> env, String name) {
        String value = env.get(name);
        return value == null || value.isBlank() ? null : value.trim();
    }

    private static Path path(String value, Path home, Path fallback) {
        return value == null ? fallback : expand(value, home);
    }

    private static Path expand(String value, Path home) {
        if (value.equals("~")) {
            return home;
        }
        if (value.startsWith("~/")) {
            return home.resolve(value.substring(2));
        }
        return Path.of(value);
    }

    private static String readToken(Path file) {
        if (!Files.isRegularFile(file)) {
            return null;
        }
        try {
            String token = Files.readString(file, StandardCharsets.UTF_8).trim();
            return token.isEmpty() ? null : token;
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read the Hugging Face token file " + file, e);
        }
    }

    private static boolean isTrue(String value) {
        if (value == null) {
            return false;
        }
        String v = value.toLowerCase(Locale.ROOT);
        return v.equals("1") || v.equals("true") || v.equals("yes") || v.equals("on");
    }

    private static Duration seconds(String name, String value) {
        try {
            double s = Double.parseDouble(value);
            if (s > 0 && Double.isFinite(s)) {
                return Duration.ofMillis(Math.max(1, Math.round(s * 1000)));
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new IllegalArgumentException(
                name + " must be a positive number of seconds, got '" + value + "'");
    }

    private static URI parseEndpoint(String value) {
        try {
            return URI.create(value);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("HF_ENDPOINT is not a URL: '" + value + "'", e);
        }
    }

    private static URI checkEndpoint(URI endpoint) {
        Objects.requireNonNull(endpoint, "endpoint");
        String scheme = endpoint.getScheme();
        if (scheme == null
                || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))
                || endpoint.getHost() == null
                || endpoint.getQuery() != null
                || endpoint.getFragment() != null) {
            throw new IllegalArgumentException(
                    "Hub endpoint must be an http(s) URL such as https://huggingface.co: "
                            + endpoint);
        }
        String s = endpoint.toString();
        while (s.endsWith("/")) {
            s = s.substring(0, s.length() - 1);
        }
        return URI.create(s);
    }

    private static Duration positive(Duration d, String name) {
        if (d == null || d.isNegative() || d.isZero()) {
            throw new IllegalArgumentException(name + " must be positive: " + d);
        }
        return d;
    }

    /** @return a builder with the defaults: public hub, {@code ~/.cache/huggingface/hub}, online */
    public static Builder builder() {
        return new Builder();
    }

    /** @return a builder initialised with this configuration */
    public Builder toBuilder() {
        return new Builder()
                .endpoint(endpoint)
                .cacheDir(cacheDir)
                .token(token)
                .offline(offline)
                .connectTimeout(connectTimeout)
                .metadataTimeout(metadataTimeout)
                .downloadTimeout(downloadTimeout)
                .maxRetries(maxRetries)
                .progressBars(progressBars)
                .progressThreshold(progressThreshold);
    }

    /** @return the hub URL without trailing slash, e.g. {@code https://huggingface.co} */
    public URI endpoint() {
        return endpoint;
    }

    /** @return the absolute cache directory holding {@code models--org--name} folders */
    public Path cacheDir() {
        return cacheDir;
    }

    /** @return the access token, or {@code null} when none is configured */
    public String token() {
        return token;
    }

    /** @return whether the network must never be used */
    public boolean offline() {
        return offline;
    }

    /** @return the timeout for opening a connection */
    public Duration connectTimeout() {
        return connectTimeout;
    }

    /** @return the timeout for metadata requests (file list, HEAD) */
    public Duration metadataTimeout() {
        return metadataTimeout;
    }

    /** @return how long a download may wait for a response or go without receiving a byte */
    public Duration downloadTimeout() {
        return downloadTimeout;
    }

    /** @return how many times an interrupted download is resumed before giving up */
    public int maxRetries() {
        return maxRetries;
    }

    /** @return whether progress bars are shown */
    public boolean progressBars() {
        return progressBars;
    }

    /** @return the size in bytes from which a download shows a progress bar */
    public long progressThreshold() {
        return progressThreshold;
    }

    @Override
    public String toString() {
        return "HubConfig{endpoint="
                + endpoint
                + ", cacheDir="
                + cacheDir
                + ", token="
                + (token == null ? "none" : "<set>")
                + ", offline="
                + offline
                + '}';
    }

    /** Builder of {@link HubConfig}; every setting has a default. */
    public static final class Builder {

        private URI endpoint = DEFAULT_ENDPOINT;
        private Path cacheDir =
                Path.of(System.getProperty("user.home"), ".cache", "huggingface", "hub");
        private String token;
        private boolean offline;
        private Duration connectTimeout = Duration.ofSeconds(10);
        private Duration metadataTimeout = Duration.ofSeconds(10);
        private Duration downloadTimeout = Duration.ofSeconds(10);
        private int maxRetries = 3;
        private boolean progressBars = true;
        private long progressThreshold = DEFAULT_PROGRESS_THRESHOLD;

        private Builder() {}

        /**
         * @param endpoint the hub URL, e.g. {@code https://huggingface.co} or a mirror
         * @return this builder
         */
        public Builder endpoint(URI endpoint) {
            this.endpoint = endpoint;
            return this;
        }

        /**
         * @param cacheDir the directory holding {@code models--org--name} folders
         * @return this builder
         */
        public Builder cacheDir(Path cacheDir) {
            this.cacheDir = cacheDir;
            return this;
        }

        /**
         * @param token the access token, or {@code null} for anonymous access
         * @return this builder
         */
        public Builder token(String token) {
            this.token = token;
            return this;
        }

        /**
         * @param offline whether the network must never be used
         * @return this builder
         */
        public Builder offline(boolean offline) {
            this.offline = offline;
            return this;
        }

        /**
         * @param timeout the timeout for opening a connection
         * @return this builder
         */
        public Builder connectTimeout(Duration timeout) {
            this.connectTimeout = timeout;
            return this;
        }

        /**
         * @param timeout the timeout for metadata requests (file list, HEAD)
         * @return this builder
         */
        public Builder metadataTimeout(Duration timeout) {
            this.metadataTimeout = timeout;
            return this;
        }

        /**
         * @param timeout how long a download may wait for a response or go without a byte
         * @return this builder
         */
        public Builder downloadTimeout(Duration timeout) {
            this.downloadTimeout = timeout;
            return this;
        }

        /**
         * @param maxRetries how many times an interrupted download is resumed before giving up
         * @return this builder
         */
        public Builder maxRetries(int maxRetries) {
            this.maxRetries = maxRetries;
            return this;
        }

        /**
         * @param progressBars whether progress bars are shown
         * @return this builder
         */
        public Builder progressBars(boolean progressBars) {
            this.progressBars = progressBars;
            return this;
        }

        /**
         * @param bytes the size from which a download shows a progress bar
         * @return this builder
         */
        public Builder progressThreshold(long bytes) {
            this.progressThreshold = bytes;
            return this;
        }

        /** @return the configuration */
        public HubConfig build() {
            return new HubConfig(this);
        }
    }
}
