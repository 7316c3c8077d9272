package io.github.djlllmzoo.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.optimizer.AdamW;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.ParameterTracker;
import ai.djl.training.tracker.Tracker;
import io.github.djlllmzoo.blocks.ConfiguredBlock;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import java.io.IOException;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * AdamW whose moment estimates can be saved with a checkpoint and restored on resume. The update is
 * DJL's own {@link AdamW} update (the same engine kernel, {@code adamUpdate} with decoupled weight
 * decay); unlike DJL's class, this one keeps its moments where they can be read, keyed by
 * checkpoint parameter name ({@code <name>.exp_avg}, {@code <name>.exp_avg_sq}), and applies weight
 * decay only to matrices and embeddings (rank &ge; 2), not to biases and norm scales, as Hugging
 * Face and nanoGPT do. Set {@code optBeginNumUpdate(step)} when resuming so bias correction and the
 * learning-rate schedule continue from that step.
 */
public final class ResumableAdamW extends Optimizer {

    /** Suffix of a parameter's first-moment tensor in the optimizer state file. */
    public static final String MEAN_SUFFIX = ".exp_avg";
    /** Suffix of a parameter's second-moment tensor in the optimizer state file. */
    public static final String VARIANCE_SUFFIX = ".exp_avg_sq";

    private final ParameterTracker learningRateTracker;
    private final float beta1;
    private final float beta2;
    private final float epsilon;
    private final Map<String, Parameter> parametersByName;
    private final Map<String, Boolean> decayById = new ConcurrentHashMap<>();
    private final Map<String, NDArray> means = new ConcurrentHashMap<>();
    private final Map<String, NDArray> variances = new ConcurrentHashMap<>();

    private ResumableAdamW(Builder builder) {
        super(builder);
        learningRateTracker = builder.learningRateTracker;
        beta1 = builder.beta1;
        beta2 = builder.beta2;
        epsilon = builder.epsilon;
        parametersByName = builder.parameters;
        Map<String, Shape> shapes = builder.shapes;
        for (Map.Entry<String, Parameter> e : parametersByName.entrySet()) {
            String id = e.getValue().getId();
            decayById.put(id, shapes.get(e.getKey()).dimension() >= 2);
        }
    }

    /** @return a builder with Adam's usual betas (0.9, 0.999) and epsilon 1e-8 */
    public static Builder builder() {
        return new Builder();
    }

    @Override
    public void update(String parameterId, NDArray weight, NDArray grad) {
        int t = updateCount(parameterId);
        float learningRate = learningRateTracker.getNewValue(parameterId, t);
        double coef1 = 1.0 - Math.pow(beta1, t);
        double coef2 = 1.0 - Math.pow(beta2, t);
        float biasCorrected = (float) (learningRate * Math.sqrt(coef2) / coef1);
        float weightDecay = Boolean.TRUE.equals(decayById.get(parameterId)) ? getWeightDecay() : 0f;
        if (!Float.isFinite(learningRate) || !Float.isFinite(weightDecay)) {
            throw new IllegalStateException(
                    "learning rate (" + learningRate + ") or weight decay (" + weightDecay + ") is not finite");
        }
        NDArray mean = means.computeIfAbsent(parameterId, k -> weight.zerosLike());
        NDArray variance = variances.computeIfAbsent(parameterId, k -> weight.zerosLike());
        weight.getNDArrayInternal()
                .adamUpdate(
                        new NDList(weight, grad, mean, variance),
                        new NDList(weight),
                        learningRate,
                        biasCorrected,
                        weightDecay,
                        rescaleGrad,
                        clipGrad,
                        beta1,
                        beta2,
                        epsilon,
                        true,
                        true);
    }

    /** @return the first-moment decay */
    public float beta1() {
        return beta1;
    }

    /** @return the second-moment decay */
    public float beta2() {
        return beta2;
    }

    /** @return the denominator's stabilizer */
    public float epsilon() {
        return epsilon;
    }

    /** @return the weight decay applied to matrices and embeddings */
    public float weightDecay() {
        return getWeightDecay();
    }

    /**
     * The learning rate of a given update, as {@link #update} uses it.
     *
     * @param update the 1-based update number
     * @return the learning rate
     */
    public float learningRate(int update) {
        return learningRateTracker.getNewValue(null, update);
    }

    /**
     * The moments, by {@code <parameter name>.exp_avg} / {@code .exp_avg_sq}, of every parameter
     * updated (or restored) so far; the arrays are the live state.
     *
     * @return name to array, in parameter order
     */
    public Map<String, NDArray> state() {
        Map<String, NDArray> out = new LinkedHashMap<>();
        for (Map.Entry<String, Parameter> e : parametersByName.entrySet()) {
            String id = e.getValue().getId();
            if (means.containsKey(id)) {
                out.put(e.getKey() + MEAN_SUFFIX, means.get(id));
                out.put(e.getKey() + VARIANCE_SUFFIX, variances.get(id));
            }
        }
        return Collections.unmodifiableMap(out);
    }

    /**
     * Restores moments saved by {@link #state()}: each trainable parameter whose two tensors are
     * in the file gets them, on its array's device and in its data type; others start from zero.
     *
     * @param reader the optimizer state file
     * @return how many parameters got their moments back
     * @throws IOException if the file cannot be read
     * @throws InvalidCheckpointException if a tensor's shape disagrees with its parameter
     */
    public int restore(SafeTensorsReader reader) throws IOException, InvalidCheckpointException {
        int restored = 0;
        for (Map.Entry<String, Parameter> e : parametersByName.entrySet()) {
            Parameter parameter = e.getValue();
            String mean = e.getKey() + MEAN_SUFFIX;
            String variance = e.getKey() + VARIANCE_SUFFIX;
            if (!parameter.requiresGradient() || !reader.contains(mean) || !reader.contains(variance)) {
                continue;
            }
            NDArray weight = parameter.getArray();
            for (String name : new String[] {mean, variance}) {
                Shape shape = reader.tensors().get(name).toShape();
                if (!shape.equals(weight.getShape())) {
                    throw new InvalidCheckpointException(
                            reader.file(),
                            name,
                            "shape " + shape + " disagrees with parameter shape " + weight.getShape());
                }
            }
            means.put(parameter.getId(), reader.load(mean, weight.getManager(), weight.getDataType()));
            variances.put(parameter.getId(), reader.load(variance, weight.getManager(), weight.getDataType()));
            restored++;
        }
        return restored;
    }

    /** Builds a {@link ResumableAdamW}. */
    public static final class Builder extends OptimizerBuilder<Builder> {

        private ParameterTracker learningRateTracker = Tracker.fixed(0.001f);
        private float beta1 = 0.9f;
        private float beta2 = 0.999f;
        private float epsilon = 1e-8f;
        private Map<String, Parameter> parameters;
        private Map<String, Shape> shapes;

        private Builder() {}

        @Override
        protected Builder self() {
            return this;
        }

        /**
         * @param tracker the learning rate by update number
         * @return this builder
         */
        public Builder optLearningRateTracker(ParameterTracker tracker) {
            this.learningRateTracker = tracker;
            return this;
        }

        /**
         * @param beta1 the first-moment decay
         * @return this builder
         */
        public Builder optBeta1(float beta1) {
            this.beta1 = beta1;
            return this;
        }

        /**
         * @param beta2 the second-moment decay
         * @return this builder
         */
        public Builder optBeta2(float beta2) {
            this.beta2 = beta2;
            return this;
        }

        /**
         * @param epsilon the denominator's stabilizer
         * @return this builder
         */
        public Builder optEpsilon(float epsilon) {
            this.epsilon = epsilon;
            return this;
        }

        /**
         * @param block the model whose parameters this optimizer updates (for names and ranks)
         * @return this builder
         */
        public Builder setBlock(ConfiguredBlock block) {
            return setParameters(block.namedParameters(), block.declaredShapes());
        }

        /**
         * @param parameters the parameters this optimizer updates, by the names their moments are
         *     saved under (a LoRA adapter's, for instance)
         * @param shapes their shapes, by the same names (for their ranks)
         * @return this builder
         */
        public Builder setParameters(Map<String, Parameter> parameters, Map<String, Shape> shapes) {
            this.parameters = parameters;
            this.shapes = shapes;
            return this;
        }

        /**
         * @return the optimizer
         * @throws IllegalArgumentException if no block or parameters were set
         */
        public ResumableAdamW build() {
            if (parameters == null) {
                throw new IllegalArgumentException("no parameters: call setBlock or setParameters");
            }
            return new ResumableAdamW(this);
        }
    }
}
