package io.github.djlllmzoo.training;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.TrainingDivergedException;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.GradientCollector;
import ai.djl.training.LocalParameterServer;
import ai.djl.training.ParameterServer;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.translate.TranslateException;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.LoraAdapter;
import io.github.djlllmzoo.blocks.LoraConfig;
import io.github.djlllmzoo.zoo.PeftAdapter;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Fine-tunes (or trains) a {@link CausalLmBlock} held by a DJL {@link Model} with DJL's {@link
 * Trainer}: {@link CausalLmLoss}, {@link ResumableAdamW} under a {@link
 * LearningRateSchedule#warmupCosine warm-up + cosine} schedule, global-norm {@link
 * GradientClipping}, gradient accumulation, optional {@link LayerFreezing}, and dropout from the
 * model config (training passes only).
 *
 * <p>One optimizer step takes {@code gradAccum} micro-batches from a {@link ShuffledBatchSampler};
 * their gradients add up in the parameters (DJL's PyTorch gradient collector does not zero them;
 * the optimizer update does), each micro-batch's summed loss divided by the count of loss tokens
 * of the whole step, so the step's gradient is exactly that of one batch of all its records.
 * Progress goes to the given writer: every {@code logEvery} steps the step, the mean loss, the
 * learning rate, the gradient norm and tokens/s; every {@code evalEvery} steps the held-out loss
 * and perplexity. Every {@code saveEvery} steps and at the end a {@link TrainingCheckpoint}
 * replaces the output directory. With {@link Builder#optLora} it trains a LoRA adapter of the
 * frozen model instead, and checkpoints are PEFT adapters. The model trains on the single device its manager is on (CPU,
 * or one GPU).
 */
public final class FineTuner {

    private final Model model;
    private final CausalLmBlock block;
    private final LoraConfig lora;
    private final String loraBaseModel;
    private final RandomAccessDataset trainData;
    private final RandomAccessDataset evalData;
    private final FineTuneSettings settings;
    private final Path outputDir;
    private final Path sourceDir;
    private final Path resumeDir;
    private final PrintWriter progress;

    private FineTuner(Builder builder) {
        model = builder.model;
        block = (CausalLmBlock) builder.model.getBlock();
        lora = builder.lora;
        loraBaseModel = builder.loraBaseModel;
        trainData = builder.trainData;
        evalData = builder.evalData;
        settings = builder.settings;
        outputDir = builder.outputDir;
        sourceDir = builder.sourceDir;
        resumeDir = builder.resumeDir;
        progress = builder.progress;
    }

    /** @return a builder */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Trains up to {@code settings.steps()}, from step 0 or from the resumed checkpoint's step.
     *
     * @return where the run ended
     * @throws IOException if data cannot be read or a checkpoint cannot be written
     * @throws TranslateException if batching fails
     * @throws InvalidCheckpointException if the resumed checkpoint's state is invalid
     * @throws TrainingDivergedException if the loss stops being finite
     */
    public FineTuneResult run() throws IOException, TranslateException, InvalidCheckpointException {
        int startStep = resumeDir == null ? 0 : TrainerState.read(resumeDir).globalStep();
        if (startStep >= settings.steps()) {
            throw new IllegalArgumentException(
                    "the checkpoint is already at step " + startStep + "; ask for more than "
                            + settings.steps() + " steps to continue");
        }
        Engine engine = model.getNDManager().getEngine();
        engine.setRandomSeed(settings.seed() + startStep);
        LoraAdapter adapter = lora == null ? null : adapter(lora);
        Map<String, Parameter> trained = adapter == null ? block.namedParameters() : adapter.namedParameters();
        CausalLmLoss loss = new CausalLmLoss();
        ResumableAdamW optimizer =
                ResumableAdamW.builder()
                        .setParameters(trained, adapter == null ? block.declaredShapes() : adapter.declaredShapes())
                        .optLearningRateTracker(
                                LearningRateSchedule.warmupCosine(
                                        settings.learningRate(), settings.warmupSteps(), settings.steps()))
                        .optWeightDecays(settings.weightDecay())
                        .optBeginNumUpdate(startStep)
                        .build();
        Device device = model.getNDManager().getDevice();
        DefaultTrainingConfig config =
                new DefaultTrainingConfig(loss).optOptimizer(optimizer).optDevices(new Device[] {device});
        // DJL's Trainer.step first checks that the block's own parameters received gradients; a LoRA
        // run's block has none that train, so its adapter's parameters are updated through the
        // same parameter server the trainer would use
        ParameterServer adapterServer = adapter == null ? null : new LocalParameterServer(optimizer);
        long begin = System.nanoTime();
        try (Trainer trainer = model.newTrainer(config)) {
            LayerFreezing.Counts counts =
                    adapter == null
                            ? LayerFreezing.apply(block, settings.trainLastLayers(), settings.freezeEmbeddings())
                            : LayerFreezing.onlyAdapter(block, adapter);
            trainer.initialize(new Shape(settings.batchSize(), settings.sequenceLength()));
            restoreOptimizer(optimizer, startStep);
            log("training %,d of %,d parameters; %,d training records, %s; steps %d..%d on %s",
                    counts.trainable(), counts.total(), trainData.size(),
                    evalData == null
                            ? "no evaluation data"
                            : String.format(Locale.ROOT, "%,d held-out records", evalData.size()),
                    startStep + 1, settings.steps(), device);
            Perplexity initialEval = evalData == null ? null : evaluate(trainer, startStep);
            Perplexity lastEval = initialEval;
            Iterator<Batch> batches =
                    trainData
                            .getData(
                                    trainer.getManager(),
                                    new ShuffledBatchSampler(
                                            settings.batchSize(), settings.seed(),
                                            (long) startStep * settings.gradAccum()))
                            .iterator();
            Window window = new Window();
            double trainLoss = Double.NaN;
            int step = startStep;
            while (step < settings.steps()) {
                float learningRate = optimizer.learningRate(step + 1);
                double norm = trainStep(trainer, loss, batches, window, trained.values(), adapterServer);
                step++;
                boolean last = step == settings.steps();
                if (step % settings.logEvery() == 0 || last) {
                    trainLoss = window.meanLoss();
                    log("step %d/%d  loss %.4f  lr %.3e  grad_norm %.3f  tokens/s %.0f",
                            step, settings.steps(), trainLoss, learningRate, norm, window.tokensPerSecond());
                    window = new Window();
                }
                boolean evalNow = settings.evalEvery() > 0 && step % settings.evalEvery() == 0;
                if (evalData != null && (evalNow || last)) {
                    lastEval = evaluate(trainer, step);
                }
                boolean saveNow = settings.saveEvery() > 0 && step % settings.saveEvery() == 0;
                if (outputDir != null && (saveNow || last)) {
                    save(optimizer, adapter, step, trainLoss, lastEval);
                }
            }
            double seconds = (System.nanoTime() - begin) / 1e9;
            return new FineTuneResult(startStep, step, trainLoss, initialEval, lastEval, seconds);
        }
    }

    /** Runs one optimizer step and returns the gradient norm before clipping. */
    private double trainStep(
            Trainer trainer,
            CausalLmLoss loss,
            Iterator<Batch> batches,
            Window window,
            Collection<Parameter> parameters,
            ParameterServer adapterServer) {
        long started = System.nanoTime();
        List<Batch> micro = new ArrayList<>(settings.gradAccum());
        try {
            long counted = 0;
            for (int i = 0; i < settings.gradAccum(); i++) {
                Batch batch = batches.next();
                micro.add(batch);
                counted += CausalLmLoss.countedTokens(batch.getLabels());
            }
            double lossSum = 0;
            long inputTokens = 0;
            Device device = model.getNDManager().getDevice();
            for (Batch batch : micro) {
                // every array of the micro-batch's forward pass is attached to its inputs' manager:
                // a scope per micro-batch frees them once its gradients are in the parameters,
                // rather than holding those of every micro-batch until the step ends
                try (NDManager scope = trainer.getManager().newSubManager()) {
                    NDList inputs = batch.getData().toDevice(device, false);
                    NDList labels = batch.getLabels().toDevice(device, false);
                    inputs.tempAttach(scope);
                    labels.tempAttach(scope);
                    try (GradientCollector collector = trainer.newGradientCollector()) {
                        NDList logits = trainer.forward(inputs);
                        CausalLmLoss.TokenLoss tokenLoss = loss.tokenLoss(labels, logits);
                        // the loss's backward needs its log-probabilities, not the (B, T, V) logits
                        logits.close();
                        collector.backward(tokenLoss.sumOver(counted));
                        lossSum += tokenLoss.sum().toType(DataType.FLOAT64, false).getDouble();
                    }
                    inputTokens += inputs.head().size();
                }
            }
            if (!Double.isFinite(lossSum)) {
                throw new TrainingDivergedException("the training loss is " + lossSum);
            }
            double norm =
                    GradientClipping.clipGlobalNorm(parameters, settings.maxGradNorm(), trainer.getManager());
            if (adapterServer == null) {
                trainer.step();
            } else {
                for (Parameter parameter : parameters) {
                    adapterServer.update(parameter.getId(), new NDArray[] {parameter.getArray()});
                }
            }
            window.add(lossSum, counted, inputTokens, System.nanoTime() - started);
            return norm;
        } finally {
            for (Batch batch : micro) {
                batch.close();
            }
        }
    }

    /**
     * The adapter this run trains, attached as the model's default: the resumed checkpoint's, or
     * a fresh one (B zero, so training starts from the base model's outputs).
     */
    private LoraAdapter adapter(LoraConfig config) throws IOException, InvalidCheckpointException {
        LoraAdapter adapter;
        if (resumeDir != null) {
            LoraConfig saved = PeftAdapter.readConfig(resumeDir);
            if (!saved.equals(config)) {
                throw new IllegalArgumentException(
                        "the checkpoint's adapter is " + saved + ", not the " + config + " asked for");
            }
            adapter = PeftAdapter.load(block, resumeDir, model.getNDManager(), true);
        } else {
            adapter = LoraAdapter.declare(block, config, true).initialize(model.getNDManager(), block.dataType());
        }
        return adapter.attach(LoraAdapter.DEFAULT);
    }

    private Perplexity evaluate(Trainer trainer, int step) throws IOException, TranslateException {
        Perplexity result = Perplexity.evaluate(block, evalData, trainer.getManager(), settings.batchSize());
        log("step %d/%d  eval_loss %.4f  eval_ppl %.3f  (%,d tokens)",
                step, settings.steps(), result.meanLoss(), result.value(), result.tokens());
        return result;
    }

    private void restoreOptimizer(ResumableAdamW optimizer, int startStep)
            throws IOException, InvalidCheckpointException {
        if (resumeDir == null) {
            return;
        }
        String file = TrainerState.read(resumeDir).optimizerStateFile();
        if (file == null || !Files.isRegularFile(resumeDir.resolve(file))) {
            log("resuming at step %d without optimizer moments (the checkpoint has none):"
                            + " AdamW restarts them from zero",
                    startStep);
            return;
        }
        try (SafeTensorsReader reader = SafeTensorsReader.open(resumeDir.resolve(file))) {
            int restored = optimizer.restore(reader);
            log("resuming at step %d with the AdamW moments of %d parameters", startStep, restored);
        }
    }

    private void save(ResumableAdamW optimizer, LoraAdapter adapter, int step, double trainLoss, Perplexity eval)
            throws IOException {
        boolean withMoments = settings.saveOptimizerState();
        TrainerState state =
                new TrainerState(
                        step,
                        settings,
                        Double.isFinite(trainLoss) ? trainLoss : null,
                        eval == null ? null : eval.meanLoss(),
                        TrainerState.describe(optimizer, withMoments ? TrainingCheckpoint.OPTIMIZER_FILE : null));
        if (adapter == null) {
            TrainingCheckpoint.save(outputDir, block, sourceDir, state, withMoments ? optimizer : null);
        } else {
            TrainingCheckpoint.saveAdapter(outputDir, adapter, loraBaseModel, state, withMoments ? optimizer : null);
        }
        log("step %d/%d  saved %s", step, settings.steps(), outputDir);
    }

    private void log(String format, Object... args) {
        if (progress != null) {
            progress.println(String.format(Locale.ROOT, format, args));
            progress.flush();
        }
    }

    /** Loss and throughput over the steps since the last progress line. */
    private static final class Window {
        private double lossSum;
        private long counted;
        private long inputTokens;
        private long nanos;

        void add(double loss, long count, long tokens, long elapsed) {
            lossSum += loss;
            counted += count;
            inputTokens += tokens;
            nanos += elapsed;
        }

        double meanLoss() {
            return lossSum / Math.max(counted, 1);
        }

        double tokensPerSecond() {
            return nanos == 0 ? 0 : inputTokens * 1e9 / nanos;
        }
    }

    /** Builds a {@link FineTuner}. */
    public static final class Builder {
        private Model model;
        private RandomAccessDataset trainData;
        private RandomAccessDataset evalData;
        private FineTuneSettings settings = FineTuneSettings.builder().build();
        private Path outputDir;
        private Path sourceDir;
        private Path resumeDir;
        private PrintWriter progress;
        private LoraConfig lora;
        private String loraBaseModel;

        private Builder() {}

        /**
         * @param model a DJL model holding an initialized {@link CausalLmBlock} (loaded weights,
         *     or initialized from scratch); training updates its parameters in place
         * @return this builder
         */
        public Builder setModel(Model model) {
            this.model = model;
            return this;
        }

        /**
         * @param data the training records ({@link PackedTextDataset}, {@link
         *     PromptCompletionDataset} or a split of one)
         * @return this builder
         */
        public Builder setTrainData(RandomAccessDataset data) {
            this.trainData = data;
            return this;
        }

        /**
         * @param data held-out records to evaluate on, or {@code null}
         * @return this builder
         */
        public Builder optEvalData(RandomAccessDataset data) {
            this.evalData = data;
            return this;
        }

        /**
         * @param settings the hyper-parameters
         * @return this builder
         */
        public Builder optSettings(FineTuneSettings settings) {
            this.settings = settings;
            return this;
        }

        /**
         * Saves checkpoints: every {@code saveEvery} steps and at the end, {@code outputDir} is
         * replaced by a complete checkpoint.
         *
         * @param outputDir the checkpoint directory to publish
         * @param sourceDir the directory the model came from (its {@code config.json} and
         *     tokenizer files are copied)
         * @return this builder
         */
        public Builder optCheckpoints(Path outputDir, Path sourceDir) {
            this.outputDir = outputDir;
            this.sourceDir = sourceDir;
            return this;
        }

        /**
         * Continues the run a checkpoint recorded: from its step, with its AdamW moments when it
         * has them, and with the data stream where it stopped (given the same data, batch size,
         * accumulation and seed). The model must already hold the checkpoint's weights.
         *
         * @param checkpointDir a directory written by this class
         * @return this builder
         */
        public Builder optResumeFrom(Path checkpointDir) {
            this.resumeDir = checkpointDir;
            return this;
        }

        /**
         * Trains a LoRA adapter instead of the model: the base weights are frozen (they stay
         * bit-identical), only the adapter's A and B get gradients and AdamW moments, and
         * checkpoints are Hugging Face PEFT adapter directories ({@link PeftAdapter}) with the
         * trainer state. The adapter stays attached to the model as {@link LoraAdapter#DEFAULT}.
         * Resuming ({@link #optResumeFrom}) continues the adapter saved there, whose config must
         * equal {@code config}; the model is then the base model.
         *
         * @param config the adapter's rank, scale, dropout and targets
         * @param baseModel the base model's name or path, for {@code base_model_name_or_path}
         * @return this builder
         */
        public Builder optLora(LoraConfig config, String baseModel) {
            this.lora = config;
            this.loraBaseModel = baseModel;
            return this;
        }

        /**
         * @param progress where progress lines go, or {@code null} for none
         * @return this builder
         */
        public Builder optProgress(PrintWriter progress) {
            this.progress = progress;
            return this;
        }

        /**
         * @return the fine-tuner
         * @throws IllegalArgumentException if the model or training data is missing, or the
         *     model's block is not a {@link CausalLmBlock}
         */
        public FineTuner build() {
            if (model == null || !(model.getBlock() instanceof CausalLmBlock)) {
                throw new IllegalArgumentException("the model must hold a CausalLmBlock");
            }
            if (trainData == null) {
                throw new IllegalArgumentException("no training data: call setTrainData");
            }
            if (lora == null && (outputDir == null) != (sourceDir == null)) {
                throw new IllegalArgumentException("checkpoints need both an output and a source directory");
            }
            return new FineTuner(this);
        }
    }
}
