package io.github.djlllmzoo.cli;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import ai.djl.training.dataset.RandomAccessDataset;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.LoraConfig;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.training.FineTuneResult;
import io.github.djlllmzoo.training.FineTuneSettings;
import io.github.djlllmzoo.training.FineTuner;
import io.github.djlllmzoo.training.HeldOutSplit;
import io.github.djlllmzoo.training.PackedTextDataset;
import io.github.djlllmzoo.training.Perplexity;
import io.github.djlllmzoo.training.PromptCompletionDataset;
import io.github.djlllmzoo.training.TrainerState;
import io.github.djlllmzoo.translators.TextTokenizer;
import io.github.djlllmzoo.zoo.LocalModel;
import io.github.djlllmzoo.zoo.PeftAdapter;
import java.io.FileNotFoundException;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Callable;
import java.util.stream.Stream;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/** {@code llmzoo finetune}: train a model on text or prompt/completion pairs with DJL's Trainer. */
@Command(
        name = "finetune",
        mixinStandardHelpOptions = true,
        description = {
            "Fine-tune a model on text files or prompt/completion JSONL with DJL's Trainer "
                    + "(AdamW, warm-up + cosine learning rate, global-norm gradient clipping).",
            "",
            "--out DIR always holds the latest complete checkpoint in Hugging Face layout (config.json, "
                    + "model.safetensors, tokenizer files, generation_config.json, trainer_state.json, "
                    + "optimizer.safetensors): each save is written to a hidden temporary directory and "
                    + "renamed into place, so DIR is never partly written; a run that fails before its first "
                    + "save leaves no DIR. Load it with --model DIR; continue it with --resume DIR, which "
                    + "restores the weights, the step, the data position and the AdamW moments (unless "
                    + "saved with --no-optimizer-state, in which case the moments restart from zero).",
            "",
            "With --lora-rank it trains a LoRA adapter instead: the model's weights stay frozen and --out holds a "
                    + "Hugging Face PEFT adapter (adapter_config.json, adapter_model.safetensors) with "
                    + "trainer_state.json and the adapter's AdamW moments. Use it with --adapter DIR "
                    + "(generate, score, serve), fold it into a full checkpoint with merge-adapter, load it in "
                    + "Python with PeftModel.from_pretrained; --resume DIR continues it on the base model it names.",
            ""
        })
final class FineTuneCommand implements Callable<Integer> {

    @Spec CommandSpec spec;

    @ArgGroup(exclusive = true, multiplicity = "1")
    Start start;

    static final class Start {
        @Option(
                names = "--model",
                paramLabel = "M",
                description = "Model to fine-tune: a registry name, a Hugging Face id or a directory (with a tokenizer).")
        String model;

        @Option(names = "--resume", paramLabel = "DIR", description = "Continue the run saved in DIR (its weights, step, data position, AdamW moments and settings; options given here override the settings).")
        Path resume;
    }

    @Option(names = "--from-scratch", description = "With --model: ignore its weights and start from the blocks' random initialization (seeded by --seed).")
    boolean fromScratch;

    @Option(names = "--data", required = true, split = ",", paramLabel = "FILE", description = "Training data files (comma-separated).")
    List<Path> data;

    @Option(names = "--eval-data", split = ",", paramLabel = "FILE", description = "Held-out data files; without it every round(1/--eval-split)-th record of --data is held out.")
    List<Path> evalData;

    @Option(names = "--format", defaultValue = "text", paramLabel = "text|jsonl", description = "text: plain UTF-8 files, one document each, packed into --seq-len windows; jsonl: {\"prompt\":…, \"completion\":…} per line, only completion tokens learned (default: ${DEFAULT-VALUE}).")
    String format;

    @Option(names = "--eval-split", defaultValue = "0.05", paramLabel = "F", description = "Share of --data held out when there is no --eval-data (default: ${DEFAULT-VALUE}).")
    double evalSplit;

    @Option(names = "--steps", paramLabel = "N", description = "Optimizer steps to reach (default: " + FineTuneSettings.DEFAULT_STEPS + ").")
    Integer steps;

    @Option(names = "--batch", paramLabel = "B", description = "Records per micro-batch (default: " + FineTuneSettings.DEFAULT_BATCH_SIZE + ").")
    Integer batch;

    @Option(names = "--seq-len", paramLabel = "T", description = "Tokens per record (default: " + FineTuneSettings.DEFAULT_SEQUENCE_LENGTH + ", at most the context window).")
    Integer seqLen;

    @Option(names = "--lr", paramLabel = "X", description = "Peak learning rate (default: " + FineTuneSettings.DEFAULT_LEARNING_RATE + ").")
    Float lr;

    @Option(names = "--warmup", paramLabel = "N", description = "Linear warm-up steps before the cosine decay to 0 (default: 0).")
    Integer warmup;

    @Option(names = "--weight-decay", paramLabel = "W", description = "AdamW weight decay on matrices and embeddings (default: " + FineTuneSettings.DEFAULT_WEIGHT_DECAY + ").")
    Float weightDecay;

    @Option(names = "--grad-clip", paramLabel = "C", description = "Clip the global gradient norm to C; 0 for none (default: " + FineTuneSettings.DEFAULT_MAX_GRAD_NORM + ").")
    Float gradClip;

    @Option(names = "--grad-accum", paramLabel = "K", description = "Micro-batches per optimizer step (default: 1).")
    Integer gradAccum;

    @Option(names = "--train-last-layers", paramLabel = "N", description = "Train only the last N decoder layers, the final norm and an untied LM head; embeddings stay frozen (default: all layers).")
    Integer trainLastLayers;

    @Option(names = "--freeze-embeddings", description = "Keep the embeddings (and so a tied LM head) frozen.")
    Boolean freezeEmbeddings;

    @Option(names = "--lora-rank", paramLabel = "R", description = "Train a LoRA adapter of rank R instead of the model (PEFT's r; " + LoraConfig.DEFAULT_RANK + " is usual).")
    Integer loraRank;

    @Option(names = "--lora-alpha", paramLabel = "A", description = "LoRA's scale numerator: the update is (A/R) B A x (default: " + LoraConfig.DEFAULT_ALPHA + ").")
    Float loraAlpha;

    @Option(names = "--lora-dropout", paramLabel = "P", description = "Dropout on the adapter's input in training (default: " + LoraConfig.DEFAULT_DROPOUT + ").")
    Float loraDropout;

    @Option(names = "--lora-targets", split = ",", paramLabel = "LIST", description = "Modules to adapt by checkpoint name, e.g. q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj or c_attn,c_proj,c_fc (default: the attention projections).")
    List<String> loraTargets;

    @Option(names = "--eval-every", paramLabel = "N", description = "Evaluate held-out perplexity every N steps, 0 for start and end only (default: " + FineTuneSettings.DEFAULT_EVAL_EVERY + ").")
    Integer evalEvery;

    @Option(names = "--save-every", paramLabel = "N", description = "Save a checkpoint every N steps, 0 for the end only (default: " + FineTuneSettings.DEFAULT_SAVE_EVERY + ").")
    Integer saveEvery;

    @Option(names = "--log-every", paramLabel = "N", description = "Print progress every N steps (default: " + FineTuneSettings.DEFAULT_LOG_EVERY + ").")
    Integer logEvery;

    @Option(names = "--seed", paramLabel = "S", description = "Seed of initialization, data order and dropout (default: " + FineTuneSettings.DEFAULT_SEED + ").")
    Integer seed;

    @Option(names = "--optimizer-state", negatable = true, description = "Save the AdamW moments with each checkpoint for an exact resume (default: true).")
    Boolean optimizerState;

    @Option(names = "--device", defaultValue = "cpu", paramLabel = "cpu|gpu", description = "Where to train (default: ${DEFAULT-VALUE}).")
    String device;

    @Option(names = "--out", required = true, paramLabel = "DIR", description = "Checkpoint directory to write (must not exist, unless it is the --resume directory).")
    Path out;

    @Option(names = "--output", defaultValue = "text", paramLabel = "text|json", description = "Format of the final summary on stdout (default: ${DEFAULT-VALUE}).")
    String output;

    @Override
    public Integer call() throws Exception {
        OutputFormat summaryFormat = OutputFormat.parse(spec, output, OutputFormat.TEXT, OutputFormat.JSON);
        boolean jsonl = parseFormat();
        requireFiles("--data", data);
        if (evalData != null) {
            requireFiles("--eval-data", evalData);
        }
        Path adapterResume = start.resume != null && PeftAdapter.isAdapter(start.resume) ? start.resume : null;
        String baseModel = adapterResume != null ? adapterBase(adapterResume) : start.model;
        Path source = start.resume != null && adapterResume == null ? start.resume : ModelOptions.resolve(baseModel);
        TrainerState resumed = start.resume != null ? TrainerState.read(start.resume) : null;
        checkOutput();
        checkLoraOptions(adapterResume != null);
        Device target = ComputeOptions.parseDevice(spec, device);
        PrintWriter err = spec.commandLine().getErr();
        int seedValue = seed != null ? seed : resumed != null ? resumed.settings().seed() : FineTuneSettings.DEFAULT_SEED;
        Engine.getEngine("PyTorch").setRandomSeed(seedValue);
        try (LocalModel model = open(source, target)) {
            FineTuneSettings settings = settings(resumed, model.config());
            LoraConfig lora = lora(model.block(), adapterResume);
            TextTokenizer tokenizer = model.tokenizer();
            DecoderConfig config = model.config();
            long eos = model.documentSeparatorId();
            RandomAccessDataset train = dataset(data, jsonl, tokenizer, eos, settings, config, err);
            RandomAccessDataset eval;
            if (evalData != null) {
                eval = dataset(evalData, jsonl, tokenizer, eos, settings, config, err);
            } else {
                HeldOutSplit split = HeldOutSplit.of(train, evalSplit);
                train = split.train();
                eval = split.eval();
            }
            FineTuner.Builder tuner =
                    FineTuner.builder()
                            .setModel(model.model())
                            .setTrainData(train)
                            .optEvalData(eval)
                            .optSettings(settings)
                            .optCheckpoints(out, source)
                            .optResumeFrom(start.resume)
                            .optProgress(err);
            if (lora != null) {
                tuner.optLora(lora, recordedName(baseModel));
            }
            FineTuneResult result = tuner.build().run();
            printSummary(summaryFormat, result);
        }
        return 0;
    }

    /** The base model a LoRA checkpoint names, which a resumed LoRA run trains on. */
    private String adapterBase(Path adapter) throws InvalidCheckpointException {
        String base = PeftAdapter.baseModel(adapter);
        if (base == null) {
            throw new ParameterException(
                    spec.commandLine(), "--resume " + adapter + ": its adapter_config.json names no base_model_name_or_path");
        }
        return base;
    }

    /** A directory as an absolute path, so that resuming elsewhere finds it; a name or hub id as given. */
    private static String recordedName(String model) {
        Path path = Path.of(model);
        return Files.isDirectory(path) ? path.toAbsolutePath().normalize().toString() : model;
    }

    private boolean anyLoraOption() {
        return loraRank != null || loraAlpha != null || loraDropout != null || loraTargets != null;
    }

    private void checkLoraOptions(boolean resumingAdapter) {
        boolean lora = resumingAdapter || anyLoraOption();
        if (!lora) {
            return;
        }
        if (!resumingAdapter && loraRank == null) {
            throw new ParameterException(spec.commandLine(), "--lora-alpha, --lora-dropout and --lora-targets need --lora-rank");
        }
        if (fromScratch) {
            throw new ParameterException(spec.commandLine(), "--lora-rank adapts a trained model; drop --from-scratch");
        }
        if (trainLastLayers != null || freezeEmbeddings != null) {
            throw new ParameterException(
                    spec.commandLine(), "--train-last-layers and --freeze-embeddings choose what a full fine-tuning trains; a LoRA run trains only its adapter");
        }
    }

    /** The adapter to train: the options over the resumed adapter's config, or over the defaults; {@code null} for a full fine-tuning. */
    private LoraConfig lora(CausalLmBlock block, Path adapterResume) throws InvalidCheckpointException {
        if (adapterResume == null && !anyLoraOption()) {
            return null;
        }
        LoraConfig saved = adapterResume == null ? null : PeftAdapter.readConfig(adapterResume);
        int rank = loraRank != null ? loraRank : saved.rank();
        float alpha = loraAlpha != null ? loraAlpha : saved != null ? saved.alpha() : LoraConfig.DEFAULT_ALPHA;
        float dropout = loraDropout != null ? loraDropout : saved != null ? saved.dropout() : LoraConfig.DEFAULT_DROPOUT;
        try {
            if (loraTargets == null && saved != null) {
                return new LoraConfig(rank, alpha, dropout, saved.targetModules(), saved.targetPattern());
            }
            List<String> targets = loraTargets != null ? loraTargets : LoraAdapter.attentionTargets(block);
            LoraConfig config = new LoraConfig(rank, alpha, dropout, targets);
            LoraAdapter.declare(block, config, false);
            return config;
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /** Checks the data files before the model loads, naming the option of a missing one. */
    private static void requireFiles(String option, List<Path> files) throws FileNotFoundException {
        for (Path file : files) {
            if (Files.isDirectory(file)) {
                throw new FileNotFoundException(option + " " + file + " is a directory; list the files in it");
            }
            if (!Files.isRegularFile(file)) {
                throw new FileNotFoundException(option + " " + file + ": no such file");
            }
        }
    }

    private boolean parseFormat() {
        switch (format.toLowerCase(Locale.ROOT)) {
            case "text":
                return false;
            case "jsonl":
                return true;
            default:
                throw new ParameterException(spec.commandLine(), "--format must be text or jsonl, not '" + format + "'");
        }
    }

    private void checkOutput() throws IOException {
        if (fromScratch && start.model == null) {
            throw new ParameterException(spec.commandLine(), "--from-scratch needs --model (a resumed run has weights)");
        }
        boolean inPlace =
                start.resume != null
                        && Files.exists(out)
                        && Files.isSameFile(out.toAbsolutePath(), start.resume.toAbsolutePath());
        if (Files.exists(out) && !inPlace && !isEmptyDirectory(out)) {
            throw new ParameterException(
                    spec.commandLine(),
                    "--out " + out + " already exists; choose a new directory, or pass --resume " + out + " to continue it");
        }
    }

    private static boolean isEmptyDirectory(Path dir) throws IOException {
        if (!Files.isDirectory(dir)) {
            return false;
        }
        try (Stream<Path> entries = Files.list(dir)) {
            return entries.findAny().isEmpty();
        }
    }

    private LocalModel open(Path source, Device target) throws Exception {
        return fromScratch
                ? LocalModel.initialize(source, target, DataType.FLOAT32)
                : LocalModel.load(source, target, DataType.FLOAT32);
    }

    private FineTuneSettings settings(TrainerState resumed, DecoderConfig config) {
        FineTuneSettings.Builder b =
                resumed != null
                        ? resumed.settings().toBuilder()
                        : FineTuneSettings.builder()
                                .sequenceLength(Math.min(FineTuneSettings.DEFAULT_SEQUENCE_LENGTH, config.maxPositions()));
        if (steps != null) {
            b.steps(steps);
        }
        if (batch != null) {
            b.batchSize(batch);
        }
        if (seqLen != null) {
            if (seqLen > config.maxPositions()) {
                throw new ParameterException(
                        spec.commandLine(),
                        "--seq-len " + seqLen + " exceeds the model's context window of " + config.maxPositions());
            }
            b.sequenceLength(seqLen);
        }
        if (lr != null) {
            b.learningRate(lr);
        }
        if (warmup != null) {
            b.warmupSteps(warmup);
        }
        if (weightDecay != null) {
            b.weightDecay(weightDecay);
        }
        if (gradClip != null) {
            b.maxGradNorm(gradClip);
        }
        if (gradAccum != null) {
            b.gradAccum(gradAccum);
        }
        if (trainLastLayers != null) {
            b.trainLastLayers(trainLastLayers);
        }
        if (freezeEmbeddings != null) {
            b.freezeEmbeddings(freezeEmbeddings);
        }
        if (evalEvery != null) {
            b.evalEvery(evalEvery);
        }
        if (saveEvery != null) {
            b.saveEvery(saveEvery);
        }
        if (logEvery != null) {
            b.logEvery(logEvery);
        }
        if (seed != null) {
            b.seed(seed);
        }
        if (optimizerState != null) {
            b.saveOptimizerState(optimizerState);
        }
        try {
            return b.build();
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    private static RandomAccessDataset dataset(
            List<Path> files,
            boolean jsonl,
            TextTokenizer tokenizer,
            long eos,
            FineTuneSettings settings,
            DecoderConfig config,
            PrintWriter err)
            throws IOException {
        RandomAccessDataset dataset;
        if (jsonl) {
            PromptCompletionDataset.Builder builder =
                    PromptCompletionDataset.builder()
                            .setSequenceLength(settings.sequenceLength())
                            .optPadTokenId(Math.max(eos, 0))
                            .optVocabularySize(config.vocabSize());
            for (Path file : files) {
                builder.addJsonl(file, tokenizer, eos);
            }
            PromptCompletionDataset examples = builder.build();
            if (examples.droppedExamples() > 0) {
                err.printf(Locale.ROOT, "dropped %d example(s) whose prompt fills all %d tokens%n",
                        examples.droppedExamples(), settings.sequenceLength());
            }
            dataset = examples;
        } else {
            PackedTextDataset text =
                    PackedTextDataset.builder()
                            .setTokens(PackedTextDataset.tokenizeFiles(tokenizer, files, eos, config.vocabSize()))
                            .setSequenceLength(settings.sequenceLength())
                            .build();
            dataset = text;
        }
        if (dataset.size() == 0) {
            throw new IllegalArgumentException(
                    files + ": no training record of " + settings.sequenceLength() + " tokens; give more text or a smaller --seq-len");
        }
        return dataset;
    }

    private void printSummary(OutputFormat format, FineTuneResult result) {
        PrintWriter stdout = spec.commandLine().getOut();
        Perplexity before = result.initialEval();
        Perplexity after = result.finalEval();
        if (format == OutputFormat.JSON) {
            JsonObject json = new JsonObject();
            json.addProperty("out", out.toString());
            json.addProperty("start_step", result.startStep());
            json.addProperty("step", result.finalStep());
            json.addProperty("train_loss", result.trainLoss());
            json.addProperty("eval_perplexity_before", before == null ? null : before.value());
            json.addProperty("eval_perplexity_after", after == null ? null : after.value());
            json.addProperty("seconds", result.seconds());
            stdout.println(Json.GSON.toJson(json));
        } else {
            stdout.printf(Locale.ROOT, "saved %s at step %d (train loss %.4f", out, result.finalStep(), result.trainLoss());
            if (before != null && after != null) {
                stdout.printf(Locale.ROOT, ", held-out perplexity %.3f -> %.3f", before.value(), after.value());
            }
            stdout.printf(Locale.ROOT, ", %.1f s)%n", result.seconds());
        }
        stdout.flush();
    }
}
