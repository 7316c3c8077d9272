package io.github.djlllmzoo.spark;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.concurrent.Callable;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.DataFrameReader;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.SparkSession;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;
import picocli.CommandLine.Model.CommandSpec;

/**
 * {@code llmzoo-spark generate|score}: reads JSON lines, CSV or Parquet with a {@code prompt}
 * (generate) or {@code text} (score) column, runs {@link LlmGenerator} or {@link LlmScorer} on
 * Spark, and writes every input column plus the outputs as Parquet or JSON lines. The main class
 * of {@code bin/llmzoo-spark} and of {@code spark-submit}; every failure prints one line {@code
 * error: ...} and exits non-zero.
 */
@Command(
        name = "llmzoo-spark",
        mixinStandardHelpOptions = true,
        description = "Generate or score a file of rows with a djl-llm-zoo model on Apache Spark.")
public final class LlmZooSpark implements Callable<Integer> {

    @Spec CommandSpec spec;

    @Parameters(index = "0", paramLabel = "generate|score", description = "What to do with each row.")
    String task;

    @Option(names = "--master", paramLabel = "URL", description = "Spark master (default: spark-submit's, else local[2]).")
    String master;

    @Option(names = "--model", required = true, paramLabel = "M",
            description = "A registry name, Hugging Face id or checkpoint directory every executor can read.")
    String model;

    @Option(names = "--input", required = true, paramLabel = "FILE",
            description = "Rows to read: .jsonl/.json (JSON lines), .csv (with a header) or .parquet.")
    String input;

    @Option(names = "--output", required = true, paramLabel = "DIR", description = "Where to write (must not exist).")
    String output;

    @Option(names = "--format", defaultValue = "parquet", paramLabel = "jsonl|parquet", description = "Output format (default: ${DEFAULT-VALUE}).")
    String format;

    @Option(names = "--max-new-tokens", paramLabel = "N", description = "Most tokens to generate per row (default: the checkpoint's).")
    Integer maxNewTokens;

    @Option(names = "--greedy", description = "Pick the most likely token at each step.")
    boolean greedy;

    @Option(names = "--temperature", paramLabel = "T", description = "Sample at this temperature.")
    Float temperature;

    @Option(names = "--seed", paramLabel = "S", description = "The job's seed; each row's seed derives from it and the row (default 0).")
    Long seed;

    @Option(names = "--batch-size", paramLabel = "B", defaultValue = "8", description = "Rows per batch on an executor (default: ${DEFAULT-VALUE}).")
    int batchSize;

    @Option(names = "--input-col", paramLabel = "NAME",
            description = "The input column (default: prompt for generate, text for score); for generate, text or chat"
                    + " messages (an array of {role, content}).")
    String inputCol;

    @Option(names = "--partitions", paramLabel = "P",
            description = "Spread the rows over P partitions first (default: as read; a small file is one partition, which one task runs).")
    Integer partitions;

    @Option(names = "--dtype", defaultValue = "float32", paramLabel = "float32|float16", description = "Element type of weights and KV cache (default: ${DEFAULT-VALUE}).")
    String dtype;

    @Option(names = "--device", defaultValue = "cpu", paramLabel = "cpu|gpu", description = "Where executors run the model (default: ${DEFAULT-VALUE}).")
    String device;

    @Override
    public Integer call() {
        LlmTransformer transformer = transformer();
        if (!format.equals("jsonl") && !format.equals("parquet")) {
            throw new ParameterException(spec.commandLine(), "--format must be jsonl or parquet, not '" + format + "'");
        }
        if (partitions != null && partitions < 1) {
            throw new ParameterException(spec.commandLine(), "--partitions must be at least 1, got " + partitions);
        }
        String inputFormat = inputFormat();
        SparkSession.Builder builder = SparkSession.builder().appName("llmzoo-spark " + task);
        if (master != null) {
            builder.master(master);
        } else if (!new SparkConf().contains("spark.master")) {
            builder.master("local[2]");
        }
        SparkSession spark = builder.getOrCreate();
        try {
            Dataset<Row> rows = read(spark, inputFormat);
            if (partitions != null) {
                rows = rows.repartition(partitions);
            }
            Dataset<Row> result = transformer.transform(rows);
            if (format.equals("jsonl")) {
                result.write().option("ignoreNullFields", "false").json(output);
            } else {
                result.write().parquet(output);
            }
        } finally {
            spark.stop();
        }
        return 0;
    }

    private LlmTransformer transformer() {
        boolean sampling = temperature != null || seed != null;
        switch (task) {
            case "generate":
                if (greedy && sampling) {
                    throw new ParameterException(spec.commandLine(), "--greedy contradicts --temperature and --seed");
                }
                LlmGenerator generator = new LlmGenerator().setModel(model);
                if (maxNewTokens != null) {
                    generator.setMaxNewTokens(maxNewTokens);
                }
                if (greedy) {
                    generator.setGreedy();
                } else if (sampling) {
                    generator.setDoSample(true);
                }
                if (temperature != null) {
                    generator.setTemperature(temperature);
                }
                if (seed != null) {
                    generator.setSeed(seed);
                }
                return configure(generator);
            case "score":
                if (greedy || sampling || maxNewTokens != null) {
                    throw new ParameterException(
                            spec.commandLine(), "score takes no --greedy, --temperature, --seed or --max-new-tokens");
                }
                return configure(new LlmScorer().setModel(model));
            default:
                throw new ParameterException(spec.commandLine(), "the task must be generate or score, not '" + task + "'");
        }
    }

    private LlmTransformer configure(LlmTransformer transformer) {
        transformer.setBatchSize(batchSize).setDtype(dtype).setDevice(device);
        if (inputCol != null) {
            transformer.setInputColumn(inputCol);
        }
        return transformer;
    }

    /** The input's format from its file name, checked before Spark starts. */
    private String inputFormat() {
        String name = Path.of(input).getFileName().toString().toLowerCase(Locale.ROOT);
        if (name.endsWith(".jsonl") || name.endsWith(".json")) {
            return "json";
        } else if (name.endsWith(".csv")) {
            return "csv";
        } else if (name.endsWith(".parquet")) {
            return "parquet";
        }
        throw new ParameterException(
                spec.commandLine(), "--input " + input + ": name it .jsonl, .json, .csv or .parquet so its format is known");
    }

    private Dataset<Row> read(SparkSession spark, String inputFormat) {
        DataFrameReader reader = spark.read();
        switch (inputFormat) {
            case "json":
                return reader.json(input);
            case "csv":
                return reader.option("header", "true").option("multiLine", "true").option("escape", "\"").csv(input);
            default:
                return reader.parquet(input);
        }
    }

    /**
     * Runs the command line.
     *
     * @param args the arguments
     */
    public static void main(String[] args) {
        System.exit(execute(args, new PrintWriter(System.out, true), new PrintWriter(System.err, true)));
    }

    /**
     * Runs the command line with the given streams.
     *
     * @param args the arguments
     * @param out standard output
     * @param err standard error
     * @return the exit code
     */
    static int execute(String[] args, PrintWriter out, PrintWriter err) {
        CommandLine line = new CommandLine(new LlmZooSpark()).setOut(out).setErr(err);
        line.setExecutionExceptionHandler((e, cmd, parsed) -> {
            cmd.getErr().println("error: " + rootMessage(e));
            return 1;
        });
        return line.execute(args);
    }

    private static String rootMessage(Throwable e) {
        Throwable cause = e;
        while (cause.getCause() != null && cause.getMessage() == null) {
            cause = cause.getCause();
        }
        return cause.getMessage() != null ? cause.getMessage() : cause.toString();
    }
}
