package io.github.djlllmzoo.spark;

import java.util.Arrays;
import java.util.List;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.param.FloatParam;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.LongParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.StringArrayParam;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable$;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationOverrides;

/**
 * A Spark ML {@code Transformer} that continues each row's prompt (text, or chat messages as an
 * array of {@code role}/{@code content} structs, rendered with the checkpoint's chat template as the
 * server renders them) with a djl-llm-zoo model, on the
 * executors, in batches through {@code Predictor.batchPredict}. Appends {@code text}, {@code
 * finish_reason}, {@code prompt_tokens}, {@code completion_tokens} and {@code error} (null when the
 * row went well; a row whose prompt is empty or over the context window gets its error and the job
 * goes on). Generation controls left unset take the checkpoint's {@code generation_config.json}
 * values, as {@code bin/llmzoo generate} does. A row's sampling seed derives from {@code seed} and
 * the row's {@code idCol} value (or its prompt), so retried tasks write the same rows.
 */
public final class LlmGenerator extends LlmTransformer {

    private static final long serialVersionUID = 1L;

    /** Param: the most tokens to generate per row. */
    private final IntParam maxNewTokens;
    /** Param: sample or pick the most likely token. */
    private final BooleanParam doSample;
    /** Param: the sampling temperature. */
    private final FloatParam temperature;
    /** Param: the top-k cut (0 disables). */
    private final IntParam topK;
    /** Param: the nucleus probability. */
    private final FloatParam topP;
    /** Param: the min-p cut. */
    private final FloatParam minP;
    /** Param: the penalty on tokens already seen. */
    private final FloatParam repetitionPenalty;
    /** Param: texts that end a row's generation. */
    private final StringArrayParam stopStrings;
    /** Param: the job's seed. */
    private final LongParam seed;
    /** Param: the column identifying each row, for its seed. */
    private final Param<String> idCol;

    /** A generator with a fresh uid. */
    public LlmGenerator() {
        this(Identifiable$.MODULE$.randomUID("llmGenerator"));
    }

    /** @param uid the stage's id (loading a saved pipeline calls this) */
    public LlmGenerator(String uid) {
        super(uid, "prompt");
        maxNewTokens = new IntParam(this, "maxNewTokens", "the most tokens to generate per row (>= 1)");
        doSample = new BooleanParam(this, "doSample", "sample (true) or pick the most likely token (false)");
        temperature = new FloatParam(this, "temperature", "sampling temperature (>= 0)");
        topK = new IntParam(this, "topK", "sample among the k most likely tokens (0 disables)");
        topP = new FloatParam(this, "topP", "nucleus sampling probability, in (0, 1]");
        minP = new FloatParam(this, "minP", "drop tokens less likely than minP times the most likely, in [0, 1]");
        repetitionPenalty = new FloatParam(this, "repetitionPenalty", "penalty on tokens already seen (> 0; 1 disables)");
        stopStrings = new StringArrayParam(this, "stopStrings", "texts that end a row's generation");
        seed = new LongParam(this, "seed", "the job's seed; each row's sampler seed derives from it and the row");
        idCol = new Param<>(this, "idCol", "a column identifying each row, for its seed (unset: the prompt)");
        setDefault(seed, (Object) 0L);
        setDefault(stopStrings, new String[0]);
    }

    /** @return a reader of saved generators */
    public static MLReader<LlmGenerator> read() {
        return new DefaultParamsReader<>();
    }

    /**
     * @param path where a generator was saved
     * @return the generator
     */
    public static LlmGenerator load(String path) {
        return read().load(path);
    }

    /** @return the max new tokens param */
    public IntParam maxNewTokens() {
        return maxNewTokens;
    }

    /** @return the do-sample param */
    public BooleanParam doSample() {
        return doSample;
    }

    /** @return the temperature param */
    public FloatParam temperature() {
        return temperature;
    }

    /** @return the top-k param */
    public IntParam topK() {
        return topK;
    }

    /** @return the top-p param */
    public FloatParam topP() {
        return topP;
    }

    /** @return the min-p param */
    public FloatParam minP() {
        return minP;
    }

    /** @return the repetition penalty param */
    public FloatParam repetitionPenalty() {
        return repetitionPenalty;
    }

    /** @return the stop strings param */
    public StringArrayParam stopStrings() {
        return stopStrings;
    }

    /** @return the seed param */
    public LongParam seed() {
        return seed;
    }

    /** @return the id column param */
    public Param<String> idCol() {
        return idCol;
    }

    /**
     * @param value the model reference
     * @return this
     */
    public LlmGenerator setModel(String value) {
        setModelReference(value);
        return this;
    }

    /**
     * @param value the most tokens per row
     * @return this
     */
    public LlmGenerator setMaxNewTokens(int value) {
        set(maxNewTokens, (Object) value);
        return this;
    }

    /** @return this, picking the most likely token at each step */
    public LlmGenerator setGreedy() {
        set(doSample, (Object) false);
        return this;
    }

    /**
     * @param value whether to sample
     * @return this
     */
    public LlmGenerator setDoSample(boolean value) {
        set(doSample, (Object) value);
        return this;
    }

    /**
     * @param value the temperature
     * @return this
     */
    public LlmGenerator setTemperature(float value) {
        set(temperature, (Object) value);
        return this;
    }

    /**
     * @param value top-k
     * @return this
     */
    public LlmGenerator setTopK(int value) {
        set(topK, (Object) value);
        return this;
    }

    /**
     * @param value top-p
     * @return this
     */
    public LlmGenerator setTopP(float value) {
        set(topP, (Object) value);
        return this;
    }

    /**
     * @param value min-p
     * @return this
     */
    public LlmGenerator setMinP(float value) {
        set(minP, (Object) value);
        return this;
    }

    /**
     * @param value the repetition penalty
     * @return this
     */
    public LlmGenerator setRepetitionPenalty(float value) {
        set(repetitionPenalty, (Object) value);
        return this;
    }

    /**
     * @param value the stop strings
     * @return this
     */
    public LlmGenerator setStopStrings(String... value) {
        set(stopStrings, value);
        return this;
    }

    /**
     * @param value the job's seed
     * @return this
     */
    public LlmGenerator setSeed(long value) {
        set(seed, (Object) value);
        return this;
    }

    /**
     * @param value the column identifying each row
     * @return this
     */
    public LlmGenerator setIdCol(String value) {
        set(idCol, value);
        return this;
    }

    /**
     * @return the controls the executors apply to the checkpoint's defaults
     * @throws IllegalArgumentException naming the field whose value is out of range
     */
    GenerationSettings settings() {
        GenerationSettings settings =
                new GenerationSettings(
                        new GenerationOverrides(
                                (Integer) valueOrNull(maxNewTokens),
                                (Boolean) valueOrNull(doSample),
                                (Float) valueOrNull(temperature),
                                (Integer) valueOrNull(topK),
                                (Float) valueOrNull(topP),
                                (Float) valueOrNull(minP),
                                (Float) valueOrNull(repetitionPenalty),
                                Arrays.asList(getOrDefault(stopStrings)),
                                null,
                                null),
                        (Long) getOrDefault(seed));
        settings.apply(GenerationConfig.builder());
        return settings;
    }

    private Object valueOrNull(Param<?> param) {
        return isDefined(param) ? getOrDefault(param) : null;
    }

    /** Prompts as text, or as chat messages: an array of structs with string {@code role} and {@code content}. */
    @Override
    protected boolean acceptsInput(DataType type) {
        return super.acceptsInput(type) || isChat(type);
    }

    @Override
    protected String inputDescription() {
        return "a string or an array<struct<role: string, content: string>>";
    }

    private static boolean isChat(DataType type) {
        if (!(type instanceof ArrayType array) || !(array.elementType() instanceof StructType message)) {
            return false;
        }
        List<String> names = Arrays.asList(message.fieldNames());
        return names.contains("role") && names.contains("content")
                && message.apply("role").dataType().equals(DataTypes.StringType)
                && message.apply("content").dataType().equals(DataTypes.StringType);
    }

    @Override
    protected List<StructField> outputFields() {
        return List.of(
                DataTypes.createStructField("text", DataTypes.StringType, true),
                DataTypes.createStructField("finish_reason", DataTypes.StringType, true),
                DataTypes.createStructField("prompt_tokens", DataTypes.IntegerType, true),
                DataTypes.createStructField("completion_tokens", DataTypes.IntegerType, true),
                DataTypes.createStructField(getErrorCol(), DataTypes.StringType, true));
    }

    @Override
    public StructType transformSchema(StructType schema) {
        StructType output = super.transformSchema(schema);
        settings();
        if (isDefined(idCol) && !Arrays.asList(schema.fieldNames()).contains(getOrDefault(idCol))) {
            throw new IllegalArgumentException("idCol: no column '" + getOrDefault(idCol) + "' in the input");
        }
        return output;
    }

    @Override
    protected RowBatches partitionFunction(StructType schema) {
        int idIndex = isDefined(idCol) ? schema.fieldIndex(getOrDefault(idCol)) : -1;
        return new GeneratePartition(
                modelSpec(), settings(), schema.fieldIndex(getInputCol()), idIndex, getBatchSize());
    }
}
