package io.github.djlllmzoo.jlama;

import com.github.tjake.jlama.model.AbstractModel;
import com.github.tjake.jlama.model.ModelSupport;
import com.github.tjake.jlama.safetensors.DType;
import com.github.tjake.jlama.tensor.AbstractTensor;
import com.github.tjake.jlama.tensor.KvBufferCache;
import com.github.tjake.jlama.tensor.operations.TensorOperationsProvider;
import java.io.File;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.UUID;

/**
 * Times Jlama's greedy generation on a checkpoint directory exactly as {@code llmzoo bench} times
 * ours: the prompt through Jlama's batched prefill ({@code batchForward}, or one token at a time
 * with {@code --prefill serial}), then {@code new-tokens - 1} decode steps, float32 weights and
 * float32 working memory. Prints one JSON object: prefill and decode tokens/s (median over the
 * runs after a warm-up) and the generated ids.
 *
 * <p>Usage: {@code JlamaBench --model DIR --prompt-ids 1,2,3 [--new-tokens 128] [--runs 5]
 * [--warmup 1] [--prefill batch|serial]}
 */
public final class JlamaBench {

    private JlamaBench() {}

    public static void main(String[] args) throws Exception {
        String model = null;
        int[] prompt = null;
        int newTokens = 128;
        int runs = 5;
        int warmup = 1;
        boolean serial = false;
        for (int i = 0; i < args.length; i += 2) {
            String value = args[i + 1];
            switch (args[i]) {
                case "--model" -> model = value;
                case "--prompt-ids" -> prompt = Arrays.stream(value.split(",")).mapToInt(s -> Integer.parseInt(s.trim())).toArray();
                case "--new-tokens" -> newTokens = Integer.parseInt(value);
                case "--runs" -> runs = Integer.parseInt(value);
                case "--warmup" -> warmup = Integer.parseInt(value);
                case "--prefill" -> serial = switch (value) {
                    case "serial" -> true;
                    case "batch" -> false;
                    default -> throw new IllegalArgumentException("--prefill must be batch or serial");
                };
                default -> throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        if (model == null || prompt == null || prompt.length == 0 || newTokens < 2) {
            throw new IllegalArgumentException("need --model DIR, --prompt-ids and --new-tokens >= 2");
        }
        AbstractModel m = ModelSupport.loadModel(new File(model), DType.F32, DType.F32);
        String backend = TensorOperationsProvider.get().name();
        int[] ids = null;
        for (int i = 0; i < warmup; i++) {
            generate(m, prompt, newTokens, serial, null);
        }
        double[] prefill = new double[runs];
        double[] decode = new double[runs];
        for (int r = 0; r < runs; r++) {
            double[] seconds = new double[2];
            ids = generate(m, prompt, newTokens, serial, seconds);
            prefill[r] = prompt.length / seconds[0];
            decode[r] = (newTokens - 1) / seconds[1];
        }
        List<String> idText = new ArrayList<>();
        for (int id : ids) {
            idText.add(Integer.toString(id));
        }
        System.out.printf(Locale.ROOT,
                "{\"engine\":\"jlama 0.8.4\",\"backend\":\"%s\",\"prefill\":\"%s\",\"prompt_tokens\":%d,\"new_tokens\":%d,"
                        + "\"runs\":%d,\"prefill_tokens_per_s\":%.3f,\"decode_tokens_per_s\":%.3f,"
                        + "\"prefill_tokens_per_s_runs\":%s,\"decode_tokens_per_s_runs\":%s,\"output_ids\":[%s]}%n",
                backend, serial ? "serial" : "batch", prompt.length, newTokens, runs, median(prefill), median(decode),
                Arrays.toString(prefill), Arrays.toString(decode), String.join(",", idText));
        m.close();
    }

    private static int[] generate(AbstractModel m, int[] prompt, int newTokens, boolean serial, double[] seconds) {
        int[] out = new int[newTokens];
        KvBufferCache cache = new KvBufferCache(m);
        try (KvBufferCache.KvBuffer kv = cache.getKvBuffer(UUID.randomUUID());
                AbstractTensor logits = m.makeDenseTensor(m.getConfig().vocabularySize)) {
            long start = System.nanoTime();
            AbstractTensor last;
            if (serial) {
                last = null;
                for (int i = 0; i < prompt.length; i++) {
                    if (last != null) {
                        last.close();
                    }
                    last = m.forward(prompt[i], i, kv, Optional.empty());
                }
            } else {
                last = m.batchForward(prompt, 0, kv);
            }
            int next = m.sample(last.slice(last.shape().first() - 1), 0f, 0f, logits);
            last.close();
            long decodeStart = System.nanoTime();
            out[0] = next;
            for (int i = 1; i < newTokens; i++) {
                AbstractTensor output = m.forward(next, prompt.length + i - 1, kv, Optional.empty());
                next = m.sample(output, 0f, 0f, logits);
                output.close();
                kv.incrementContextPosition();
                out[i] = next;
            }
            long end = System.nanoTime();
            if (seconds != null) {
                seconds[0] = (decodeStart - start) / 1e9;
                seconds[1] = (end - decodeStart) / 1e9;
            }
        }
        return out;
    }

    private static double median(double[] values) {
        double[] sorted = values.clone();
        Arrays.sort(sorted);
        int n = sorted.length;
        return n % 2 == 1 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
    }
}
