package io.github.djlllmzoo.cli;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.dataset.RandomAccessDataset;
import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import io.github.djlllmzoo.training.FineTuneResult;
import io.github.djlllmzoo.training.FineTuneSettings;
import io.github.djlllmzoo.training.FineTuner;
import io.github.djlllmzoo.training.PackedTextDataset;
import io.github.djlllmzoo.training.TrainerState;
import io.github.djlllmzoo.defaultmodel.ByteLevelBpeTrainer;
import io.github.djlllmzoo.defaultmodel.StoryCorpus;
import io.github.djlllmzoo.defaultmodel.TrainedTokenizer;
import io.github.djlllmzoo.translators.TextTokenizer;
import io.github.djlllmzoo.zoo.LocalModel;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code llmzoo make-default-model}: the recipe of the project's default model. It generates a
 * seeded {@link StoryCorpus}, learns a byte-level BPE tokenizer on it, writes a small Llama {@code
 * config.json} and {@code generation_config.json}, trains the model from scratch with {@link
 * FineTuner} and writes the result with a model card ({@code README.md}). The same options give the
 * same corpus, tokenizer and initialization.
 */
@Command(
        name = "make-default-model",
        mixinStandardHelpOptions = true,
        description = {
            "Train the project's default model from scratch: a seeded story corpus, a byte-level BPE "
                    + "tokenizer learnt on it and a small Llama model trained with the finetune pipeline. "
                    + "--out DIR receives config.json, model.safetensors, the tokenizer files, "
                    + "generation_config.json and a README.md model card with the figures of the run.",
            ""
        })
final class MakeDefaultModelCommand implements Callable<Integer> {

    /** Each training story is encoded as {@code [BOS] story} and followed by this many EOS tokens. */
    private static final int EOS_AFTER_STORY = 1;

    @Spec CommandSpec spec;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Model directory to write (must not exist or be empty).")
    Path out;

    @Option(names = "--stories", defaultValue = "8000", paramLabel = "N", description = "Training stories (default: ${DEFAULT-VALUE}).")
    int stories;

    @Option(names = "--eval-stories", defaultValue = "300", paramLabel = "N", description = "Held-out stories, generated with seed S+1 (default: ${DEFAULT-VALUE}).")
    int evalStories;

    @Option(names = "--seed", defaultValue = "42", paramLabel = "S", description = "Seed of the corpus, the initialization and the data order (default: ${DEFAULT-VALUE}).")
    int seed;

    @Option(names = "--vocab", defaultValue = "1024", paramLabel = "V", description = "Tokenizer vocabulary size, special tokens and bytes included (default: ${DEFAULT-VALUE}).")
    int vocab;

    @Option(names = "--hidden", defaultValue = "160", paramLabel = "H", description = "hidden_size (default: ${DEFAULT-VALUE}).")
    int hidden;

    @Option(names = "--layers", defaultValue = "4", paramLabel = "L", description = "num_hidden_layers (default: ${DEFAULT-VALUE}).")
    int layers;

    @Option(names = "--heads", defaultValue = "4", paramLabel = "N", description = "num_attention_heads (default: ${DEFAULT-VALUE}).")
    int heads;

    @Option(names = "--kv-heads", defaultValue = "2", paramLabel = "N", description = "num_key_value_heads (default: ${DEFAULT-VALUE}).")
    int kvHeads;

    @Option(names = "--intermediate", defaultValue = "480", paramLabel = "N", description = "intermediate_size of the SwiGLU MLP (default: ${DEFAULT-VALUE}).")
    int intermediate;

    @Option(names = "--context", defaultValue = "512", paramLabel = "N", description = "max_position_embeddings (default: ${DEFAULT-VALUE}).")
    int context;

    @Option(names = "--steps", defaultValue = "600", paramLabel = "N", description = "Optimizer steps (default: ${DEFAULT-VALUE}).")
    int steps;

    @Option(names = "--batch", defaultValue = "16", paramLabel = "B", description = "Records per step (default: ${DEFAULT-VALUE}).")
    int batch;

    @Option(names = "--seq-len", defaultValue = "128", paramLabel = "T", description = "Tokens per record (default: ${DEFAULT-VALUE}).")
    int seqLen;

    @Option(names = "--lr", defaultValue = "2e-3", paramLabel = "X", description = "Peak learning rate (default: ${DEFAULT-VALUE}).")
    float lr;

    @Option(names = "--warmup", defaultValue = "30", paramLabel = "N", description = "Warm-up steps before the cosine decay (default: ${DEFAULT-VALUE}).")
    int warmup;

    @Option(names = "--weight-decay", defaultValue = "0.1", paramLabel = "W", description = "AdamW weight decay (default: ${DEFAULT-VALUE}).")
    float weightDecay;

    @Option(names = "--eval-every", defaultValue = "200", paramLabel = "N", description = "Held-out perplexity every N steps (default: ${DEFAULT-VALUE}).")
    int evalEvery;

    @Option(names = "--device", defaultValue = "cpu", paramLabel = "cpu|gpu", description = "Where to train (default: ${DEFAULT-VALUE}).")
    String device;

    @Override
    public Integer call() throws Exception {
        checkOutput();
        PrintWriter err = spec.commandLine().getErr();
        Device target = ComputeOptions.parseDevice(spec, device);
        long started = System.nanoTime();
        Path absoluteOut = out.toAbsolutePath();
        Files.createDirectories(absoluteOut.getParent());
        Path source = Files.createTempDirectory(absoluteOut.getParent(), ".default-model-source-");
        try {
            List<String> trainStories = StoryCorpus.splitStories(new StoryCorpus(seed).generate(stories));
            List<String> evalStoryList = StoryCorpus.splitStories(new StoryCorpus(seed + 1L).generate(evalStories));
            err.printf(Locale.ROOT, "corpus: %d training stories (seed %d), %d held-out stories (seed %d)%n",
                    trainStories.size(), seed, evalStoryList.size(), seed + 1L);
            err.flush();

            TrainedTokenizer trained =
                    ByteLevelBpeTrainer.builder().vocabSize(vocab).modelMaxLength(context).build().train(trainStories);
            trained.save(source);
            err.printf(Locale.ROOT, "tokenizer: %d tokens, %d merges%n", trained.vocabSize(), trained.merges().size());
            err.flush();
            writeJson(source.resolve(CheckpointFiles.CONFIG), config(trained));
            writeJson(source.resolve(CheckpointFiles.GENERATION_CONFIG), generationConfig(trained));

            Engine.getEngine("PyTorch").setRandomSeed(seed);
            FineTuneSettings settings =
                    FineTuneSettings.builder()
                            .steps(steps)
                            .batchSize(batch)
                            .sequenceLength(seqLen)
                            .learningRate(lr)
                            .warmupSteps(warmup)
                            .weightDecay(weightDecay)
                            .evalEvery(evalEvery)
                            .saveEvery(0)
                            .logEvery(Math.max(1, steps / 40))
                            .seed(seed)
                            .saveOptimizerState(false)
                            .build();
            FineTuneResult result;
            int trainTokens;
            try (LocalModel model = LocalModel.initialize(source, target, DataType.FLOAT32)) {
                TextTokenizer tokenizer = model.tokenizer();
                long eos = trained.eosTokenId();
                PackedTextDataset train = packed(tokenizer, trainStories, eos, seqLen);
                RandomAccessDataset eval = packed(tokenizer, evalStoryList, eos, seqLen);
                trainTokens = train.tokenCount();
                err.printf(Locale.ROOT, "data: %d training tokens in %d records, %d held-out records%n",
                        trainTokens, train.size(), eval.size());
                err.flush();
                result =
                        FineTuner.builder()
                                .setModel(model.model())
                                .setTrainData(train)
                                .optEvalData(eval)
                                .optSettings(settings)
                                .optCheckpoints(out, source)
                                .optProgress(err)
                                .build()
                                .run();
            }
            Files.deleteIfExists(out.resolve(TrainerState.FILE));
            double seconds = (System.nanoTime() - started) / 1e9;
            writeAtomically(out.resolve("README.md"), modelCard(trained, result, trainTokens, seconds));
            spec.commandLine().getOut().printf(Locale.ROOT,
                    "saved %s: %d steps, train loss %.4f, held-out perplexity %.3f, %.1f s%n",
                    out, result.finalStep(), result.trainLoss(), result.finalEval().value(), seconds);
            spec.commandLine().getOut().flush();
        } finally {
            deleteTree(source);
        }
        return 0;
    }

    private void checkOutput() throws IOException {
        boolean usable;
        if (!Files.exists(out)) {
            usable = true;
        } else if (!Files.isDirectory(out)) {
            usable = false;
        } else {
            try (Stream<Path> entries = Files.list(out)) {
                usable = entries.findAny().isEmpty();
            }
        }
        if (!usable) {
            throw new ParameterException(spec.commandLine(), "--out " + out + " already exists; choose a new directory");
        }
    }

    /**
     * Encodes every story as {@code [BOS] story [EOS]} (the tokenizer adds BOS) and packs the tokens
     * into {@code seqLen}-token records, as the default model was trained and evaluated.
     */
    static PackedTextDataset packed(TextTokenizer tokenizer, List<String> stories, long eos, int seqLen) {
        List<long[]> pieces = new ArrayList<>(stories.size());
        int total = 0;
        for (String story : stories) {
            long[] ids = tokenizer.encode(story);
            long[] withEos = Arrays.copyOf(ids, ids.length + EOS_AFTER_STORY);
            Arrays.fill(withEos, ids.length, withEos.length, eos);
            pieces.add(withEos);
            total += withEos.length;
        }
        int[] tokens = new int[total];
        int at = 0;
        for (long[] piece : pieces) {
            for (long id : piece) {
                tokens[at++] = Math.toIntExact(id);
            }
        }
        return PackedTextDataset.builder().setTokens(tokens).setSequenceLength(seqLen).build();
    }

    private JsonObject config(TrainedTokenizer tokenizer) {
        JsonObject json = new JsonObject();
        JsonArray architectures = new JsonArray();
        architectures.add("LlamaForCausalLM");
        json.add("architectures", architectures);
        json.addProperty("model_type", LlamaConfig.MODEL_TYPE);
        json.addProperty("vocab_size", tokenizer.vocabSize());
        json.addProperty("hidden_size", hidden);
        json.addProperty("intermediate_size", intermediate);
        json.addProperty("num_hidden_layers", layers);
        json.addProperty("num_attention_heads", heads);
        json.addProperty("num_key_value_heads", kvHeads);
        json.addProperty("max_position_embeddings", context);
        json.addProperty("hidden_act", "silu");
        json.addProperty("rms_norm_eps", 1e-5);
        json.addProperty("rope_theta", 10000.0);
        json.addProperty("initializer_range", 0.02);
        json.addProperty("tie_word_embeddings", true);
        json.addProperty("attention_bias", false);
        json.addProperty("mlp_bias", false);
        json.addProperty("bos_token_id", tokenizer.bosTokenId());
        json.addProperty("eos_token_id", tokenizer.eosTokenId());
        json.addProperty("pad_token_id", tokenizer.padTokenId());
        json.addProperty("torch_dtype", "float32");
        return json;
    }

    private static JsonObject generationConfig(TrainedTokenizer tokenizer) {
        JsonObject json = new JsonObject();
        json.addProperty("bos_token_id", tokenizer.bosTokenId());
        json.addProperty("eos_token_id", tokenizer.eosTokenId());
        json.addProperty("pad_token_id", tokenizer.padTokenId());
        json.addProperty("do_sample", true);
        json.addProperty("temperature", 0.8);
        json.addProperty("top_k", 40);
        json.addProperty("max_new_tokens", 160);
        return json;
    }

    private static void writeJson(Path file, JsonObject json) throws IOException {
        Files.writeString(file, Json.GSON.toJson(json) + "\n", StandardCharsets.UTF_8);
    }

    private static void writeAtomically(Path file, String text) throws IOException {
        Path tmp = Files.createTempFile(file.getParent(), "." + file.getFileName(), ".tmp");
        try {
            Files.writeString(tmp, text, StandardCharsets.UTF_8);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } finally {
            Files.deleteIfExists(tmp);
        }
    }

    private String reproduceCommand() {
        return String.format(Locale.ROOT,
                "LLMZOO_JAVA_OPTS=\"-Xmx4g -Dai.djl.pytorch.num_threads=1 -Dai.djl.pytorch.num_interop_threads=1\" \\\n"
                        + "  bin/llmzoo make-default-model --out models/default --stories %d --eval-stories %d --seed %d \\\n"
                        + "  --vocab %d --hidden %d --layers %d --heads %d --kv-heads %d --intermediate %d --context %d \\\n"
                        + "  --steps %d --batch %d --seq-len %d --lr %s --warmup %d --weight-decay %s --eval-every %d",
                stories, evalStories, seed, vocab, hidden, layers, heads, kvHeads, intermediate, context,
                steps, batch, seqLen, lr, warmup, weightDecay, evalEvery);
    }

    private String modelCard(TrainedTokenizer tokenizer, FineTuneResult result, int trainTokens, double seconds)
            throws IOException {
        long bytes = Files.size(out.resolve(CheckpointFiles.WEIGHTS));
        StringBuilder s = new StringBuilder();
        s.append("# djl-llm-zoo default model\n\n");
        s.append("A small Llama-architecture language model that `bin/llmzoo generate` and `score` use when no\n");
        s.append("`--model` is given. It writes short, simple children's stories in the style of the project's\n");
        s.append("generated corpus (`io.github.djlllmzoo.defaultmodel.StoryCorpus`); it knows nothing else.\n\n");
        s.append("## Reproduce\n\n```bash\n").append(reproduceCommand()).append("\n```\n\n");
        s.append("Every figure below comes from that command (same seed: same corpus, tokenizer and\n");
        s.append("initialization; the weights may differ in the last bits between machines).\n\n");
        s.append("## Model\n\n");
        s.append(String.format(Locale.ROOT,
                "- Llama: hidden %d, %d layers, %d attention heads, %d key/value heads, SwiGLU MLP %d, RoPE,\n"
                        + "  RMSNorm, tied embeddings, context %d tokens; %d parameters (%.1f MB float32 safetensors).\n",
                hidden, layers, heads, kvHeads, intermediate, context, parameterCount(tokenizer.vocabSize()), bytes / 1e6));
        s.append(String.format(Locale.ROOT,
                "- Tokenizer: byte-level BPE learnt on the training stories, %d tokens; `<|endoftext|>` (id %d) is\n"
                        + "  BOS and EOS, `<pad>` id %d; the tokenizer adds BOS in front of a prompt.\n",
                tokenizer.vocabSize(), tokenizer.bosTokenId(), tokenizer.padTokenId()));
        s.append("- `generation_config.json`: sampling at temperature 0.8 among the 40 most likely tokens, at most\n");
        s.append("  160 new tokens, stopping at EOS (`--greedy` for greedy decoding).\n\n");
        s.append("## Training\n\n");
        s.append(String.format(Locale.ROOT,
                "- Data: %d stories of `StoryCorpus(%d)`, each as `[BOS] story [EOS]`, %d tokens packed into\n"
                        + "  %d-token records; held out: %d stories of `StoryCorpus(%d)`.\n",
                stories, seed, trainTokens, seqLen, evalStories, seed + 1L));
        s.append(String.format(Locale.ROOT,
                "- From scratch with `FineTuner` (the `llmzoo finetune` pipeline): %d steps of %d records, AdamW\n"
                        + "  (lr %s, weight decay %s), %d warm-up steps then cosine decay, gradient norm clipped to %s.\n",
                result.finalStep(), batch, lr, weightDecay, warmup, FineTuneSettings.DEFAULT_MAX_GRAD_NORM));
        s.append(String.format(Locale.ROOT,
                "- Final training loss %.4f; held-out perplexity %.3f -> %.3f (loss %.4f over %d tokens).\n",
                result.trainLoss(), result.initialEval().value(), result.finalEval().value(),
                result.finalEval().meanLoss(), result.finalEval().tokens()));
        s.append(String.format(Locale.ROOT,
                "- Wall time of the whole recipe: %.0f s (training loop %.0f s) on %s.\n",
                seconds, result.seconds(), machine()));
        return s.toString();
    }

    private long parameterCount(int vocabSize) {
        int headDim = hidden / heads;
        long attention = 2L * hidden * heads * headDim + 2L * hidden * kvHeads * headDim;
        long mlp = 3L * hidden * intermediate;
        long norms = 2L * hidden;
        return (long) vocabSize * hidden + layers * (attention + mlp + norms) + hidden;
    }

    private String machine() {
        String threads = System.getProperty("ai.djl.pytorch.num_threads");
        return String.format(Locale.ROOT, "%s, %d available processors%s", device,
                Runtime.getRuntime().availableProcessors(),
                threads == null ? "" : ", " + threads + " PyTorch thread(s)");
    }

    private static void deleteTree(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(root)) {
            for (Path p : paths.sorted(Comparator.reverseOrder()).toList()) {
                Files.deleteIfExists(p);
            }
        }
    }
}
