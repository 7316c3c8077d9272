package io.github.djlllmzoo.spark;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.ml.param.BooleanParam;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.Identifiable$;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * A Spark ML {@code Transformer} that scores each row's text under a djl-llm-zoo model, as {@code
 * bin/llmzoo score} does: appends {@code token_count} (the text's tokens), {@code total_logprob}
 * and {@code mean_logprob} (natural log, over every token after the first), {@code perplexity},
 * optionally {@code token_logprobs} (one per token after the first), and {@code error} (null when
 * the row went well; a text of fewer than 2 tokens or over the context window gets its error).
 */
public final class LlmScorer extends LlmTransformer {

    private static final long serialVersionUID = 1L;

    /** Param: whether to keep each token's log-probability. */
    private final BooleanParam tokenLogprobs;

    /** A scorer with a fresh uid. */
    public LlmScorer() {
        this(Identifiable$.MODULE$.randomUID("llmScorer"));
    }

    /** @param uid the stage's id (loading a saved pipeline calls this) */
    public LlmScorer(String uid) {
        super(uid, "text");
        tokenLogprobs = new BooleanParam(this, "tokenLogprobs", "also write each token's log-probability (token_logprobs)");
        setDefault(tokenLogprobs, (Object) false);
    }

    /** @return a reader of saved scorers */
    public static MLReader<LlmScorer> read() {
        return new DefaultParamsReader<>();
    }

    /**
     * @param path where a scorer was saved
     * @return the scorer
     */
    public static LlmScorer load(String path) {
        return read().load(path);
    }

    /** @return the token log-probabilities param */
    public BooleanParam tokenLogprobs() {
        return tokenLogprobs;
    }

    /**
     * @param value the model reference
     * @return this
     */
    public LlmScorer setModel(String value) {
        setModelReference(value);
        return this;
    }

    /**
     * @param value whether to write {@code token_logprobs}
     * @return this
     */
    public LlmScorer setTokenLogprobs(boolean value) {
        set(tokenLogprobs, (Object) value);
        return this;
    }

    private boolean withTokenLogprobs() {
        return (Boolean) getOrDefault(tokenLogprobs);
    }

    @Override
    protected List<StructField> outputFields() {
        List<StructField> fields = new ArrayList<>();
        fields.add(DataTypes.createStructField("token_count", DataTypes.IntegerType, true));
        fields.add(DataTypes.createStructField("total_logprob", DataTypes.DoubleType, true));
        fields.add(DataTypes.createStructField("mean_logprob", DataTypes.DoubleType, true));
        fields.add(DataTypes.createStructField("perplexity", DataTypes.DoubleType, true));
        if (withTokenLogprobs()) {
            fields.add(DataTypes.createStructField(
                    "token_logprobs", DataTypes.createArrayType(DataTypes.FloatType, false), true));
        }
        fields.add(DataTypes.createStructField(getErrorCol(), DataTypes.StringType, true));
        return fields;
    }

    @Override
    protected RowBatches partitionFunction(StructType schema) {
        return new ScorePartition(modelSpec(), schema.fieldIndex(getInputCol()), getBatchSize(), withTokenLogprobs());
    }
}
