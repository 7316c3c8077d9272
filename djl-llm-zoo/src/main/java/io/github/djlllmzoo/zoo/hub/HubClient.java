package io.github.djlllmzoo.zoo.hub;

import ai.djl.repository.zoo.ModelNotFoundException;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParseException;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import java.io.IOException;
import java.io.InputStream;
import java.io.InterruptedIOException;
import java.io.OutputStream;
import java.io.PrintStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpHeaders;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse.BodyHandler;
import java.net.http.HttpResponse.BodyHandlers;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Predicate;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Downloads model files from the Hugging Face hub into the cache shared with Python's {@code
 * huggingface_hub} and {@code transformers}, and reuses what is already there.
 *
 * <p>Every file is checked against the hash the hub names it by before it enters the cache;
 * interrupted downloads resume with HTTP range requests; concurrent downloads of one file, by
 * threads or processes, are serialized by a lock per blob. Instances are thread-safe.
 */
public final class HubClient {

    /** The revision used when none is given. */
    public static final String DEFAULT_REVISION = "main";

    /** Files a snapshot also fetches when the repository has them. */
    public static final List<String> OPTIONAL_FILES =
            List.of(
                    CheckpointFiles.GENERATION_CONFIG,
                    CheckpointFiles.TOKENIZER,
                    CheckpointFiles.TOKENIZER_CONFIG,
                    CheckpointFiles.SPECIAL_TOKENS_MAP,
                    CheckpointFiles.VOCAB,
                    CheckpointFiles.MERGES);

    private static final Logger logger = LoggerFactory.getLogger(HubClient.class);
    private static final List<String> WEIGHT_SUFFIXES =
            List.of(
                    ".safetensors",
                    ".bin",
                    ".pt",
                    ".pth",
                    ".ckpt",
                    ".h5",
                    ".msgpack",
                    ".gguf",
                    ".onnx");
    private static final int MAX_REDIRECTS = 10;
    private static final String USER_AGENT =
            "djl-llm-zoo (java/" + Runtime.version().feature() + ")";
    private static final String OFFLINE_REASON = "Offline mode is on (HF_HUB_OFFLINE)";

    private final HubConfig config;
    private final HubCache cache;
    private final HttpClient http;
    private final PrintStream progressOut;

    /**
     * Creates a client that draws progress bars on {@code System.err}.
     *
     * @param config the settings
     */
    public HubClient(HubConfig config) {
        this(config, System.err);
    }

    /**
     * Creates a client that draws progress bars on {@code progressOut}.
     *
     * @param config the settings
     * @param progressOut where progress bars go, or {@code null} for none
     */
    public HubClient(HubConfig config, PrintStream progressOut) {
        this.config = config;
        this.cache = new HubCache(config.cacheDir());
        this.progressOut = progressOut;
        this.http =
                HttpClient.newBuilder()
                        .connectTimeout(config.connectTimeout())
                        .followRedirects(HttpClient.Redirect.NEVER)
                        .build();
    }

    /** @return a client configured by {@link HubConfig#fromEnvironment()} */
    public static HubClient fromEnvironment() {
        return new HubClient(HubConfig.fromEnvironment());
    }

    /** @return the settings */
    public HubConfig config() {
        return config;
    }

    /** @return the cache this client reads and writes */
    public HubCache cache() {
        return cache;
    }

    /**
     * Same as {@link #snapshot(String, String)} with revision {@value #DEFAULT_REVISION}.
     *
     * @param repoId the repository, e.g. {@code openai-community/gpt2}
     * @return the snapshot directory
     * @throws IOException if a download fails or the cache cannot be written
     * @throws ModelNotFoundException if the model is missing, gated, unsupported or not cached
     */
    public Path snapshot(String repoId) throws IOException, ModelNotFoundException {
        return snapshot(repoId, DEFAULT_REVISION);
    }

    /**
     * Makes sure the files a causal language model needs are cached and returns their snapshot
     * directory: {@value CheckpointFiles#CONFIG}; {@link #OPTIONAL_FILES} the repository has; and {@value
     * CheckpointFiles#WEIGHTS}, or else {@value CheckpointFiles#WEIGHTS_INDEX} with every shard it names. Files
     * already in the snapshot are not downloaded again. In offline mode, or when the hub cannot
     * be reached, the cached snapshot of the revision is returned if it has the config and the
     * weights.
     *
     * @param repoId the repository, {@code name} or {@code org/name}
     * @param revision a branch, tag or commit hash; {@code null} means {@value #DEFAULT_REVISION}
     * @return {@code snapshots/{commit}} of the repository in the cache
     * @throws IOException if a download fails, is corrupt, or the cache cannot be written
     * @throws ModelNotFoundException if the model or revision does not exist ({@link
     *     HubFileNotFoundException}), is gated ({@link GatedModelException}), has no safetensors
     *     weights ({@link UnsupportedWeightsException}), or is needed from the cache but missing
     *     there ({@link OfflineCacheMissException})
     * @throws IllegalArgumentException if the repo id or revision is malformed
     */
    public Path snapshot(String repoId, String revision)
            throws IOException, ModelNotFoundException {
        HubNames.checkRepoId(repoId);
        String rev = revision == null ? DEFAULT_REVISION : HubNames.checkRevision(revision);
        if (config.offline()) {
            return cachedSnapshot(repoId, rev, OFFLINE_REASON, null);
        }
        RepoInfo info;
        try {
            info = repoInfo(repoId, rev);
        } catch (TransientNetworkException e) {
            logger.warn("{}; looking for '{}' in the cache", e.getMessage(), repoId);
            return cachedSnapshot(repoId, rev, unreachable(e), e);
        }
        String commit = info.commit();
        if (!rev.equals(commit)) {
            cache.writeRef(repoId, rev, commit);
        }
        Set<String> siblings = Set.copyOf(info.siblings());
        for (String name : selectFiles(info, rev)) {
            file(repoId, commit, name);
        }
        if (!siblings.contains(CheckpointFiles.WEIGHTS)) {
            Path index = cache.snapshotFile(repoId, commit, CheckpointFiles.WEIGHTS_INDEX);
            for (String shard : readShards(repoId, index)) {
                if (!siblings.contains(shard)) {
                    throw new HubFileNotFoundException(
                            repoId,
                            rev,
                            shard,
                            "Shard '"
                                    + shard
                                    + "' named in "
                                    + CheckpointFiles.WEIGHTS_INDEX
                                    + " is not in '"
                                    + repoId
                                    + "' (revision '"
                                    + rev
                                    + "')");
                }
                file(repoId, commit, shard);
            }
        }
        return cache.snapshotDir(repoId, commit);
    }

    /**
     * Makes sure one file is cached and returns its snapshot path, like Python's {@code
     * hf_hub_download}. A file at a commit hash that is already cached is returned without
     * network access.
     *
     * @param repoId the repository, {@code name} or {@code org/name}
     * @param revision a branch, tag or commit hash; {@code null} means {@value #DEFAULT_REVISION}
     * @param filename the file inside the repository, e.g. {@code config.json}
     * @return {@code snapshots/{commit}/{filename}} in the cache
     * @throws IOException if the download fails, is corrupt, or the cache cannot be written
     * @throws ModelNotFoundException if the repository or file does not exist, the model is
     *     gated, or the file is needed from the cache but missing there
     * @throws IllegalArgumentException if the repo id, revision or file name is malformed
     */
    public Path file(String repoId, String revision, String filename)
            throws IOException, ModelNotFoundException {
        HubNames.checkRepoId(repoId);
        String rev = revision == null ? DEFAULT_REVISION : HubNames.checkRevision(revision);
        HubNames.checkFilename(filename);
        if (config.offline()) {
            return cachedFile(repoId, rev, filename, OFFLINE_REASON, null);
        }
        if (HubNames.isCommit(rev)) {
            Optional<Path> hit = cache.cachedFile(repoId, rev, filename);
            if (hit.isPresent()) {
                return hit.get();
            }
        }
        HubFileMetadata meta;
        try {
            meta = fileMetadata(repoId, rev, filename);
        } catch (TransientNetworkException e) {
            logger.warn(
                    "{}; looking for '{}' of '{}' in the cache", e.getMessage(), filename, repoId);
            return cachedFile(repoId, rev, filename, unreachable(e), e);
        }
        if (!rev.equals(meta.commit())) {
            cache.writeRef(repoId, rev, meta.commit());
        }
        return fetch(repoId, filename, meta);
    }

    /**
     * Lists a revision of a repository: {@code GET {endpoint}/api/models/{repo}/revision/{rev}}.
     *
     * @param repoId the repository
     * @param revision a branch, tag or commit hash
     * @return the commit and the file names
     * @throws IOException if the hub cannot be reached or answers something unusable, including
     *     an unsafe file name
     * @throws ModelNotFoundException if the repository or revision does not exist or is gated
     */
    public RepoInfo repoInfo(String repoId, String revision)
            throws IOException, ModelNotFoundException {
        HubNames.checkRepoId(repoId);
        HubNames.checkRevision(revision);
        checkOnline(repoId, "the file list");
        URI uri =
                URI.create(
                        config.endpoint()
                                + "/api/models/"
                                + HubNames.encodePath(repoId, true)
                                + "/revision/"
                                + HubNames.encodePath(revision, false));
        HttpResponse<byte[]> resp =
                exchange(
                        uri,
                        "GET",
                        null,
                        config.metadataTimeout(),
                        BodyHandlers.ofByteArray(),
                        r -> false);
        checkStatus(resp, repoId, revision, null);
        if (resp.statusCode() != 200) {
            throw new HubException(
                    "Unexpected HTTP "
                            + resp.statusCode()
                            + " listing '"
                            + repoId
                            + "' at "
                            + display(uri));
        }
        JsonObject json = parseObject(resp.body(), "The file list of '" + repoId + "'");
        String commit = string(json.get("sha"));
        JsonElement list = json.get("siblings");
        if (commit == null || list == null || !list.isJsonArray()) {
            throw new HubException(
                    "The file list of '"
                            + repoId
                            + "' from "
                            + display(uri)
                            + " lacks 'sha' or 'siblings'");
        }
        List<String> siblings = new ArrayList<>();
        for (JsonElement sibling : list.getAsJsonArray()) {
            String name =
                    sibling.isJsonObject()
                            ? string(sibling.getAsJsonObject().get("rfilename"))
                            : null;
            siblings.add(HubNames.checkServerFilename(repoId, name, "the file list"));
        }
        HubNames.checkServerComponent(repoId, "the file list", "commit", commit);
        return new RepoInfo(repoId, commit, siblings);
    }

    /**
     * Reads a file's metadata with a HEAD request on its resolve URL, not following the redirect
     * that LFS files answer with.
     *
     * @param repoId the repository
     * @param revision a branch, tag or commit hash
     * @param filename the file inside the repository
     * @return the commit, etag, size and location
     * @throws IOException if the hub cannot be reached or omits the commit or etag
     * @throws ModelNotFoundException if the repository or file does not exist or is gated
     */
    public HubFileMetadata fileMetadata(String repoId, String revision, String filename)
            throws IOException, ModelNotFoundException {
        HubNames.checkRepoId(repoId);
        HubNames.checkRevision(revision);
        HubNames.checkFilename(filename);
        checkOnline(repoId, "the metadata of '" + filename + "'");
        URI uri = resolveUri(repoId, revision, filename);
        HttpResponse<Void> resp =
                exchange(
                        uri,
                        "HEAD",
                        null,
                        config.metadataTimeout(),
                        BodyHandlers.discarding(),
                        r -> r.headers().firstValue("X-Repo-Commit").isPresent());
        checkStatus(resp, repoId, revision, filename);
        HttpHeaders h = resp.headers();
        String commit =
                h.firstValue("X-Repo-Commit")
                        .orElseThrow(() -> missingHeader("X-Repo-Commit", repoId, filename));
        HubNames.checkServerComponent(repoId, filename, "commit", commit);
        String etag =
                normalizeEtag(
                        h.firstValue("X-Linked-Etag")
                                .or(() -> h.firstValue("ETag"))
                                .orElseThrow(() -> missingHeader("ETag", repoId, filename)));
        HubNames.checkServerComponent(repoId, filename, "etag", etag);
        long size = parseSize(h.firstValue("X-Linked-Size"));
        if (size < 0 && resp.statusCode() / 100 == 2) {
            size = parseSize(h.firstValue("Content-Length"));
        }
        URI location = resp.uri();
        Optional<String> redirect = h.firstValue("Location");
        if (redirect.isPresent()) {
            location = resolveLocation(resp.uri(), redirect.get());
        }
        return new HubFileMetadata(commit, etag, size, location);
    }

    private Path fetch(String repoId, String filename, HubFileMetadata meta)
            throws IOException, ModelNotFoundException {
        Optional<Path> hit = cache.cachedFile(repoId, meta.commit(), filename);
        if (hit.isPresent()) {
            return hit.get();
        }
        Path blob = cache.blobFile(repoId, meta.etag());
        BlobLock lock = BlobLock.acquire(cache.lockFile(repoId, meta.etag()));
        try {
            if (!Files.isRegularFile(blob)) {
                download(repoId, filename, meta, blob);
            }
            return cache.linkBlob(repoId, meta.commit(), filename, meta.etag());
        } finally {
            lock.close();
        }
    }

    private void download(String repoId, String filename, HubFileMetadata meta, Path blob)
            throws IOException, ModelNotFoundException {
        Path part = cache.incompleteFile(repoId, meta.etag());
        Files.createDirectories(part.getParent());
        URI uri = resolveUri(repoId, meta.commit(), filename);
        long size = meta.size();
        ContentHasher hasher = ContentHasher.forEtag(meta.etag(), size);
        ProgressBar bar =
                progressOut != null && config.progressBars() && size >= config.progressThreshold()
                        ? new ProgressBar(progressOut, filename, size)
                        : null;
        logger.debug("Downloading '{}' of '{}' ({} bytes) to {}", filename, repoId, size, blob);
        int failures = 0;
        while (true) {
            long have = Files.isRegularFile(part) ? Files.size(part) : -1;
            if (size >= 0 && have > size) {
                Files.delete(part);
                have = -1;
            }
            if (size >= 0 && have == size) {
                break;
            }
            try {
                transfer(repoId, filename, uri, part, Math.max(have, 0), size, hasher, bar);
                break;
            } catch (TransientNetworkException e) {
                failures++;
                if (failures > config.maxRetries()) {
                    if (bar != null) {
                        bar.finish(Files.isRegularFile(part) ? Files.size(part) : 0);
                    }
                    throw new HubException(
                            "Downloading '"
                                    + filename
                                    + "' of '"
                                    + repoId
                                    + "' failed "
                                    + failures
                                    + " times, last: "
                                    + e.getMessage()
                                    + ". Run again to resume from "
                                    + part,
                            e);
                }
                logger.warn(
                        "{}; resuming '{}' of '{}' (retry {} of {})",
                        e.getMessage(),
                        filename,
                        repoId,
                        failures,
                        config.maxRetries());
                sleep(100L << Math.min(failures - 1, 4));
            }
        }
        long actualSize = Files.size(part);
        if (bar != null) {
            bar.finish(actualSize);
        }
        if (size >= 0 && actualSize != size) {
            Files.delete(part);
            throw new HubIntegrityException(
                    repoId, filename, "size", size + " bytes", actualSize + " bytes");
        }
        if (hasher == null) {
            hasher = ContentHasher.forEtag(meta.etag(), actualSize);
        }
        if (hasher != null) {
            hasher.syncWith(part, actualSize);
            String actual = hasher.hex();
            if (!actual.equals(meta.etag())) {
                Files.delete(part);
                throw new HubIntegrityException(
                        repoId, filename, hasher.kind(), meta.etag(), actual);
            }
        } else {
            logger.debug(
                    "Etag '{}' of '{}' is no known hash; checked the size only",
                    meta.etag(),
                    filename);
        }
        HubCache.moveReplacing(part, blob);
    }

    /**
     * GETs {@code uri} from byte {@code have} on, appending to {@code part} on 206 and starting
     * over on 200. Returns when the body is complete; throws {@link TransientNetworkException}
     * when it is cut short, stalls, or the server fails.
     */
    private void transfer(
            String repoId,
            String filename,
            URI uri,
            Path part,
            long have,
            long size,
            ContentHasher hasher,
            ProgressBar bar)
            throws IOException, ModelNotFoundException {
        String range = have > 0 ? "bytes=" + have + "-" : null;
        HttpResponse<InputStream> resp =
                exchange(
                        uri,
                        "GET",
                        range,
                        config.downloadTimeout(),
                        BodyHandlers.ofInputStream(),
                        r -> false);
        try (InputStream body = resp.body()) {
            int status = resp.statusCode();
            boolean append;
            if (status == 206 && have > 0) {
                long start = contentRangeStart(resp.headers());
                if (start != have) {
                    throw new HubException(
                            "The server resumed '"
                                    + filename
                                    + "' of '"
                                    + repoId
                                    + "' at byte "
                                    + start
                                    + " instead of "
                                    + have);
                }
                append = true;
            } else if (status == 200) {
                append = false;
            } else if (status == 416 && have > 0) {
                Files.delete(part);
                throw new TransientNetworkException(
                        "The server refused to resume '"
                                + filename
                                + "' at byte "
                                + have
                                + " (HTTP 416)",
                        null);
            } else {
                checkStatus(resp, repoId, null, filename);
                throw new HubException(
                        "Unexpected HTTP "
                                + status
                                + " downloading '"
                                + filename
                                + "' of '"
                                + repoId
                                + "' from "
                                + display(resp.uri()));
            }
            long done = append ? have : 0;
            if (hasher != null) {
                if (append) {
                    hasher.syncWith(part, have);
                } else {
                    hasher.reset();
                }
            }
            long contentLength = parseSize(resp.headers().firstValue("Content-Length"));
            long end = size >= 0 ? size : contentLength >= 0 ? done + contentLength : -1;
            done = copy(body, part, append, done, hasher, bar, repoId, filename);
            if (end >= 0 && done < end) {
                throw new TransientNetworkException(
                        "The connection closed after "
                                + done
                                + " of "
                                + end
                                + " bytes of '"
                                + filename
                                + "'",
                        null);
            }
        }
    }

    private long copy(
            InputStream body,
            Path part,
            boolean append,
            long done,
            ContentHasher hasher,
            ProgressBar bar,
            String repoId,
            String filename)
            throws IOException {
        long timeoutNanos = config.downloadTimeout().toNanos();
        AtomicLong lastRead = new AtomicLong(System.nanoTime());
        AtomicBoolean stalled = new AtomicBoolean();
        long period = Math.max(20, config.downloadTimeout().toMillis() / 4);
        ScheduledFuture<?> watchdog =
                Watchdog.EXECUTOR.scheduleWithFixedDelay(
                        () -> {
                            if (System.nanoTime() - lastRead.get() > timeoutNanos) {
                                stalled.set(true);
                                try {
                                    body.close();
                                } catch (IOException e) {
                                    logger.debug("Closing a stalled download", e);
                                }
                            }
                        },
                        period,
                        period,
                        TimeUnit.MILLISECONDS);
        StandardOpenOption mode =
                append ? StandardOpenOption.APPEND : StandardOpenOption.TRUNCATE_EXISTING;
        try (OutputStream out =
                Files.newOutputStream(
                        part, StandardOpenOption.CREATE, StandardOpenOption.WRITE, mode)) {
            byte[] buf = new byte[1 << 16];
            while (true) {
                int n;
                try {
                    n = body.read(buf);
                } catch (IOException e) {
                    String why =
                            stalled.get()
                                    ? "no data for " + config.downloadTimeout().toMillis() + " ms"
                                    : describe(e);
                    throw new TransientNetworkException(
                            "Download of '"
                                    + filename
                                    + "' of '"
                                    + repoId
                                    + "' broke off after "
                                    + done
                                    + " bytes ("
                                    + why
                                    + ")",
                            e);
                }
                if (n < 0) {
                    return done;
                }
                lastRead.set(System.nanoTime());
                out.write(buf, 0, n);
                if (hasher != null) {
                    hasher.update(buf, 0, n);
                }
                done += n;
                if (bar != null) {
                    bar.update(done);
                }
            }
        } finally {
            watchdog.cancel(false);
        }
    }

    private List<String> selectFiles(RepoInfo info, String rev) throws ModelNotFoundException {
        Set<String> siblings = Set.copyOf(info.siblings());
        if (!siblings.contains(CheckpointFiles.CONFIG)) {
            throw new HubFileNotFoundException(
                    info.repoId(),
                    rev,
                    CheckpointFiles.CONFIG,
                    "'"
                            + info.repoId()
                            + "' (revision '"
                            + rev
                            + "') has no "
                            + CheckpointFiles.CONFIG
                            + ": it is not a transformers model");
        }
        List<String> files = new ArrayList<>();
        files.add(CheckpointFiles.CONFIG);
        for (String name : OPTIONAL_FILES) {
            if (siblings.contains(name)) {
                files.add(name);
            }
        }
        if (siblings.contains(CheckpointFiles.WEIGHTS)) {
            files.add(CheckpointFiles.WEIGHTS);
        } else if (siblings.contains(CheckpointFiles.WEIGHTS_INDEX)) {
            files.add(CheckpointFiles.WEIGHTS_INDEX);
        } else {
            List<String> weights =
                    info.siblings().stream()
                            .filter(n -> WEIGHT_SUFFIXES.stream().anyMatch(n::endsWith))
                            .sorted()
                            .toList();
            throw new UnsupportedWeightsException(info.repoId(), rev, weights);
        }
        return files;
    }

    private static List<String> readShards(String repoId, Path index) throws IOException {
        String what = CheckpointFiles.WEIGHTS_INDEX + " of '" + repoId + "' (" + index + ")";
        JsonElement map = parseObject(Files.readAllBytes(index), what).get("weight_map");
        if (map == null || !map.isJsonObject()) {
            throw new HubException(what + " has no 'weight_map' object");
        }
        Set<String> shards = new TreeSet<>();
        for (Map.Entry<String, JsonElement> e : map.getAsJsonObject().entrySet()) {
            String shard = string(e.getValue());
            if (shard == null) {
                throw new HubException(what + " maps '" + e.getKey() + "' to no file name");
            }
            shards.add(shard);
        }
        for (String shard : shards) {
            HubNames.checkServerFilename(repoId, shard, CheckpointFiles.WEIGHTS_INDEX);
        }
        return List.copyOf(shards);
    }

    private static JsonObject parseObject(byte[] content, String what) throws HubException {
        try {
            JsonElement json = JsonParser.parseString(new String(content, StandardCharsets.UTF_8));
            if (json.isJsonObject()) {
                return json.getAsJsonObject();
            }
        } catch (JsonParseException e) {
            throw new HubException(what + " is not valid JSON", e);
        }
        throw new HubException(what + " is not a JSON object");
    }

    private static String string(JsonElement e) {
        return e != null && e.isJsonPrimitive() && e.getAsJsonPrimitive().isString()
                ? e.getAsString()
                : null;
    }

    private Path cachedSnapshot(String repoId, String rev, String reason, Throwable cause)
            throws IOException, ModelNotFoundException {
        String commit = cachedCommit(repoId, rev, reason, cause);
        requireCached(repoId, rev, commit, CheckpointFiles.CONFIG, reason, cause);
        Path weights = cache.snapshotFile(repoId, commit, CheckpointFiles.WEIGHTS);
        Path index = cache.snapshotFile(repoId, commit, CheckpointFiles.WEIGHTS_INDEX);
        if (!Files.isRegularFile(weights)) {
            if (!Files.isRegularFile(index)) {
                throw new OfflineCacheMissException(
                        repoId, rev, CheckpointFiles.WEIGHTS, weights, reason, cause);
            }
            for (String shard : readShards(repoId, index)) {
                requireCached(repoId, rev, commit, shard, reason, cause);
            }
        }
        return cache.snapshotDir(repoId, commit);
    }

    private Path cachedFile(
            String repoId, String rev, String filename, String reason, Throwable cause)
            throws IOException, ModelNotFoundException {
        return requireCached(
                repoId, rev, cachedCommit(repoId, rev, reason, cause), filename, reason, cause);
    }

    private String cachedCommit(String repoId, String rev, String reason, Throwable cause)
            throws IOException, ModelNotFoundException {
        Optional<String> commit = cache.resolveCommit(repoId, rev);
        if (commit.isEmpty()) {
            throw new OfflineCacheMissException(
                    repoId, rev, null, cache.refFile(repoId, rev), reason, cause);
        }
        return commit.get();
    }

    private Path requireCached(
            String repoId,
            String rev,
            String commit,
            String filename,
            String reason,
            Throwable cause)
            throws ModelNotFoundException {
        Path file = cache.snapshotFile(repoId, commit, filename);
        if (!Files.isRegularFile(file)) {
            throw new OfflineCacheMissException(repoId, rev, filename, file, reason, cause);
        }
        return file;
    }

    private void checkOnline(String repoId, String what) throws HubException {
        if (config.offline()) {
            throw new HubException(
                    OFFLINE_REASON + ": cannot ask the hub for " + what + " of '" + repoId + "'");
        }
    }

    /**
     * Sends a request, following redirects unless {@code stop} accepts the redirect response.
     * The token goes only to the endpoint's origin; {@code range} goes to every hop.
     */
    private <T> HttpResponse<T> exchange(
            URI uri,
            String method,
            String range,
            Duration timeout,
            BodyHandler<T> handler,
            Predicate<HttpResponse<T>> stop)
            throws IOException {
        URI current = uri;
        for (int hop = 0; ; hop++) {
            HttpRequest.Builder b =
                    HttpRequest.newBuilder(current)
                            .timeout(timeout)
                            .header("User-Agent", USER_AGENT)
                            .header("Accept-Encoding", "identity")
                            .method(method, HttpRequest.BodyPublishers.noBody());
            if (config.token() != null && sameOrigin(current, config.endpoint())) {
                b.header("Authorization", "Bearer " + config.token());
            }
            if (range != null) {
                b.header("Range", range);
            }
            HttpResponse<T> resp = send(b.build(), handler);
            int status = resp.statusCode();
            Optional<String> location = resp.headers().firstValue("Location");
            if (status < 300 || status > 399 || location.isEmpty() || stop.test(resp)) {
                return resp;
            }
            if (resp.body() instanceof InputStream in) {
                in.close();
            }
            if (hop >= MAX_REDIRECTS) {
                throw new HubException(
                        "More than " + MAX_REDIRECTS + " redirects from " + display(uri));
            }
            current = resolveLocation(current, location.get());
        }
    }

    private <T> HttpResponse<T> send(HttpRequest request, BodyHandler<T> handler)
            throws IOException {
        try {
            return http.send(request, handler);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException(
                    "Interrupted while requesting " + display(request.uri()));
        } catch (IOException e) {
            throw new TransientNetworkException(
                    "Cannot reach " + display(request.uri()) + " (" + describe(e) + ")", e);
        }
    }

    private void checkStatus(HttpResponse<?> resp, String repoId, String rev, String filename)
            throws IOException, ModelNotFoundException {
        int status = resp.statusCode();
        if (status < 400) {
            return;
        }
        URI uri = resp.uri();
        String code = resp.headers().firstValue("X-Error-Code").orElse("");
        if ((status == 401 || status == 403) && sameOrigin(uri, config.endpoint())) {
            throw new GatedModelException(
                    repoId, config.endpoint().toString(), status, config.token() != null);
        }
        String where = " on " + config.endpoint();
        String revision = rev == null ? "" : " (revision '" + rev + "')";
        if (status == 404) {
            if (code.equals("RevisionNotFound")) {
                throw new HubFileNotFoundException(
                        repoId,
                        rev,
                        null,
                        "Revision '" + rev + "' of '" + repoId + "' not found" + where);
            }
            if (code.equals("RepoNotFound") || filename == null) {
                throw new HubFileNotFoundException(
                        repoId,
                        rev,
                        null,
                        "Model '" + repoId + "' not found" + where + ": check the repo id");
            }
            throw new HubFileNotFoundException(
                    repoId,
                    rev,
                    filename,
                    "File '" + filename + "' not found in '" + repoId + "'" + revision + where);
        }
        String what =
                "HTTP "
                        + status
                        + " from "
                        + display(uri)
                        + (filename == null
                                ? " listing '" + repoId + "'"
                                : " for '" + filename + "' of '" + repoId + "'");
        if (status >= 500 || status == 429) {
            throw new TransientNetworkException(what, null);
        }
        throw new HubException(what);
    }

    private URI resolveUri(String repoId, String revision, String filename) {
        return URI.create(
                config.endpoint()
                        + "/"
                        + HubNames.encodePath(repoId, true)
                        + "/resolve/"
                        + HubNames.encodePath(revision, false)
                        + "/"
                        + HubNames.encodePath(filename, true));
    }

    private static URI resolveLocation(URI base, String location) throws HubException {
        try {
            URI target = base.resolve(location.trim());
            String scheme = target.getScheme();
            if (scheme == null
                    || !(scheme.equalsIgnoreCase("http") || scheme.equalsIgnoreCase("https"))) {
                throw new HubException(
                        "Unsupported redirect from " + display(base) + " to '" + location + "'");
            }
            return target;
        } catch (IllegalArgumentException e) {
            throw new HubException(
                    "Malformed redirect from " + display(base) + " to '" + location + "'", e);
        }
    }

    static boolean sameOrigin(URI a, URI b) {
        return a.getScheme() != null
                && a.getScheme().equalsIgnoreCase(b.getScheme())
                && a.getHost() != null
                && a.getHost().equalsIgnoreCase(b.getHost())
                && port(a) == port(b);
    }

    private static int port(URI uri) {
        if (uri.getPort() >= 0) {
            return uri.getPort();
        }
        return "https".equalsIgnoreCase(uri.getScheme()) ? 443 : 80;
    }

    static String normalizeEtag(String etag) {
        String e = etag.trim();
        if (e.startsWith("W/")) {
            e = e.substring(2);
        }
        if (e.length() >= 2 && e.startsWith("\"") && e.endsWith("\"")) {
            e = e.substring(1, e.length() - 1);
        }
        return e;
    }

    private static long parseSize(Optional<String> value) {
        if (value.isEmpty()) {
            return -1;
        }
        try {
            long n = Long.parseLong(value.get().trim());
            return n >= 0 ? n : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private static long contentRangeStart(HttpHeaders headers) {
        String range =
                headers.firstValue("Content-Range").orElse("").trim().toLowerCase(Locale.ROOT);
        if (!range.startsWith("bytes ")) {
            return -1;
        }
        int dash = range.indexOf('-');
        try {
            return dash < 0 ? -1 : Long.parseLong(range.substring(6, dash).trim());
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private HubException missingHeader(String header, String repoId, String filename) {
        return new HubException(
                "The hub at "
                        + config.endpoint()
                        + " sent no "
                        + header
                        + " header for '"
                        + filename
                        + "' of '"
                        + repoId
                        + "'; HF_ENDPOINT must point to a Hugging Face hub");
    }

    private String unreachable(IOException e) {
        String why = e.getCause() == null ? e.getMessage() : describe(e);
        return "The hub at " + config.endpoint() + " cannot be reached (" + why + ")";
    }

    private static String display(URI uri) {
        return uri.getScheme() + "://" + uri.getRawAuthority() + uri.getRawPath();
    }

    private static String describe(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String msg = root.getMessage();
        return root.getClass().getSimpleName() + (msg == null || msg.isBlank() ? "" : ": " + msg);
    }

    private static void sleep(long millis) throws InterruptedIOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new InterruptedIOException("Interrupted while waiting to resume a download");
        }
    }

    /** Daemon timer that closes downloads that stopped receiving data. */
    private static final class Watchdog {

        static final ScheduledThreadPoolExecutor EXECUTOR = create();

        private static ScheduledThreadPoolExecutor create() {
            ScheduledThreadPoolExecutor executor =
                    new ScheduledThreadPoolExecutor(
                            1,
                            r -> {
                                Thread t = new Thread(r, "hub-download-watchdog");
                                t.setDaemon(true);
                                return t;
                            });
            executor.setRemoveOnCancelPolicy(true);
            return executor;
        }
    }
}
