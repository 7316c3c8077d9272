package io.github.djlllmzoo.zoo.hub;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.sun.net.httpserver.Headers;
import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.URLDecoder;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A Hugging Face hub on 127.0.0.1 serving test repositories the way huggingface.co does: the file
 * list API, HEAD/GET on resolve URLs (small files 200 with a git SHA-1 ETag, LFS files 302 to a
 * CDN path with X-Linked-Etag/X-Linked-Size), and a CDN with range support. A second server on
 * another port plays a CDN on a different origin. Switches inject failures; every request is
 * recorded.
 */
final class FakeHub implements AutoCloseable {

    /** Where LFS resolve URLs redirect to. */
    enum Cdn {
        /** {@code Location: /cdn/{sha256}} */
        RELATIVE,
        /** {@code Location: http://127.0.0.1:{port}/cdn/{sha256}} on the hub's own server */
        ABSOLUTE,
        /** {@code Location: http://127.0.0.1:{otherPort}/cdn/{sha256}}, another origin */
        OTHER_ORIGIN
    }

    /** One recorded request. */
    record Request(String method, String path, String authorization, String range, int port) {}

    /** One file of a repository. */
    record Entry(String repoId, String name, byte[] content, boolean lfs) {
        String etag() {
            return lfs ? sha256(content) : gitSha1(content);
        }
    }

    /** A repository served by the hub. */
    final class Repo {
        final String id;
        final String commit;
        final Map<String, Entry> files = new LinkedHashMap<>();
        final List<String> extraSiblings = new ArrayList<>();
        volatile String requiredToken;

        Repo(String id, String commit) {
            this.id = id;
            this.commit = commit;
        }

        /** Adds a file; {@code .safetensors}, {@code .bin} and {@code .onnx} files are LFS. */
        Repo file(String name, byte[] content) {
            boolean lfs =
                    name.endsWith(".safetensors")
                            || name.endsWith(".bin")
                            || name.endsWith(".onnx");
            Entry entry = new Entry(id, name, content, lfs);
            files.put(name, entry);
            if (lfs) {
                lfsBlobs.put(entry.etag(), entry);
            }
            return this;
        }

        Repo file(String name, String content) {
            return file(name, content.getBytes(StandardCharsets.UTF_8));
        }

        /** Lists a file name in the API answer without serving it. */
        Repo sibling(String name) {
            extraSiblings.add(name);
            return this;
        }

        /** Makes the repository answer 401 unless this bearer token is sent. */
        Repo gated(String token) {
            this.requiredToken = token;
            return this;
        }

        byte[] content(String name) {
            return files.get(name).content();
        }

        String etag(String name) {
            return files.get(name).etag();
        }
    }

    static {
        // Without TCP_NODELAY every response waits ~40 ms for a delayed ACK on loopback.
        System.setProperty("sun.net.httpserver.nodelay", "true");
    }

    private final HttpServer server;
    private final HttpServer otherOrigin;
    private final ExecutorService executor = Executors.newCachedThreadPool();
    private final Map<String, Repo> repos = new ConcurrentHashMap<>();
    private final Map<String, Entry> lfsBlobs = new ConcurrentHashMap<>();
    private final Map<String, String> renamed = new ConcurrentHashMap<>();
    private final List<Request> requests = new CopyOnWriteArrayList<>();
    private final Random random = new Random(42);

    volatile Cdn cdn = Cdn.RELATIVE;

    /** File whose body download is cut off after {@link #dropAfterBytes} bytes. */
    volatile String dropFile;

    /** How many more times {@link #dropFile} is cut off. */
    final AtomicInteger drops = new AtomicInteger();

    volatile long dropAfterBytes;

    /** File whose body download pauses {@link #stallMillis} after half the bytes, once. */
    volatile String stallFile;

    volatile long stallMillis;

    /** File served with one byte flipped (so it does not match its etag). */
    volatile String corruptFile;

    /** Whether the CDN ignores Range and always answers 200 with the whole file. */
    volatile boolean ignoreRange;

    /** Whether small files get weak etags ({@code W/"..."}). */
    volatile boolean weakEtags;

    /** Pause between 64 KiB chunks of CDN bodies, to make downloads overlap. */
    volatile long chunkDelayMillis;

    FakeHub() throws IOException {
        InetAddress loopback = InetAddress.getByName("127.0.0.1");
        server = HttpServer.create(new InetSocketAddress(loopback, 0), 0);
        server.createContext("/", this::handle);
        server.setExecutor(executor);
        server.start();
        otherOrigin = HttpServer.create(new InetSocketAddress(loopback, 0), 0);
        otherOrigin.createContext("/", this::handle);
        otherOrigin.setExecutor(executor);
        otherOrigin.start();
    }

    URI endpoint() {
        return URI.create("http://127.0.0.1:" + server.getAddress().getPort());
    }

    int port() {
        return server.getAddress().getPort();
    }

    int otherOriginPort() {
        return otherOrigin.getAddress().getPort();
    }

    Repo repo(String id) {
        return repo(id, randomHex(40));
    }

    Repo repo(String id, String commit) {
        Repo repo = new Repo(id, commit);
        repos.put(id, repo);
        return repo;
    }

    /** Makes requests for {@code oldId} answer 307 to the same path under {@code newId}. */
    void rename(String oldId, String newId) {
        renamed.put(oldId, newId);
    }

    byte[] randomBytes(int n) {
        byte[] b = new byte[n];
        synchronized (random) {
            random.nextBytes(b);
        }
        return b;
    }

    String randomHex(int n) {
        return HexFormat.of().formatHex(randomBytes(n / 2));
    }

    List<Request> requests() {
        return List.copyOf(requests);
    }

    /** @return the recorded requests whose path contains {@code part} */
    List<Request> requests(String method, String part) {
        return requests.stream()
                .filter(r -> r.method().equals(method) && r.path().contains(part))
                .toList();
    }

    /** Stops both servers at once, as if the network went away. */
    void stop() {
        server.stop(0);
        otherOrigin.stop(0);
    }

    @Override
    public void close() {
        stop();
        executor.shutdownNow();
    }

    private void handle(HttpExchange ex) throws IOException {
        String path = ex.getRequestURI().getRawPath();
        Headers in = ex.getRequestHeaders();
        requests.add(
                new Request(
                        ex.getRequestMethod(),
                        path,
                        in.getFirst("Authorization"),
                        in.getFirst("Range"),
                        ex.getLocalAddress().getPort()));
        try {
            for (Map.Entry<String, String> r : renamed.entrySet()) {
                String api = "/api/models/" + r.getKey() + "/";
                String resolve = "/" + r.getKey() + "/resolve/";
                if (path.startsWith(api) || path.startsWith(resolve)) {
                    String target =
                            path.replaceFirst("/" + r.getKey() + "/", "/" + r.getValue() + "/");
                    ex.getResponseHeaders().set("Location", target);
                    send(ex, 307, null);
                    return;
                }
            }
            if (path.startsWith("/api/models/")) {
                handleApi(ex, path.substring("/api/models/".length()));
            } else if (path.startsWith("/cdn/")) {
                handleCdn(ex, path.substring("/cdn/".length()));
            } else if (path.contains("/resolve/")) {
                handleResolve(ex, path);
            } else {
                send(ex, 404, null);
            }
        } finally {
            ex.close();
        }
    }

    private void handleApi(HttpExchange ex, String rest) throws IOException {
        int at = rest.lastIndexOf("/revision/");
        Repo repo = repos.get(decode(rest.substring(0, at)));
        String rev = decode(rest.substring(at + "/revision/".length()));
        if (!checkRepo(ex, repo, rev)) {
            return;
        }
        JsonObject json = new JsonObject();
        json.addProperty("id", repo.id);
        json.addProperty("sha", repo.commit);
        JsonArray siblings = new JsonArray();
        List<String> names = new ArrayList<>(repo.files.keySet());
        names.addAll(repo.extraSiblings);
        for (String name : names) {
            JsonObject s = new JsonObject();
            s.addProperty("rfilename", name);
            siblings.add(s);
        }
        json.add("siblings", siblings);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        send(ex, 200, json.toString().getBytes(StandardCharsets.UTF_8));
    }

    private void handleResolve(HttpExchange ex, String path) throws IOException {
        int at = path.indexOf("/resolve/");
        Repo repo = repos.get(decode(path.substring(1, at)));
        String rest = path.substring(at + "/resolve/".length());
        int slash = rest.indexOf('/');
        String rev = decode(rest.substring(0, slash));
        if (!checkRepo(ex, repo, rev)) {
            return;
        }
        Entry entry = repo.files.get(decode(rest.substring(slash + 1)));
        Headers out = ex.getResponseHeaders();
        if (entry == null) {
            out.set("X-Error-Code", "EntryNotFound");
            send(ex, 404, null);
            return;
        }
        out.set("X-Repo-Commit", repo.commit);
        if (entry.lfs()) {
            out.set("X-Linked-Etag", '"' + entry.etag() + '"');
            out.set("X-Linked-Size", Long.toString(entry.content().length));
            out.set("ETag", "\"" + gitSha1(entry.etag().getBytes(StandardCharsets.UTF_8)) + '"');
            String target = "/cdn/" + entry.etag();
            switch (cdn) {
                case ABSOLUTE -> target = "http://127.0.0.1:" + port() + target;
                case OTHER_ORIGIN -> target = "http://127.0.0.1:" + otherOriginPort() + target;
                default -> {}
            }
            out.set("Location", target);
            send(ex, 302, null);
            return;
        }
        String etag = '"' + entry.etag() + '"';
        out.set("ETag", weakEtags ? "W/" + etag : etag);
        serveBody(ex, entry);
    }

    private void handleCdn(HttpExchange ex, String sha) throws IOException {
        Entry entry = lfsBlobs.get(sha);
        if (entry == null) {
            send(ex, 404, null);
            return;
        }
        serveBody(ex, entry);
    }

    private boolean checkRepo(HttpExchange ex, Repo repo, String rev) throws IOException {
        Headers out = ex.getResponseHeaders();
        if (repo == null) {
            out.set("X-Error-Code", "RepoNotFound");
            send(ex, 404, null);
            return false;
        }
        String token = repo.requiredToken;
        if (token != null
                && !("Bearer " + token).equals(ex.getRequestHeaders().getFirst("Authorization"))) {
            out.set("X-Error-Code", "GatedRepo");
            send(ex, 401, null);
            return false;
        }
        if (!rev.equals("main") && !rev.equals(repo.commit)) {
            out.set("X-Error-Code", "RevisionNotFound");
            send(ex, 404, null);
            return false;
        }
        return true;
    }

    /** Serves a file body with Range support and the failure switches. */
    private void serveBody(HttpExchange ex, Entry entry) throws IOException {
        byte[] content = entry.content();
        if (entry.name().equals(corruptFile)) {
            content = content.clone();
            content[content.length / 2] ^= 0x5A;
        }
        Headers out = ex.getResponseHeaders();
        String range = ex.getRequestHeaders().getFirst("Range");
        int start = 0;
        int status = 200;
        if (range != null && !ignoreRange && range.startsWith("bytes=") && range.endsWith("-")) {
            start = Integer.parseInt(range.substring(6, range.length() - 1));
            if (start >= content.length) {
                out.set("Content-Range", "bytes */" + content.length);
                send(ex, 416, null);
                return;
            }
            status = 206;
            out.set(
                    "Content-Range",
                    "bytes " + start + '-' + (content.length - 1) + '/' + content.length);
        }
        out.set("Accept-Ranges", "bytes");
        int length = content.length - start;
        if (ex.getRequestMethod().equals("HEAD")) {
            out.set("Content-Length", Integer.toString(length));
            ex.sendResponseHeaders(status, -1);
            return;
        }
        ex.sendResponseHeaders(status, length == 0 ? -1 : length);
        OutputStream body = ex.getResponseBody();
        boolean drop =
                entry.name().equals(dropFile) && drops.getAndUpdate(n -> Math.max(0, n - 1)) > 0;
        boolean stall = entry.name().equals(stallFile);
        if (stall) {
            stallFile = null;
        }
        int pos = start;
        int end = content.length;
        while (pos < end) {
            if (drop && pos - start >= dropAfterBytes) {
                body.flush();
                throw new IOException(
                        "fake hub: dropping the connection after " + (pos - start) + " bytes");
            }
            if (stall && pos - start >= length / 2) {
                body.flush();
                sleep(stallMillis);
                stall = false;
            }
            int n = Math.min(64 * 1024, end - pos);
            if (drop) {
                n = (int) Math.min(n, start + dropAfterBytes - pos);
            }
            if (stall) {
                n = Math.min(n, start + length / 2 - pos);
            }
            body.write(content, pos, n);
            pos += n;
            if (chunkDelayMillis > 0) {
                body.flush();
                sleep(chunkDelayMillis);
            }
        }
    }

    private static void send(HttpExchange ex, int status, byte[] body) throws IOException {
        if (body == null || ex.getRequestMethod().equals("HEAD")) {
            ex.sendResponseHeaders(status, -1);
            return;
        }
        ex.sendResponseHeaders(status, body.length);
        ex.getResponseBody().write(body);
    }

    private static void sleep(long millis) throws IOException {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
    }

    private static String decode(String s) {
        return URLDecoder.decode(s.replace("+", "%2B"), StandardCharsets.UTF_8);
    }

    static String sha256(byte[] content) {
        return hex("SHA-256", new byte[0], content);
    }

    static String gitSha1(byte[] content) {
        return hex(
                "SHA-1",
                ("blob " + content.length + "\0").getBytes(StandardCharsets.US_ASCII),
                content);
    }

    private static String hex(String algorithm, byte[] prefix, byte[] content) {
        try {
            MessageDigest md = MessageDigest.getInstance(algorithm);
            md.update(prefix);
            return HexFormat.of().formatHex(md.digest(content));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
