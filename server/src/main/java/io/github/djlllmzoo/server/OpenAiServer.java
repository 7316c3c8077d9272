package io.github.djlllmzoo.server;

import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.zoo.LocalModel;
import io.javalin.Javalin;
import io.javalin.http.Context;
import io.javalin.http.HttpResponseException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.URI;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeoutException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * An OpenAI-compatible HTTP server for one {@link LocalModel}, on Javalin (Jetty):
 *
 * <ul>
 *   <li>{@code POST /v1/completions} and {@code POST /v1/chat/completions}, answered whole or,
 *       with {@code "stream": true}, as server-sent events ({@code data: {chunk}} lines, then
 *       {@code data: [DONE]});
 *   <li>{@code GET /v1/models}, {@code GET /v1/models/{id}} and {@code GET /health} (with the
 *       scheduler's counters);
 *   <li>{@code GET /metrics}: counters, gauges and latency histograms in Prometheus' text format.
 * </ul>
 *
 * <p>With API keys ({@link ServerOptions#apiKeys()}) every {@code /v1} route asks for {@code
 * Authorization: Bearer KEY} and answers 401 with an OpenAI {@code invalid_api_key} error
 * otherwise; {@code /health} and {@code /metrics} stay open. A request that runs past {@link
 * ServerOptions#requestTimeout()} ends: a streamed answer with {@code finish_reason "length"}, a
 * whole one with 408. {@link #shutdown()} stops gracefully: new requests get 503 while the running
 * ones get {@link ServerOptions#drainTimeout()} to finish.
 *
 * <p>Besides the model it may serve LoRA adapters of it, each under its own name, on the one copy
 * of the base weights; a request's {@code model} picks one.
 *
 * <p>Requests are parsed, validated and tokenized on the HTTP thread, then run by a {@link
 * GenerationScheduler}: one decode loop that owns the model, sequences joining and leaving its batch at
 * every step, over a KV pool of {@link ServerOptions#kvCacheTokens()} positions; a request reuses the
 * keys and values of the longest prompt prefix it shares with earlier ones, kept in a prefix cache of
 * {@link ServerOptions#prefixCacheTokens()} positions. When all its slots
 * are taken the answer is {@code 429} with {@code Retry-After}, once the streams' clients were
 * checked (a comment written to each), so that the slot of a client that left goes to the next
 * request. A streaming client that disconnects is noticed at the next chunk or check written; its
 * request is cancelled, which frees its slot and stops its generation. Errors are OpenAI error objects: 400 for bad requests, 404 for unknown
 * routes and models, 500 for failures, which are logged; no request can stop the server.
 */
public final class OpenAiServer implements AutoCloseable {

    private static final Logger LOG = LoggerFactory.getLogger(OpenAiServer.class);
    private static final String JSON = "application/json";
    private static final long STOP_TIMEOUT_MILLIS = 10_000;

    private final LocalModel model;
    private final ServerOptions options;
    private final String modelId;
    private final List<String> modelIds;
    private final Map<String, LoraAdapter> adapters = new LinkedHashMap<>();
    private final long created = Instant.now().getEpochSecond();
    private final RequestParser parser;
    private final GenerationScheduler scheduler;
    private final ApiKeys keys;
    private final ServerMetrics metrics = new ServerMetrics();
    private final RequestGate gate = new RequestGate();
    private final Javalin app;
    /** Trims glibc's heaps while the server runs; {@code null} where the C library cannot. */
    private volatile NativeHeapTrimmer trimmer;

    private OpenAiServer(LocalModel model, Map<String, Path> adapterDirs, ServerOptions options)
            throws IOException, InvalidCheckpointException {
        if (!model.hasTokenizer()) {
            throw new IllegalArgumentException(
                    model.dir()
                            + " has no tokenizer (tokenizer.json, or vocab.json and merges.txt):"
                            + " the server needs one");
        }
        this.model = model;
        this.options = options;
        this.modelId =
                options.modelId() != null
                        ? options.modelId()
                        : model.dir().toAbsolutePath().getFileName().toString();
        List<String> ids = new ArrayList<>(List.of(modelId));
        ids.addAll(adapterDirs.keySet());
        if (Set.copyOf(ids).size() != ids.size()) {
            throw new IllegalArgumentException("an adapter is named as the model or another adapter: " + ids);
        }
        this.modelIds = List.copyOf(ids);
        try {
            for (Map.Entry<String, Path> e : adapterDirs.entrySet()) {
                adapters.put(e.getKey(), model.attachAdapter(e.getValue(), e.getKey()));
            }
        } catch (IOException | InvalidCheckpointException | RuntimeException e) {
            detachAdapters();
            throw e;
        }
        GenerationConfig defaults =
                GenerationConfig.forCheckpoint(model.dir(), model.config()).build();
        this.parser =
                new RequestParser(
                        modelIds,
                        model.tokenizer(),
                        ChatTemplate.forCheckpoint(model.dir()),
                        model.config(),
                        defaults,
                        options.maxBatch());
        this.scheduler = new GenerationScheduler(model, options);
        this.keys = new ApiKeys(options.apiKeys());
        this.app =
                Javalin.create(
                        config -> {
                            config.showJavalinBanner = false;
                            config.startupWatcherEnabled = false;
                            config.http.disableCompression();
                        });
        app.before("/v1/*", this::authorize);
        app.post("/v1/completions", ctx -> admit(ctx, Endpoint.COMPLETIONS));
        app.post("/v1/chat/completions", ctx -> admit(ctx, Endpoint.CHAT));
        app.get("/v1/models", ctx -> json(ctx, 200, OpenAiResponses.models(modelIds, created)));
        // <model>, not {model}: Hugging Face ids have a slash
        app.get("/v1/models/<model>", this::describeModel);
        app.get("/health", this::health);
        app.get(
                "/metrics",
                ctx ->
                        ctx.contentType(PrometheusText.CONTENT_TYPE)
                                .result(metrics.page(scheduler.stats(), scheduler.metrics(), trimmer)));
        app.exception(Exception.class, this::failed);
        app.error(404, this::notFound);
    }

    /**
     * Starts serving a loaded model; the caller keeps ownership of the model and closes it after
     * the server.
     *
     * @param model the model, with its tokenizer
     * @param options where to listen and how to schedule
     * @return the running server
     * @throws InvalidCheckpointException if the checkpoint's generation or tokenizer config is
     *     malformed
     * @throws IllegalArgumentException if the model has no tokenizer
     * @throws BindException if the address cannot be listened on (port in use, unknown host),
     *     with a message naming host and port
     */
    public static OpenAiServer start(LocalModel model, ServerOptions options)
            throws InvalidCheckpointException, BindException {
        try {
            return start(model, Map.of(), options);
        } catch (BindException | InvalidCheckpointException e) {
            throw e;
        } catch (IOException e) {
            throw new UncheckedIOException(e); // no adapter to read
        }
    }

    /**
     * Starts serving a loaded model and LoRA adapters of it ({@code serve --adapter NAME=DIR}):
     * each adapter is attached to the model under its name ({@link LocalModel#attachAdapter}),
     * sharing its weights, and served as the model of that name; {@code /v1/models} lists the
     * model and then the adapters. Requests for different adapters share the batch ({@link
     * GenerationScheduler#trySubmit(long[], GenerationConfig, boolean, String)}). Closing the server
     * detaches them; the caller keeps ownership of the model.
     *
     * @param model the model, with its tokenizer
     * @param adapters adapter directories by the name clients use for them
     * @param options where to listen and how to schedule
     * @return the running server
     * @throws IOException if an adapter cannot be read
     * @throws InvalidCheckpointException if an adapter does not fit the model, or the checkpoint's
     *     generation or tokenizer config is malformed
     * @throws IllegalArgumentException if the model has no tokenizer, or a name is used twice
     * @throws BindException if the address cannot be listened on
     */
    public static OpenAiServer start(LocalModel model, Map<String, Path> adapters, ServerOptions options)
            throws IOException, InvalidCheckpointException {
        OpenAiServer server = new OpenAiServer(model, adapters, options);
        try {
            server.app.start(options.host(), options.port());
        } catch (RuntimeException e) {
            server.scheduler.close();
            server.app.stop();
            server.detachAdapters();
            for (Throwable cause = e; cause != null; cause = cause.getCause()) {
                if (cause instanceof BindException bind) {
                    throw options.cannotListen(bind);
                }
            }
            throw e;
        }
        server.trimmer =
                NativeHeapTrimmer.glibc()
                        .map(trim -> new NativeHeapTrimmer(trim, NativeHeapTrimmer.INTERVAL))
                        .orElse(null);
        return server;
    }

    /** @return the bound port (the one picked when the options asked for port 0) */
    public int port() {
        return app.port();
    }

    /** @return the base address, e.g. {@code http://127.0.0.1:8080} */
    public URI uri() {
        return URI.create("http://" + ServerOptions.authority(options.host(), port()));
    }

    /** @return the model name clients use */
    public String modelId() {
        return modelId;
    }

    /** @return the names clients may ask for: the model's, then its adapters' */
    public List<String> modelIds() {
        return modelIds;
    }

    /** @return the scheduler's counters */
    public GenerationScheduler.Stats stats() {
        return scheduler.stats();
    }

    /**
     * Stops admitting requests (new ones get 503, {@code /health} answers 503 {@code "draining"})
     * and waits for the running ones to be answered; the server keeps listening until {@link
     * #close()}.
     *
     * @param timeout how long to wait
     * @return whether every running request was answered within it
     * @throws InterruptedException if the thread is interrupted while waiting
     */
    public boolean drain(Duration timeout) throws InterruptedException {
        return gate.drain(timeout);
    }

    /**
     * A graceful stop, as on SIGTERM: {@link #drain} for the options' {@link
     * ServerOptions#drainTimeout()}, then {@link #close()}, which cancels what still runs.
     *
     * @return whether every running request was answered before the close
     */
    public boolean shutdown() {
        boolean drained;
        try {
            drained = drain(options.drainTimeout());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            drained = false;
        }
        close();
        return drained;
    }

    /** Stops listening, cancels the requests in flight and stops the predictors. */
    @Override
    public void close() {
        if (trimmer != null) {
            trimmer.close();
        }
        scheduler.close();
        // Set here, not at creation: a graceful stop of a server that failed to start throws
        // IllegalStateException(STOPPED) in place of the start's own error (e.g. the port in use).
        // Here it lets answers in flight finish (their jobs are cancelled).
        app.jettyServer().server().setStopTimeout(STOP_TIMEOUT_MILLIS);
        app.stop();
        detachAdapters();
    }

    private void detachAdapters() {
        adapters.forEach((name, adapter) -> adapter.detach(name));
        adapters.clear();
    }

    /** Answers a generation request unless the server is draining. */
    private void admit(Context ctx, Endpoint endpoint) {
        if (!gate.enter()) {
            throw shuttingDown();
        }
        try {
            generate(ctx, endpoint);
        } finally {
            gate.exit();
        }
    }

    /** @return the 503 of a server that no longer admits requests, counted */
    private ApiException shuttingDown() {
        metrics.unavailable.increment();
        return new ApiException(503, "server_error", null, null, "the server is shutting down");
    }

    private void generate(Context ctx, Endpoint endpoint) {
        JsonObject body = RequestParser.body(ctx.body());
        CompletionCall call =
                endpoint == Endpoint.CHAT ? parser.chat(body) : parser.completion(body);
        // the parser has checked that "model", when given, is one of modelIds
        String served = body.has("model") && !body.get("model").isJsonNull() ? body.get("model").getAsString() : modelId;
        String tooLarge = scheduler.neverFits(call.promptIds().length, call.config());
        if (tooLarge != null) {
            throw ApiException.invalid("max_tokens", tooLarge);
        }
        GenerationJob job;
        try {
            job = scheduler.trySubmit(
                    call.promptIds(), call.config(), call.stream(), served.equals(modelId) ? null : served);
        } catch (IllegalStateException e) {
            throw shuttingDown();
        }
        if (job == null) {
            ctx.header("Retry-After", String.valueOf(options.retryAfterSeconds()));
            json(
                    ctx,
                    429,
                    OpenAiResponses.error(
                            new ApiException(
                                    429,
                                    "rate_limit_error",
                                    null,
                                    "rate_limit_exceeded",
                                    "The server is busy with "
                                            + options.maxConcurrency()
                                            + " requests; retry after "
                                            + options.retryAfterSeconds()
                                            + " s")));
            return;
        }
        String id = endpoint.idPrefix() + UUID.randomUUID().toString().replace("-", "");
        long now = Instant.now().getEpochSecond();
        if (call.stream()) {
            EventStream.write(ctx, call, job, id, now, served);
            return;
        }
        GenerationResult result;
        try {
            result = job.result().get();
        } catch (InterruptedException e) {
            job.cancel();
            Thread.currentThread().interrupt();
            throw new ApiException(503, "server_error", null, null, "the server is shutting down");
        } catch (CancellationException e) {
            throw new ApiException(
                    503,
                    "server_error",
                    null,
                    null,
                    "the request was cancelled: the server is shutting down");
        } catch (ExecutionException e) {
            if (e.getCause() instanceof TimeoutException timeout) {
                throw new ApiException(408, "server_error", null, "request_timeout", timeout.getMessage());
            }
            throw new ApiException(
                    500,
                    "server_error",
                    null,
                    null,
                    "generation failed: " + describe(e.getCause()));
        }
        json(
                ctx,
                200,
                OpenAiResponses.answer(call, id, now, served, result, model.tokenizer()));
    }

    private void authorize(Context ctx) {
        try {
            keys.check(ctx.header("Authorization"));
        } catch (ApiException e) {
            metrics.unauthorized.increment();
            throw e;
        }
    }

    private void describeModel(Context ctx) {
        String requested = ctx.pathParam("model");
        if (!modelIds.contains(requested)) {
            throw new ApiException(
                    404,
                    "invalid_request_error",
                    "model",
                    "model_not_found",
                    "The model '" + requested + "' does not exist");
        }
        json(ctx, 200, OpenAiResponses.model(requested, created));
    }

    private void health(Context ctx) {
        GenerationScheduler.Stats stats = scheduler.stats();
        JsonObject body = new JsonObject();
        // 503 while draining: load balancers stop sending requests here
        body.addProperty("status", gate.draining() ? "draining" : "ok");
        body.addProperty("model", modelId);
        body.addProperty("active", stats.active());
        body.addProperty("queued", stats.queued());
        body.addProperty("max_concurrency", stats.maxConcurrency());
        body.addProperty("completed", stats.completed());
        body.addProperty("cancelled", stats.cancelled());
        body.addProperty("failed", stats.failed());
        body.addProperty("rejected", stats.rejected());
        body.addProperty("generated_tokens", stats.generatedTokens());
        body.addProperty("batches", stats.batches());
        body.addProperty("batched_requests", stats.batchedJobs());
        json(ctx, gate.draining() ? 503 : 200, body);
    }

    private void failed(Exception e, Context ctx) {
        ApiException error;
        if (e instanceof ApiException api) {
            error = api;
        } else if (e instanceof HttpResponseException http) {
            String type = http.getStatus() >= 500 ? "server_error" : "invalid_request_error";
            error = new ApiException(http.getStatus(), type, null, null, describe(http));
        } else {
            LOG.error("request {} {} failed", ctx.method(), ctx.path(), e);
            error =
                    new ApiException(
                            500, "server_error", null, null, "internal error: " + describe(e));
        }
        if (error.status() == 401) {
            ctx.header("WWW-Authenticate", "Bearer"); // RFC 6750
        }
        json(ctx, error.status(), OpenAiResponses.error(error));
    }

    private void notFound(Context ctx) {
        String type = ctx.res().getContentType();
        if (type != null && type.startsWith(JSON)) {
            return; // a handler already answered 404 with an error object
        }
        json(
                ctx,
                404,
                OpenAiResponses.error(
                        new ApiException(
                                404,
                                "invalid_request_error",
                                null,
                                null,
                                "Invalid URL (" + ctx.method() + " " + ctx.path() + ")")));
    }

    private static void json(Context ctx, int status, JsonObject body) {
        ctx.status(status).contentType(JSON).result(OpenAiResponses.GSON.toJson(body));
    }

    /** @return the error's message, or its class where it has none */
    static String describe(Throwable e) {
        String message = e.getMessage();
        return message == null || message.isBlank() ? e.getClass().getSimpleName() : message;
    }
}
