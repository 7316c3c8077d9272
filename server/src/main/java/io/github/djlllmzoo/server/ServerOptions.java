package io.github.djlllmzoo.server;

import io.github.djlllmzoo.translators.ContinuousBatchBuilder;
import java.io.IOException;
import java.net.BindException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.List;
import java.util.Locale;

/**
 * How an {@link OpenAiServer} listens and schedules work.
 *
 * @param host the address to bind ({@code 127.0.0.1} keeps it local)
 * @param port the port to bind (0 picks a free one; see {@link OpenAiServer#port()})
 * @param modelId the model name clients send and {@code /v1/models} lists, or {@code null} for the
 *     checkpoint directory's name
 * @param maxConcurrency most requests admitted at once (waiting or generating); more get 429
 * @param maxBatch most sequences generated together in one batch (also the most {@code n} per
 *     request)
 * @param batchWait how long the idle decode loop waits for more requests once one came
 * @param retryAfterSeconds the {@code Retry-After} of a 429 answer
 * @param apiKeys the keys a {@code /v1} request must present as {@code Authorization: Bearer KEY};
 *     empty leaves the server open ({@link #toString()} does not show them)
 * @param requestTimeout how long a request may take from admission to its last token; past it a
 *     streamed answer ends with {@code finish_reason "length"} and a whole one is refused with 408
 * @param drainTimeout how long {@link OpenAiServer#shutdown()} lets running requests finish
 * @param kvCacheTokens the KV pool's budget in token positions (rows × capacity, every layer's keys
 *     and values), or 0 for {@code maxBatch} × the model's context window; a request whose {@code
 *     prompt + max_tokens} (times {@code n}) exceeds it is refused with 400
 * @param prefillChunk the most prompt tokens one step of the decode loop prefills, between the
 *     running sequences' tokens
 * @param prefixCacheTokens the most prompt positions the prefix cache keeps for later requests that
 *     start with the same tokens, besides the KV pool: 0 turns it off, {@link
 *     #DEFAULT_PREFIX_CACHE} means a quarter of the KV pool's budget
 * @param prefillStepTokens how much of a joining prompt's chunk a step runs while sequences decode:
 *     {@link #PREFILL_STEP_AS_LONG_AS_DECODE} its layers for as long as a decode pass takes (the
 *     running streams' time between tokens about doubles while a prompt joins), else this many
 *     tokens' worth of its layers; {@code prefillChunk} or more runs a whole chunk a step (the
 *     joining prompt's first token sooner, the running streams waiting a whole chunk)
 * @param prefillRows the most requests' sequences prefilled beside the {@code maxBatch} decoding ones,
 *     each into a KV pool row of its own, that take a decode row as soon as one is free (0: a
 *     prompt is prefilled only once a decode row is free, which then waits for it); the pool's
 *     budget is shared by all {@code maxBatch + prefillRows} rows
 * @param prefillPassChunks the most whole chunks one prefill pass takes where the model's passes
 *     split exactly (compressed weights on the CPU kernels; elsewhere one), sharing a pass's fixed
 *     costs while the prefix cache still reuses any block boundary
 */
public record ServerOptions(
        String host,
        int port,
        String modelId,
        int maxConcurrency,
        int maxBatch,
        Duration batchWait,
        int retryAfterSeconds,
        List<String> apiKeys,
        Duration requestTimeout,
        Duration drainTimeout,
        long kvCacheTokens,
        int prefillChunk,
        long prefixCacheTokens,
        int prefillStepTokens,
        int prefillRows,
        int prefillPassChunks) {

    /**
     * Why a server has no worker count: one decode loop owns the model, spreading each step over every
     * core, and replicas in one process would split the cores and the memory bandwidth between them.
     */
    public static final String WORKERS_REMOVED =
            "one decode loop serves every request over all cores, so a server has no worker count:"
                    + " run several servers behind a load balancer for replicas";

    /** The prompt tokens one step of the decode loop prefills when not told otherwise. */
    public static final int DEFAULT_PREFILL_CHUNK = 64;

    /** The {@link #prefillStepTokens} that bounds a step's prefill by the decode pass's time: the default. */
    public static final int PREFILL_STEP_AS_LONG_AS_DECODE = 0;

    /**
     * The sequences prefilled beside the decoding ones when not told otherwise: one ready to take
     * the next free decode row while the next is prefilled (docs/PERFORMANCE.md, session 17).
     */
    public static final int DEFAULT_PREFILL_ROWS = 2;

    /** Whole chunks a prefill pass takes where passes split exactly, when not told otherwise. */
    public static final int DEFAULT_PREFILL_PASS_CHUNKS = ContinuousBatchBuilder.PREFILL_PASS_CHUNKS;

    /** The prefix cache's budget that means a quarter of the KV pool's ({@link #prefixCacheTokens}). */
    public static final long DEFAULT_PREFIX_CACHE = -1;

    /** The share of the KV pool's budget the prefix cache keeps by default: one in this many positions. */
    private static final int DEFAULT_PREFIX_CACHE_SHARE = 4;

    /**
     * Loopback, port 8080, 32 requests, batches of 8, 5 ms wait, retry after
     * 1 s, no API key, requests ended after 10 minutes, 30 s to drain, a KV pool of 8 × the context
     * window, prompts prefilled 64 tokens a step, 2 of them beside the decoding rows, a prefix cache
     * of a quarter of the pool's budget.
     */
    public static final ServerOptions DEFAULTS =
            new ServerOptions(
                    "127.0.0.1",
                    8080,
                    null,
                    32,
                    8,
                    Duration.ofMillis(5),
                    1,
                    List.of(),
                    Duration.ofMinutes(10),
                    Duration.ofSeconds(30),
                    0,
                    DEFAULT_PREFILL_CHUNK,
                    DEFAULT_PREFIX_CACHE,
                    PREFILL_STEP_AS_LONG_AS_DECODE,
                    DEFAULT_PREFILL_ROWS,
                    DEFAULT_PREFILL_PASS_CHUNKS);

    /**
     * Validates the values; each message names the option at fault.
     *
     * @param host the address to bind ({@code 127.0.0.1} keeps it local)
     * @param port the port to bind (0 picks a free one; see {@link OpenAiServer#port()})
     * @param modelId the model name clients send and {@code /v1/models} lists, or {@code null} for the checkpoint directory's name
     * @param maxConcurrency most requests admitted at once (waiting or generating); more get 429
     * @param maxBatch most sequences generated together in one batch (also the most {@code n} per request)
         * @param batchWait how long the idle decode loop waits for more requests once one came
     * @param retryAfterSeconds the {@code Retry-After} of a 429 answer
     * @param apiKeys the keys a {@code /v1} request must present as {@code Authorization: Bearer
     *     KEY}; empty leaves the server open ({@link #toString()} does not show them)
     * @param requestTimeout how long a request may take from admission to its last token; past it
     *     a streamed answer ends with {@code finish_reason "length"} and a whole one is refused with
     *     408
     * @param drainTimeout how long {@link OpenAiServer#shutdown()} lets running requests finish
     * @param kvCacheTokens the KV pool's budget in token positions, or 0 for {@code maxBatch} × the context window
     * @param prefillChunk the most prompt tokens one step of the decode loop prefills
     * @param prefixCacheTokens the prefix cache's budget in token positions: 0 turns it off, {@link
     *     #DEFAULT_PREFIX_CACHE} means a quarter of the KV pool's budget
     * @param prefillStepTokens {@link #PREFILL_STEP_AS_LONG_AS_DECODE}, or the tokens' worth of a
     *     joining chunk's layers a step runs while sequences decode
     * @param prefillRows the most sequences prefilled beside the {@code maxBatch} decoding ones
     * @param prefillPassChunks the most whole chunks one prefill pass takes where passes split exactly
     */
    public ServerOptions {
        if (host == null || host.isBlank()) {
            throw new IllegalArgumentException("host must be given");
        }
        require(port >= 0 && port <= 65535, "port must be in [0, 65535]", port);
        require(maxConcurrency >= 1, "maxConcurrency must be at least 1", maxConcurrency);
        require(maxBatch >= 1, "maxBatch must be at least 1", maxBatch);
        require(prefillChunk >= 1, "prefillChunk must be at least 1", prefillChunk);
        require(prefillRows >= 0, "prefillRows must be >= 0", prefillRows);
        require(prefillPassChunks >= 1, "prefillPassChunks must be at least 1", prefillPassChunks);
        require(prefillStepTokens >= 0, "prefillStepTokens must be >= 0 (0: as long as a decode pass)", prefillStepTokens);
        if (kvCacheTokens < 0) {
            throw new IllegalArgumentException("kvCacheTokens must be >= 0 (0: the default), got " + kvCacheTokens);
        }
        if (prefixCacheTokens < DEFAULT_PREFIX_CACHE) {
            throw new IllegalArgumentException("prefixCacheTokens must be >= 0 (0: off), or "
                    + DEFAULT_PREFIX_CACHE + " for the default, got " + prefixCacheTokens);
        }
        require(retryAfterSeconds >= 1, "retryAfterSeconds must be at least 1", retryAfterSeconds);
        if (batchWait == null || batchWait.isNegative()) {
            throw new IllegalArgumentException("batchWait must be >= 0, got " + batchWait);
        }
        if (apiKeys == null) {
            throw new IllegalArgumentException("apiKeys must be given (empty for none)");
        }
        apiKeys = List.copyOf(apiKeys);
        for (String key : apiKeys) {
            if (key.isBlank() || !key.strip().equals(key) || key.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
                // a header value cannot carry it, so no client could present it
                throw new IllegalArgumentException(
                        "an API key must be printable ASCII without spaces, got one of "
                                + key.length()
                                + " characters");
            }
        }
        if (requestTimeout == null || requestTimeout.isNegative() || requestTimeout.isZero()) {
            throw new IllegalArgumentException("requestTimeout must be > 0, got " + requestTimeout);
        }
        if (drainTimeout == null || drainTimeout.isNegative()) {
            throw new IllegalArgumentException("drainTimeout must be >= 0, got " + drainTimeout);
        }
    }

    /** @return the options, with the number of API keys in place of the keys */
    @Override
    public String toString() {
        return "ServerOptions[host="
                + host
                + ", port="
                + port
                + ", modelId="
                + modelId
                + ", maxConcurrency="
                + maxConcurrency
                + ", maxBatch="
                + maxBatch
                + ", batchWait="
                + batchWait
                + ", retryAfterSeconds="
                + retryAfterSeconds
                + ", apiKeys="
                + apiKeys.size()
                + " key(s), requestTimeout="
                + requestTimeout
                + ", drainTimeout="
                + drainTimeout
                + ", kvCacheTokens="
                + kvCacheTokens
                + ", prefillChunk="
                + prefillChunk
                + ", prefixCacheTokens="
                + prefixCacheTokens
                + ", prefillStepTokens="
                + prefillStepTokens
                + ", prefillRows="
                + prefillRows
                + ", prefillPassChunks="
                + prefillPassChunks
                + "]";
    }

    /**
     * Checks that the address can be listened on now, so that a command fails before it spends
     * time loading a model; the server reports the same failure should the address be taken in
     * between.
     *
     * @throws BindException if the host is unknown or the port is in use, naming host and port
     */
    public void checkCanListen() throws BindException {
        InetSocketAddress address = new InetSocketAddress(host, port);
        if (address.isUnresolved()) {
            throw cannotListen(new BindException("unknown host"));
        }
        try (ServerSocket socket = new ServerSocket()) {
            // as Jetty binds: a port left in TIME_WAIT by a previous server is free
            socket.setReuseAddress(true);
            socket.bind(address);
        } catch (IOException e) {
            throw cannotListen(e);
        }
    }

    /**
     * @param cause why binding failed
     * @return {@code cannot listen on HOST:PORT: <cause's message>}, caused by {@code cause}
     */
    BindException cannotListen(IOException cause) {
        String reason = cause.getMessage() == null ? cause.toString() : cause.getMessage();
        BindException e =
                new BindException(
                        "cannot listen on "
                                + authority(host, port)
                                + ": "
                                + reason.toLowerCase(Locale.ROOT));
        e.initCause(cause);
        return e;
    }

    /**
     * @param host a host name or address (IPv6 literals get brackets)
     * @param port a port
     * @return {@code host:port} as a URI writes it
     */
    static String authority(String host, int port) {
        return (host.contains(":") ? "[" + host + "]" : host) + ":" + port;
    }

    private static void require(boolean valid, String rule, int value) {
        if (!valid) {
            throw new IllegalArgumentException(rule + ", got " + value);
        }
    }

    /**
     * @param value the address to bind
     * @param portValue the port to bind
     * @return a copy listening there
     */
    public ServerOptions withAddress(String value, int portValue) {
        Copy copy = new Copy(this);
        copy.host = value;
        copy.port = portValue;
        return copy.build();
    }

    /**
     * @param value the model name, or {@code null} for the directory's name
     * @return a copy with that name
     */
    public ServerOptions withModelId(String value) {
        Copy copy = new Copy(this);
        copy.modelId = value;
        return copy.build();
    }

    /**
     * @param concurrency most requests admitted at once
     * @param batch most sequences per batch
     * @param wait how long the idle decode loop waits for more requests once one came
     * @return a copy scheduling so
     */
    public ServerOptions withScheduling(int concurrency, int batch, Duration wait) {
        Copy copy = new Copy(this);
        copy.maxConcurrency = concurrency;
        copy.maxBatch = batch;
        copy.batchWait = wait;
        return copy.build();
    }

    /**
     * The scheduling of servers that had several predictor workers: one decode loop now owns the
     * model and spreads each step over every core, so there is one worker.
     *
     * @param concurrency most requests admitted at once
     * @param batch most sequences per batch
     * @param workerCount must be 1
     * @param wait how long the idle decode loop waits for more requests once one came
     * @return a copy scheduling so
     * @throws IllegalArgumentException if {@code workerCount} is not 1
     * @deprecated use {@link #withScheduling(int, int, Duration)}; run several servers behind a load
     *     balancer for replicas
     */
    @Deprecated(forRemoval = true)
    public ServerOptions withScheduling(int concurrency, int batch, int workerCount, Duration wait) {
        if (workerCount != 1) {
            throw new IllegalArgumentException(WORKERS_REMOVED + ", got " + workerCount);
        }
        return withScheduling(concurrency, batch, wait);
    }

    /**
     * @param tokens the KV pool's budget in token positions, or 0 for {@code maxBatch} × the context window
     * @param chunk the most prompt tokens one step of the decode loop prefills
     * @return a copy with this pool and chunk
     */
    public ServerOptions withKvPool(long tokens, int chunk) {
        Copy copy = new Copy(this);
        copy.kvCacheTokens = tokens;
        copy.prefillChunk = chunk;
        return copy.build();
    }

    /**
     * @param tokens the prefix cache's budget in token positions: 0 turns it off, {@link
     *     #DEFAULT_PREFIX_CACHE} means a quarter of the KV pool's budget
     * @return a copy with this prefix cache
     */
    public ServerOptions withPrefixCache(long tokens) {
        Copy copy = new Copy(this);
        copy.prefixCacheTokens = tokens;
        return copy.build();
    }

    /**
     * @param tokens {@link #PREFILL_STEP_AS_LONG_AS_DECODE}, or the tokens' worth of a joining chunk's
     *     layers a step runs while sequences decode ({@link #prefillChunk()} or more: whole chunks)
     * @return a copy prefilling so
     */
    public ServerOptions withPrefillStep(int tokens) {
        Copy copy = new Copy(this);
        copy.prefillStepTokens = tokens;
        return copy.build();
    }

    /**
     * @param rows the most sequences prefilled beside the {@code maxBatch} decoding ones (0: none)
     * @return a copy prefilling so
     */
    public ServerOptions withPrefillRows(int rows) {
        Copy copy = new Copy(this);
        copy.prefillRows = rows;
        return copy.build();
    }

    /**
     * @param chunks the most whole chunks one prefill pass takes where passes split exactly (≥ 1)
     * @return a copy prefilling so
     */
    public ServerOptions withPrefillPassChunks(int chunks) {
        Copy copy = new Copy(this);
        copy.prefillPassChunks = chunks;
        return copy.build();
    }

    /**
     * The prefix cache's budget for a KV pool of {@code poolTokens} positions.
     *
     * @param poolTokens the KV pool's budget
     * @return {@link #prefixCacheTokens()}, or a quarter of {@code poolTokens} where it is {@link
     *     #DEFAULT_PREFIX_CACHE}
     */
    public long prefixCacheTokens(long poolTokens) {
        return prefixCacheTokens == DEFAULT_PREFIX_CACHE ? poolTokens / DEFAULT_PREFIX_CACHE_SHARE : prefixCacheTokens;
    }

    /**
     * @param keys the keys a {@code /v1} request must present (any one of them); empty for none
     * @return a copy asking for them
     */
    public ServerOptions withApiKeys(List<String> keys) {
        Copy copy = new Copy(this);
        copy.apiKeys = keys;
        return copy.build();
    }

    /**
     * @param requestLimit how long a request may take from admission to its last token
     * @param drainLimit how long a shutdown lets running requests finish
     * @return a copy with these limits
     */
    public ServerOptions withTimeouts(Duration requestLimit, Duration drainLimit) {
        Copy copy = new Copy(this);
        copy.requestTimeout = requestLimit;
        copy.drainTimeout = drainLimit;
        return copy.build();
    }

    /** A copy of options with some of its values replaced: what each {@code with...} method changes. */
    private static final class Copy {
        private String host;
        private int port;
        private String modelId;
        private int maxConcurrency;
        private int maxBatch;
        private Duration batchWait;
        private int retryAfterSeconds;
        private List<String> apiKeys;
        private Duration requestTimeout;
        private Duration drainTimeout;
        private long kvCacheTokens;
        private int prefillChunk;
        private long prefixCacheTokens;
        private int prefillStepTokens;
        private int prefillRows;
        private int prefillPassChunks;

        Copy(ServerOptions options) {
            this.host = options.host();
            this.port = options.port();
            this.modelId = options.modelId();
            this.maxConcurrency = options.maxConcurrency();
            this.maxBatch = options.maxBatch();
            this.batchWait = options.batchWait();
            this.retryAfterSeconds = options.retryAfterSeconds();
            this.apiKeys = options.apiKeys();
            this.requestTimeout = options.requestTimeout();
            this.drainTimeout = options.drainTimeout();
            this.kvCacheTokens = options.kvCacheTokens();
            this.prefillChunk = options.prefillChunk();
            this.prefixCacheTokens = options.prefixCacheTokens();
            this.prefillStepTokens = options.prefillStepTokens();
            this.prefillRows = options.prefillRows();
            this.prefillPassChunks = options.prefillPassChunks();
        }

        ServerOptions build() {
            return new ServerOptions(
                    host,
                    port,
                    modelId,
                    maxConcurrency,
                    maxBatch,
                    batchWait,
                    retryAfterSeconds,
                    apiKeys,
                    requestTimeout,
                    drainTimeout,
                    kvCacheTokens,
                    prefillChunk,
                    prefixCacheTokens,
                    prefillStepTokens,
                    prefillRows,
                    prefillPassChunks);
        }
    }
}
