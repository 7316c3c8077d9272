package io.github.djlllmzoo.cli;

import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.server.GenerationScheduler;
import io.github.djlllmzoo.server.OpenAiServer;
import io.github.djlllmzoo.server.ServerOptions;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CountDownLatch;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * {@code llmzoo serve}: the OpenAI-compatible HTTP server, until the process is stopped. SIGTERM
 * (or Ctrl-C) stops it gracefully: new requests get 503, running ones get {@code --drain-seconds}
 * to finish, and the process exits 0.
 */
@Command(
        name = "serve",
        mixinStandardHelpOptions = true,
        description = {
            "Serve the model over an OpenAI-compatible HTTP API:",
            "POST /v1/completions, POST /v1/chat/completions (both with \"stream\": true), GET"
                + " /v1/models, GET /health.",
            "With --adapter NAME=DIR (repeatable) it also serves each PEFT LoRA adapter as the model NAME on"
                + " the one copy of the base weights; a request's \"model\" picks it. Requests for different"
                + " adapters share the batch.",
            "One decode loop serves every request over all cores, so there is no worker count: for replicas,"
                + " run several servers behind a load balancer."
        })
final class ServeCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Mixin ModelOptions modelOptions;

    @Option(
            names = "--host",
            defaultValue = "127.0.0.1",
            paramLabel = "ADDR",
            description = "Address to listen on (default: ${DEFAULT-VALUE}).")
    String host;

    @Option(
            names = "--port",
            defaultValue = "8080",
            paramLabel = "PORT",
            description = "Port to listen on; 0 picks a free one (default: ${DEFAULT-VALUE}).")
    int port;

    @Option(
            names = "--max-concurrency",
            defaultValue = "32",
            paramLabel = "N",
            description =
                    "Most requests admitted at once; more get 429 (default: ${DEFAULT-VALUE}).")
    int maxConcurrency;

    @Option(
            names = "--max-batch",
            defaultValue = "8",
            paramLabel = "B",
            description =
                    "Most sequences in the decode loop's batch at once; requests join and leave it at every"
                            + " step (default: ${DEFAULT-VALUE}).")
    int maxBatch;

    /** Refused with an {@code error:} line rather than ignored: scripts that pass it learn why. */
    @Option(names = "--workers", hidden = true, paramLabel = "W")
    Integer workers;

    @Option(
            names = "--batch-wait-ms",
            defaultValue = "5",
            paramLabel = "MS",
            description =
                    "How long the idle decode loop waits for more requests once one came (default:"
                            + " ${DEFAULT-VALUE}).")
    long batchWaitMs;

    @Option(
            names = "--kv-cache-tokens",
            defaultValue = "0",
            paramLabel = "N",
            description =
                    "The KV cache pool's budget in token positions (rows x capacity over every layer);"
                            + " requests wait for room, and one whose prompt + max_tokens can never fit gets"
                            + " 400; allocated ahead at its full size (default: 0, meaning --max-batch x the model's context"
                            + " window, within half the memory available at start).")
    long kvCacheTokens;

    @Option(
            names = "--prefill-chunk",
            defaultValue = "" + ServerOptions.DEFAULT_PREFILL_CHUNK,
            paramLabel = "T",
            description =
                    "Most prompt tokens prefilled per step of the decode loop, between the running"
                            + " sequences' tokens (default: ${DEFAULT-VALUE}).")
    int prefillChunk;

    @Option(
            names = "--prefill-step",
            defaultValue = "decode",
            paramLabel = "decode|N",
            description =
                    "How much of a joining prompt's chunk a step runs while other sequences decode: 'decode'"
                            + " runs its layers for as long as a decode pass takes (running streams keep about"
                            + " half their speed while a prompt joins); N runs N tokens' worth of its layers,"
                            + " --prefill-chunk or more a whole chunk (the joining prompt's first token sooner,"
                            + " the running streams waiting for it) (default: ${DEFAULT-VALUE}).")
    String prefillStep;

    @Option(
            names = "--prefill-rows",
            defaultValue = "" + ServerOptions.DEFAULT_PREFILL_ROWS,
            paramLabel = "N",
            description =
                    "Most requests' prompts prefilled beside the --max-batch decoding rows, each into a KV pool"
                            + " row of its own, taking a decode row as soon as one is free (0: a prompt is"
                            + " prefilled only once a decode row is free) (default: ${DEFAULT-VALUE}).")
    int prefillRows;

    @Option(
            names = "--prefill-pass-chunks",
            defaultValue = "" + ServerOptions.DEFAULT_PREFILL_PASS_CHUNKS,
            paramLabel = "N",
            description =
                    "Most whole --prefill-chunk chunks of a prompt one prefill pass takes where passes split"
                            + " exactly (int8, int4, int6, q4_k on the CPU kernels; elsewhere 1): fewer passes, the"
                            + " same outputs (default: ${DEFAULT-VALUE}).")
    int prefillPassChunks;

    @Option(
            names = "--prefix-cache-tokens",
            paramLabel = "N",
            description =
                    "Prompt positions kept, besides the KV pool, so that a request starting with the tokens"
                            + " of an earlier one (a system prompt, a chat's history) reuses their keys and"
                            + " values instead of computing them; least recently used leave first; 0 turns it"
                            + " off (default: a quarter of --kv-cache-tokens).")
    Long prefixCacheTokens;

    @Option(
            names = "--model-name",
            paramLabel = "NAME",
            description =
                    "The model name clients use (default: --model's registry name or Hugging Face id as"
                            + " given; for a directory, its name: 'default' for the default model).")
    String modelName;

    @Option(
            names = "--api-key",
            paramLabel = "KEY",
            description =
                    "A key clients must send as 'Authorization: Bearer KEY' on every /v1 route (/health and"
                            + " /metrics stay open); repeat it to accept several. Without it, the environment's"
                            + " LLMZOO_API_KEY (comma-separated keys) is used; without both the server is open.")
    List<String> apiKeys = new ArrayList<>();

    @Option(
            names = "--request-timeout-seconds",
            defaultValue = "600",
            paramLabel = "S",
            description =
                    "Longest a request may take from admission to its last token; past it a streamed answer"
                            + " ends with finish_reason \"length\" and a whole one gets 408 (default:"
                            + " ${DEFAULT-VALUE}).")
    long requestTimeoutSeconds;

    @Option(
            names = "--drain-seconds",
            defaultValue = "30",
            paramLabel = "S",
            description =
                    "On SIGTERM or Ctrl-C: new requests get 503 while running ones get up to this long to"
                            + " finish; then the rest are cancelled and the process exits 0 (default:"
                            + " ${DEFAULT-VALUE}).")
    long drainSeconds;

    /**
     * @param options the {@code --api-key} values
     * @param environment the value of {@code LLMZOO_API_KEY}, or {@code null}
     * @return the options when given, else the environment's comma-separated keys
     */
    static List<String> apiKeys(List<String> options, String environment) {
        if (!options.isEmpty() || environment == null) {
            return options;
        }
        return Arrays.stream(environment.split(",")).map(String::strip).filter(k -> !k.isEmpty()).toList();
    }

    /**
     * The KV pool's budget as the startup line says it: the default is sized by the memory available,
     * a position's bytes by {@code --kv-cache-dtype}.
     */
    private static String kvPool(GenerationScheduler.Stats stats, CausalLmBlock block) {
        return "KV pool " + stats.kvPoolBudget() + " positions, " + (stats.kvPoolBudget() * stats.kvBytesPerToken() >> 20)
                + " MiB of " + block.kvCacheDataType().toString().toLowerCase(Locale.ROOT) + " keys and values";
    }

    /** {@code --prefill-step}: "decode", or a positive number of tokens. */
    private int prefillStepTokens() {
        if ("decode".equals(prefillStep)) {
            return ServerOptions.PREFILL_STEP_AS_LONG_AS_DECODE;
        }
        try {
            int tokens = Integer.parseInt(prefillStep);
            if (tokens >= 1) {
                return tokens;
            }
        } catch (NumberFormatException e) {
            // refused below with the value
        }
        throw new IllegalArgumentException(
                "--prefill-step must be 'decode' or a number of tokens >= 1, got '" + prefillStep + "'");
    }

    @Override
    public Integer call() throws Exception {
        if (workers != null) {
            throw new ParameterException(spec.commandLine(), "--workers was removed: " + ServerOptions.WORKERS_REMOVED);
        }
        ServerOptions options;
        try {
            options =
                    ServerOptions.DEFAULTS
                            .withAddress(host, port)
                            .withModelId(modelName != null ? modelName : modelOptions.servedName())
                            .withScheduling(maxConcurrency, maxBatch, Duration.ofMillis(batchWaitMs))
                            .withKvPool(kvCacheTokens, prefillChunk)
                            .withPrefillStep(prefillStepTokens())
                            .withPrefillRows(prefillRows)
                            .withPrefillPassChunks(prefillPassChunks)
                            .withPrefixCache(
                                    prefixCacheTokens != null
                                            ? prefixCacheTokens
                                            : ServerOptions.DEFAULT_PREFIX_CACHE)
                            .withApiKeys(apiKeys(apiKeys, System.getenv("LLMZOO_API_KEY")))
                            .withTimeouts(
                                    Duration.ofSeconds(requestTimeoutSeconds),
                                    Duration.ofSeconds(drainSeconds));
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        Map<String, Path> adapters;
        try {
            adapters = modelOptions.namedAdapters();
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
        options.checkCanListen();
        LocalModel model = modelOptions.loadBase();
        OpenAiServer server;
        try {
            server = OpenAiServer.start(model, adapters, options);
        } catch (Exception e) {
            model.close();
            throw e;
        }
        CountDownLatch stopped = new CountDownLatch(1);
        PrintWriter err = spec.commandLine().getErr();
        Runtime.getRuntime()
                .addShutdownHook(
                        new Thread(
                                () -> {
                                    err.println("llmzoo serve: stopping; running requests get " + drainSeconds + " s to finish");
                                    err.flush();
                                    boolean drained = server.shutdown();
                                    model.close();
                                    err.println(
                                            "llmzoo serve: stopped"
                                                    + (drained ? "" : " (requests still running were cancelled)"));
                                    err.flush();
                                    stopped.countDown();
                                    // After SIGTERM the JVM's status would be 143; a drained stop
                                    // is a clean one, which process managers expect as 0.
                                    Runtime.getRuntime().halt(0);
                                },
                                "llmzoo-serve-shutdown"));
        err.println(
                "llmzoo serve: model '"
                        + server.modelId()
                        + "' on "
                        + server.uri()
                        + (adapters.isEmpty() ? "" : ", adapters '" + String.join("', '", adapters.keySet()) + "'")
                        + " (Ctrl-C stops; "
                        + kvPool(server.stats(), model.block())
                        + (options.apiKeys().isEmpty() ? "" : "; " + options.apiKeys().size() + " API key(s)")
                        + ")");
        err.flush();
        stopped.await();
        return 0;
    }
}
