package io.github.djlllmzoo.training;

import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.ConfigJson;

/**
 * The hyper-parameters of a fine-tuning run. One optimizer step consumes {@code gradAccum}
 * micro-batches of {@code batchSize} records of up to {@code sequenceLength} tokens.
 *
 * @param steps optimizer steps to reach (a resumed run continues up to this step)
 * @param batchSize records per micro-batch
 * @param sequenceLength input tokens per record
 * @param learningRate peak learning rate
 * @param warmupSteps steps of linear warm-up before the cosine decay
 * @param weightDecay AdamW's decoupled weight decay on matrices and embeddings
 * @param maxGradNorm global gradient-norm limit, or 0 for no clipping
 * @param gradAccum micro-batches per optimizer step
 * @param trainLastLayers how many last decoder layers train, or {@link LayerFreezing#ALL_LAYERS}
 * @param freezeEmbeddings whether the embeddings stay frozen when all layers train
 * @param evalEvery steps between held-out evaluations, or 0 for none during training
 * @param saveEvery steps between checkpoints, or 0 for one at the end only
 * @param logEvery steps between progress lines
 * @param seed the seed of initialization, data order and dropout
 * @param saveOptimizerState whether checkpoints include the AdamW moments (for an exact resume)
 */
public record FineTuneSettings(
        int steps,
        int batchSize,
        int sequenceLength,
        float learningRate,
        int warmupSteps,
        float weightDecay,
        float maxGradNorm,
        int gradAccum,
        int trainLastLayers,
        boolean freezeEmbeddings,
        int evalEvery,
        int saveEvery,
        int logEvery,
        int seed,
        boolean saveOptimizerState) {

    /** Default optimizer steps. */
    public static final int DEFAULT_STEPS = 100;
    /** Default records per micro-batch. */
    public static final int DEFAULT_BATCH_SIZE = 8;
    /** Default tokens per record (capped by the context window where the caller knows it). */
    public static final int DEFAULT_SEQUENCE_LENGTH = 128;
    /** Default peak learning rate, Hugging Face's. */
    public static final float DEFAULT_LEARNING_RATE = 5e-5f;
    /** Default weight decay, DJL's AdamW default. */
    public static final float DEFAULT_WEIGHT_DECAY = 0.01f;
    /** Default global gradient-norm limit, Hugging Face's. */
    public static final float DEFAULT_MAX_GRAD_NORM = 1.0f;
    /** Default steps between evaluations. */
    public static final int DEFAULT_EVAL_EVERY = 50;
    /** Default steps between checkpoints. */
    public static final int DEFAULT_SAVE_EVERY = 100;
    /** Default steps between progress lines. */
    public static final int DEFAULT_LOG_EVERY = 10;
    /** Default seed. */
    public static final int DEFAULT_SEED = 42;

    /**
     * Validates the values; messages name the setting.
     *
     * @param steps optimizer steps to reach (a resumed run continues up to this step)
     * @param batchSize records per micro-batch
     * @param sequenceLength input tokens per record
     * @param learningRate peak learning rate
     * @param warmupSteps steps of linear warm-up before the cosine decay
     * @param weightDecay AdamW's decoupled weight decay on matrices and embeddings
     * @param maxGradNorm global gradient-norm limit, or 0 for no clipping
     * @param gradAccum micro-batches per optimizer step
     * @param trainLastLayers how many last decoder layers train, or {@link LayerFreezing#ALL_LAYERS}
     * @param freezeEmbeddings whether the embeddings stay frozen when all layers train
     * @param evalEvery steps between held-out evaluations, or 0 for none during training
     * @param saveEvery steps between checkpoints, or 0 for one at the end only
     * @param logEvery steps between progress lines
     * @param seed the seed of initialization, data order and dropout
     * @param saveOptimizerState whether checkpoints include the AdamW moments (for an exact resume)
     */
    public FineTuneSettings {
        require(steps >= 1, "steps must be at least 1, got " + steps);
        require(batchSize >= 1, "batch size must be at least 1, got " + batchSize);
        require(sequenceLength >= 1, "sequence length must be at least 1, got " + sequenceLength);
        require(learningRate > 0 && Float.isFinite(learningRate),
                "learning rate must be positive, got " + learningRate);
        require(warmupSteps >= 0 && warmupSteps <= steps, "warm-up must be in [0, steps], got " + warmupSteps);
        require(weightDecay >= 0 && Float.isFinite(weightDecay), "weight decay must be >= 0, got " + weightDecay);
        require(maxGradNorm >= 0 && Float.isFinite(maxGradNorm), "gradient clip must be >= 0, got " + maxGradNorm);
        require(gradAccum >= 1, "gradient accumulation must be at least 1, got " + gradAccum);
        require(trainLastLayers >= LayerFreezing.ALL_LAYERS, "layers to train must be >= 0, got " + trainLastLayers);
        require(evalEvery >= 0, "eval interval must be >= 0, got " + evalEvery);
        require(saveEvery >= 0, "save interval must be >= 0, got " + saveEvery);
        require(logEvery >= 1, "log interval must be at least 1, got " + logEvery);
    }

    private static void require(boolean condition, String message) {
        if (!condition) {
            throw new IllegalArgumentException(message);
        }
    }

    /** @return a builder with the defaults */
    public static Builder builder() {
        return new Builder();
    }

    /** @return a builder starting from these values */
    public Builder toBuilder() {
        return new Builder()
                .steps(steps)
                .batchSize(batchSize)
                .sequenceLength(sequenceLength)
                .learningRate(learningRate)
                .warmupSteps(warmupSteps)
                .weightDecay(weightDecay)
                .maxGradNorm(maxGradNorm)
                .gradAccum(gradAccum)
                .trainLastLayers(trainLastLayers)
                .freezeEmbeddings(freezeEmbeddings)
                .evalEvery(evalEvery)
                .saveEvery(saveEvery)
                .logEvery(logEvery)
                .seed(seed)
                .saveOptimizerState(saveOptimizerState);
    }

    /**
     * Writes the settings with Hugging Face {@code TrainingArguments} names where one exists.
     *
     * @return the JSON object
     */
    public JsonObject toJson() {
        JsonObject json = new JsonObject();
        json.addProperty("max_steps", steps);
        json.addProperty("per_device_train_batch_size", batchSize);
        json.addProperty("sequence_length", sequenceLength);
        json.addProperty("learning_rate", learningRate);
        json.addProperty("warmup_steps", warmupSteps);
        json.addProperty("weight_decay", weightDecay);
        json.addProperty("max_grad_norm", maxGradNorm);
        json.addProperty("gradient_accumulation_steps", gradAccum);
        json.addProperty("train_last_layers", trainLastLayers);
        json.addProperty("freeze_embeddings", freezeEmbeddings);
        json.addProperty("eval_steps", evalEvery);
        json.addProperty("save_steps", saveEvery);
        json.addProperty("logging_steps", logEvery);
        json.addProperty("seed", seed);
        json.addProperty("save_optimizer_state", saveOptimizerState);
        return json;
    }

    /**
     * Reads settings written by {@link #toJson()}.
     *
     * @param json the object
     * @return the settings
     * @throws InvalidCheckpointException naming the field that is missing or invalid
     */
    public static FineTuneSettings fromJson(ConfigJson json) throws InvalidCheckpointException {
        try {
            return new FineTuneSettings(
                    json.requireInt("max_steps"),
                    json.requireInt("per_device_train_batch_size"),
                    json.requireInt("sequence_length"),
                    (float) json.optDouble("learning_rate", Double.NaN),
                    json.requireInt("warmup_steps"),
                    (float) json.optDouble("weight_decay", Double.NaN),
                    (float) json.optDouble("max_grad_norm", Double.NaN),
                    json.requireInt("gradient_accumulation_steps"),
                    json.requireInt("train_last_layers"),
                    json.optBoolean("freeze_embeddings", false),
                    json.requireInt("eval_steps"),
                    json.requireInt("save_steps"),
                    json.requireInt("logging_steps"),
                    json.requireInt("seed"),
                    json.optBoolean("save_optimizer_state", true));
        } catch (IllegalArgumentException e) {
            throw new InvalidCheckpointException(json.file(), "settings", e.getMessage(), e);
        }
    }

    /** Builds {@link FineTuneSettings}; every value starts at its default. */
    public static final class Builder {
        private int steps = DEFAULT_STEPS;
        private int batchSize = DEFAULT_BATCH_SIZE;
        private int sequenceLength = DEFAULT_SEQUENCE_LENGTH;
        private float learningRate = DEFAULT_LEARNING_RATE;
        private int warmupSteps;
        private float weightDecay = DEFAULT_WEIGHT_DECAY;
        private float maxGradNorm = DEFAULT_MAX_GRAD_NORM;
        private int gradAccum = 1;
        private int trainLastLayers = LayerFreezing.ALL_LAYERS;
        private boolean freezeEmbeddings;
        private int evalEvery = DEFAULT_EVAL_EVERY;
        private int saveEvery = DEFAULT_SAVE_EVERY;
        private int logEvery = DEFAULT_LOG_EVERY;
        private int seed = DEFAULT_SEED;
        private boolean saveOptimizerState = true;

        private Builder() {}

        /**
         * @param v optimizer steps to reach
         * @return this builder
         */
        public Builder steps(int v) {
            steps = v;
            return this;
        }

        /**
         * @param v records per micro-batch
         * @return this builder
         */
        public Builder batchSize(int v) {
            batchSize = v;
            return this;
        }

        /**
         * @param v input tokens per record
         * @return this builder
         */
        public Builder sequenceLength(int v) {
            sequenceLength = v;
            return this;
        }

        /**
         * @param v peak learning rate
         * @return this builder
         */
        public Builder learningRate(float v) {
            learningRate = v;
            return this;
        }

        /**
         * @param v warm-up steps
         * @return this builder
         */
        public Builder warmupSteps(int v) {
            warmupSteps = v;
            return this;
        }

        /**
         * @param v weight decay
         * @return this builder
         */
        public Builder weightDecay(float v) {
            weightDecay = v;
            return this;
        }

        /**
         * @param v global gradient-norm limit, 0 for none
         * @return this builder
         */
        public Builder maxGradNorm(float v) {
            maxGradNorm = v;
            return this;
        }

        /**
         * @param v micro-batches per step
         * @return this builder
         */
        public Builder gradAccum(int v) {
            gradAccum = v;
            return this;
        }

        /**
         * @param v last layers to train, or {@link LayerFreezing#ALL_LAYERS}
         * @return this builder
         */
        public Builder trainLastLayers(int v) {
            trainLastLayers = v;
            return this;
        }

        /**
         * @param v whether to freeze the embeddings
         * @return this builder
         */
        public Builder freezeEmbeddings(boolean v) {
            freezeEmbeddings = v;
            return this;
        }

        /**
         * @param v steps between evaluations, 0 for none
         * @return this builder
         */
        public Builder evalEvery(int v) {
            evalEvery = v;
            return this;
        }

        /**
         * @param v steps between checkpoints, 0 for the end only
         * @return this builder
         */
        public Builder saveEvery(int v) {
            saveEvery = v;
            return this;
        }

        /**
         * @param v steps between progress lines
         * @return this builder
         */
        public Builder logEvery(int v) {
            logEvery = v;
            return this;
        }

        /**
         * @param v the seed
         * @return this builder
         */
        public Builder seed(int v) {
            seed = v;
            return this;
        }

        /**
         * @param v whether checkpoints hold the optimizer moments
         * @return this builder
         */
        public Builder saveOptimizerState(boolean v) {
            saveOptimizerState = v;
            return this;
        }

        /**
         * @return the settings
         * @throws IllegalArgumentException naming the first invalid value
         */
        public FineTuneSettings build() {
            return new FineTuneSettings(
                    steps, batchSize, sequenceLength, learningRate, warmupSteps, weightDecay,
                    maxGradNorm, gradAccum, trainLastLayers, freezeEmbeddings, evalEvery, saveEvery,
                    logEvery, seed, saveOptimizerState);
        }
    }
}
