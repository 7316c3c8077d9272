package io.github.djlllmzoo.spark;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.ml.Transformer;
import org.apache.spark.ml.param.IntParam;
import org.apache.spark.ml.param.Param;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsWritable;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * What {@link LlmGenerator} and {@link LlmScorer} share: the model parameters ({@code model},
 * {@code dtype}, {@code device}), the input column, the batch size, and a transform that appends
 * output columns row by row on the executors, keeping every input column and every row.
 */
public abstract class LlmTransformer extends Transformer implements DefaultParamsWritable {

    private static final long serialVersionUID = 1L;

    /** This stage's Spark uid. */
    private final String uid;
    /** Param: the input column. */
    private final Param<String> inputCol;
    /** Param: the model reference. */
    private final Param<String> model;
    /** Param: the element type. */
    private final Param<String> dtype;
    /** Param: the device. */
    private final Param<String> device;
    /** Param: rows a batch. */
    private final IntParam batchSize;
    /** Param: the column for a row's error. */
    private final Param<String> errorCol;

    /**
     * @param uid the stage's id
     * @param defaultInputCol the input column unless set
     */
    protected LlmTransformer(String uid, String defaultInputCol) {
        this.uid = uid;
        inputCol = new Param<>(this, "inputCol", "the input column (a string column)");
        model = new Param<>(this, "model",
                "a registry name, Hugging Face id or checkpoint directory every executor can read");
        dtype = new Param<>(this, "dtype", "element type of weights and KV cache: float32, or float16 on gpu");
        device = new Param<>(this, "device", "where executors run the model: cpu or gpu");
        batchSize = new IntParam(this, "batchSize", "rows per batch on an executor (>= 1)");
        errorCol = new Param<>(this, "errorCol", "the column that is null when a row went well, else says why it failed");
        setDefault(inputCol, defaultInputCol);
        setDefault(errorCol, "error");
        setDefault(dtype, "float32");
        setDefault(device, "cpu");
        setDefault(batchSize, (Object) 8);
    }

    @Override
    public String uid() {
        return uid;
    }

    /** @return the input column param */
    public Param<String> inputCol() {
        return inputCol;
    }

    /** @return the model param */
    public Param<String> model() {
        return model;
    }

    /** @return the dtype param */
    public Param<String> dtype() {
        return dtype;
    }

    /** @return the device param */
    public Param<String> device() {
        return device;
    }

    /** @return the batch size param */
    public IntParam batchSize() {
        return batchSize;
    }

    /** @return the error column param */
    public Param<String> errorCol() {
        return errorCol;
    }

    /** @return the error column's name */
    public String getErrorCol() {
        return getOrDefault(errorCol);
    }

    /**
     * @param value the error column's name (two transformers in one pipeline need two)
     * @return this
     */
    public LlmTransformer setErrorColumn(String value) {
        set(errorCol, value);
        return this;
    }

    /** @return the input column */
    public String getInputCol() {
        return getOrDefault(inputCol);
    }

    /** @return the batch size */
    public int getBatchSize() {
        return (Integer) getOrDefault(batchSize);
    }

    /**
     * @param value the model reference
     * @return this
     */
    public LlmTransformer setModelReference(String value) {
        set(model, value);
        return this;
    }

    /**
     * @param value the input column
     * @return this
     */
    public LlmTransformer setInputColumn(String value) {
        set(inputCol, value);
        return this;
    }

    /**
     * @param value float32 or float16
     * @return this
     */
    public LlmTransformer setDtype(String value) {
        set(dtype, value);
        return this;
    }

    /**
     * @param value cpu or gpu
     * @return this
     */
    public LlmTransformer setDevice(String value) {
        set(device, value);
        return this;
    }

    /**
     * @param value rows per batch
     * @return this
     */
    public LlmTransformer setBatchSize(int value) {
        set(batchSize, (Object) value);
        return this;
    }

    /**
     * @return the model the executors load
     * @throws IllegalArgumentException naming the parameter at fault
     */
    protected ModelSpec modelSpec() {
        if (!isDefined(model)) {
            throw new IllegalArgumentException("model: set the model (a registry name, Hugging Face id or directory)");
        }
        return new ModelSpec(getOrDefault(model), getOrDefault(dtype), getOrDefault(device));
    }

    /**
     * @param type the input column's type
     * @return whether this transformer reads it (a string, unless overridden)
     */
    protected boolean acceptsInput(DataType type) {
        return type.equals(DataTypes.StringType);
    }

    /** @return what {@link #acceptsInput} accepts, for the error message */
    protected String inputDescription() {
        return "a string";
    }

    /** @return the columns this transformer appends, the error column last */
    protected abstract List<StructField> outputFields();

    /**
     * The function that runs on each partition.
     *
     * @param schema the input schema
     * @return the function
     */
    protected abstract RowBatches partitionFunction(StructType schema);

    @Override
    public StructType transformSchema(StructType schema) {
        if (getBatchSize() < 1) {
            throw new IllegalArgumentException("batchSize must be at least 1, got " + getBatchSize());
        }
        modelSpec();
        String input = getInputCol();
        if (!Arrays.asList(schema.fieldNames()).contains(input)) {
            throw new IllegalArgumentException(
                    "inputCol: no column '" + input + "' in the input (columns: " + String.join(", ", schema.fieldNames()) + ")");
        }
        if (!acceptsInput(schema.apply(input).dataType())) {
            throw new IllegalArgumentException(
                    "inputCol: column '" + input + "' must be " + inputDescription() + ", not "
                            + schema.apply(input).dataType().simpleString());
        }
        List<StructField> fields = new ArrayList<>(Arrays.asList(schema.fields()));
        for (StructField field : outputFields()) {
            if (Arrays.asList(schema.fieldNames()).contains(field.name())) {
                throw new IllegalArgumentException(
                        "the input already has a column '" + field.name() + "', which " + getClass().getSimpleName() + " writes");
            }
            fields.add(field);
        }
        return new StructType(fields.toArray(new StructField[0]));
    }

    @Override
    public Dataset<Row> transform(Dataset<?> dataset) {
        StructType output = transformSchema(dataset.schema());
        return dataset.toDF().mapPartitions(partitionFunction(dataset.schema()), Encoders.row(output));
    }

    @Override
    public LlmTransformer copy(ParamMap extra) {
        return defaultCopy(extra);
    }
}
