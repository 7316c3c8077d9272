package io.github.djlllmzoo.spark;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.inference.Predictor;
import io.github.djlllmzoo.chat.ChatMessage;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationOverrides;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.GenerationTranslator;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.ml.Pipeline;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.PipelineStage;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** LlmGenerator and LlmScorer on a local SparkSession against the single-process code paths. */
class LlmTransformersTest {

    private static final Path MODEL = Path.of(System.getProperty("llmzoo.home"), "models", "default").toAbsolutePath();
    private static final int MAX_NEW_TOKENS = 8;
    private static final String[] OPENINGS = {
        "Once upon a time", "The little dog", "One day, Lily", "Tom saw a big", "In the garden there was",
        "The sun was", "Mia and her friend", "A small bird"
    };

    /** Failures the retry test injected; tasks run in this JVM under local mode. */
    private static final AtomicInteger INJECTED_FAILURES = new AtomicInteger();

    private static SparkSession spark;
    private static LocalModel model;

    @BeforeAll
    static void start() throws Exception {
        // local[2, 2]: two task threads, and a failed task is retried once.
        spark = SparkSession.builder().master("local[2,2]").appName("llmzoo-spark-test")
                .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2").getOrCreate();
        model = LocalModel.load(MODEL);
    }

    @AfterAll
    static void stop() {
        spark.stop();
        model.close();
    }

    private static StructType promptSchema() {
        return new StructType().add("id", DataTypes.IntegerType).add("prompt", DataTypes.StringType);
    }

    /** Prompts of several lengths, so batches are left-padded. */
    private static List<Row> prompts(int count) {
        List<Row> rows = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            String prompt = OPENINGS[i % OPENINGS.length] + (i >= OPENINGS.length ? " and the " + "very ".repeat(i / OPENINGS.length) + "old" : "");
            rows.add(RowFactory.create(i, prompt));
        }
        return rows;
    }

    private static Dataset<Row> frame(List<Row> rows, StructType schema, int partitions) {
        return spark.createDataFrame(rows, schema).repartition(partitions);
    }

    private static Map<Integer, Row> byId(Dataset<Row> frame) {
        Map<Integer, Row> rows = new HashMap<>();
        for (Row row : frame.collectAsList()) {
            rows.put(row.getInt(row.fieldIndex("id")), row);
        }
        return rows;
    }

    @Test
    void greedyGenerationEqualsTheSingleProcessGenerateCommand() throws Exception {
        List<Row> input = prompts(200);
        LlmGenerator generator = new LlmGenerator().setModel(MODEL.toString()).setGreedy().setMaxNewTokens(MAX_NEW_TOKENS);
        generator.setBatchSize(4);
        Map<Integer, Row> out = byId(generator.transform(frame(input, promptSchema(), 4)));

        // What 'bin/llmzoo generate --greedy --max-new-tokens 8' runs (GenerateCommand): its options
        // as GenerationOverrides over the checkpoint's defaults, one request through the model's predictor.
        GenerationConfig config = new GenerationOverrides(MAX_NEW_TOKENS, false, null, null, null, null, null, null, null, null)
                .applyTo(GenerationConfig.forCheckpoint(model.dir(), model.config()))
                .build();
        assertEquals(input.size(), out.size());
        try (Predictor<GenerationRequest, GenerationResult> predictor =
                model.model().newPredictor(new GenerationTranslator(model.tokenizer(), config))) {
            for (Row row : input) {
                GenerationResult expected = predictor.predict(GenerationRequest.of(row.getString(1), config));
                Row actual = out.get(row.getInt(0));
                assertNull(actual.getAs("error"), row.getString(1));
                assertEquals(expected.text(), actual.getAs("text"), row.getString(1));
                assertEquals(expected.finishReason().jsonName(), actual.getAs("finish_reason"));
                assertEquals(expected.promptTokens(), (int) actual.getAs("prompt_tokens"));
                assertEquals(expected.tokenIds().length, (int) actual.getAs("completion_tokens"));
                assertEquals(row.getString(1), actual.getAs("prompt"));
            }
        }
    }

    @Test
    void chatMessagesAreRenderedWithTheCheckpointsChatTemplateAsTheServerDoes() throws Exception {
        StructType message = new StructType().add("role", DataTypes.StringType).add("content", DataTypes.StringType);
        StructType schema = new StructType().add("id", DataTypes.IntegerType)
                .add("messages", DataTypes.createArrayType(message));
        List<Row> input = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            input.add(RowFactory.create(i, List.of(
                    RowFactory.create("system", "You tell short stories."),
                    RowFactory.create("user", OPENINGS[i]))));
        }
        input.add(RowFactory.create(100, List.of()));
        LlmGenerator generator = new LlmGenerator().setModel(MODEL.toString()).setGreedy().setMaxNewTokens(MAX_NEW_TOKENS);
        generator.setInputColumn("messages");
        Map<Integer, Row> out = byId(generator.transform(frame(input, schema, 2)));

        assertEquals("the conversation has no messages", out.get(100).getAs("error"));
        ChatTemplate template = ChatTemplate.forCheckpoint(MODEL);
        GenerationConfig config = GenerationConfig.forCheckpoint(model.dir(), model.config())
                .greedy().maxNewTokens(MAX_NEW_TOKENS).build();
        try (Predictor<GenerationRequest, GenerationResult> predictor =
                model.model().newPredictor(new GenerationTranslator(model.tokenizer(), config))) {
            for (int i = 0; i < 6; i++) {
                String rendered = template.render(List.of(
                        new ChatMessage("system", "You tell short stories."), new ChatMessage("user", OPENINGS[i])));
                GenerationResult expected = predictor.predict(
                        GenerationRequest.ofIds(template.encode(rendered, model.tokenizer()), config));
                assertNull(out.get(i).getAs("error"));
                assertEquals(expected.text(), out.get(i).getAs("text"));
                assertEquals(expected.promptTokens(), (int) out.get(i).getAs("prompt_tokens"));
            }
        }
    }

    @Test
    void aColumnOfAnotherTypeIsRefusedNamingIt() {
        StructType schema = new StructType().add("id", DataTypes.IntegerType).add("prompt", DataTypes.IntegerType);
        LlmGenerator generator = new LlmGenerator().setModel(MODEL.toString());
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> generator.transformSchema(schema));
        assertEquals("inputCol: column 'prompt' must be a string or an array<struct<role: string, content: string>>, not int",
                e.getMessage());
    }

    private static LlmGenerator sampler() {
        LlmGenerator generator = new LlmGenerator().setModel(MODEL.toString()).setTemperature(1.0f)
                .setSeed(7).setMaxNewTokens(MAX_NEW_TOKENS).setIdCol("id");
        generator.setBatchSize(3);
        return generator;
    }

    @Test
    void seededSamplingIsTheSameAcrossRunsAndTaskRetries() {
        // Every prompt twice under different ids: the id, not the prompt, seeds the row.
        List<Row> input = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            input.add(RowFactory.create(i, OPENINGS[i % 6]));
        }
        Map<Integer, Row> first = byId(sampler().transform(frame(input, promptSchema(), 3)));

        INJECTED_FAILURES.set(0);
        Dataset<Row> generated = sampler().transform(frame(input, promptSchema(), 3));
        MapPartitionsFunction<Row, Row> failFirstAttempt = rows -> failOnceAfterFirstRow(rows);
        Map<Integer, Row> retried = byId(generated.mapPartitions(failFirstAttempt, Encoders.row(generated.schema())));

        assertEquals(3, INJECTED_FAILURES.get(), "each of the 3 partitions failed once and was retried");
        assertEquals(input.size(), retried.size());
        HashSet<String> texts = new HashSet<>();
        for (Row row : input) {
            Row a = first.get(row.getInt(0));
            Row b = retried.get(row.getInt(0));
            assertNull(a.getAs("error"));
            assertEquals((String) a.getAs("text"), b.getAs("text"), "row " + row.getInt(0));
            texts.add(a.getAs("text"));
        }
        assertTrue(texts.size() > 6, "rows with the same prompt and different ids sample differently: " + texts);
    }

    /** Passes the first row on, then fails the task's first attempt; the retry passes all rows. */
    private static Iterator<Row> failOnceAfterFirstRow(Iterator<Row> rows) {
        if (TaskContext.get().attemptNumber() > 0) {
            return rows;
        }
        return new Iterator<>() {
            private int passed;

            @Override
            public boolean hasNext() {
                return rows.hasNext();
            }

            @Override
            public Row next() {
                if (passed++ == 1) {
                    INJECTED_FAILURES.incrementAndGet();
                    throw new IllegalStateException("injected failure on the first attempt");
                }
                return rows.next();
            }
        };
    }

    @Test
    void badRowsGetTheirErrorAndTheOthersComplete() {
        List<Row> input = new ArrayList<>(prompts(6));
        input.add(RowFactory.create(100, ""));
        input.add(RowFactory.create(101, null));
        input.add(RowFactory.create(102, "the dog ran. ".repeat(model.config().maxPositions())));
        LlmGenerator generator = new LlmGenerator().setModel(MODEL.toString()).setGreedy().setMaxNewTokens(4);
        generator.setBatchSize(4);
        Map<Integer, Row> out = byId(generator.transform(frame(input, promptSchema(), 2)));

        assertEquals(input.size(), out.size());
        assertEquals("the prompt is empty", out.get(100).getAs("error"));
        assertEquals("the prompt is empty", out.get(101).getAs("error"));
        assertTrue(((String) out.get(102).getAs("error")).contains("exceeds the model's context window of 512"),
                (String) out.get(102).getAs("error"));
        for (int id : new int[] {100, 101, 102}) {
            assertNull(out.get(id).getAs("text"));
        }
        for (int id = 0; id < 6; id++) {
            Row row = out.get(id);
            assertNull(row.getAs("error"));
            assertNotNull(row.getAs("text"));
            assertTrue((int) row.getAs("completion_tokens") > 0);
        }
    }

    @Test
    void scorerEqualsTheScoreCommand() {
        StructType schema = new StructType().add("id", DataTypes.IntegerType).add("text", DataTypes.StringType);
        List<Row> input = new ArrayList<>();
        for (Row row : prompts(12)) {
            input.add(RowFactory.create(row.getInt(0), row.getString(1) + " and they were happy."));
        }
        input.add(RowFactory.create(100, ""));
        LlmScorer scorer = new LlmScorer().setModel(MODEL.toString()).setTokenLogprobs(true);
        Map<Integer, Row> out = byId(scorer.transform(frame(input, schema, 3)));

        assertEquals("the text is empty", out.get(100).getAs("error"));
        for (Row row : input.subList(0, 12)) {
            // What 'bin/llmzoo score --text' computes.
            long[] ids = model.tokenizer().encode(row.getString(1));
            float[] logprobs = model.generator().scoreTokens(ids);
            double sum = 0;
            for (float lp : logprobs) {
                sum += lp;
            }
            Row actual = out.get(row.getInt(0));
            assertNull(actual.getAs("error"));
            assertEquals(ids.length, (int) actual.getAs("token_count"));
            assertEquals(sum, (double) actual.getAs("total_logprob"));
            assertEquals(Math.exp(-sum / logprobs.length), (double) actual.getAs("perplexity"));
            List<Float> tokens = actual.getList(actual.fieldIndex("token_logprobs"));
            assertEquals(logprobs.length, tokens.size());
            for (int i = 0; i < logprobs.length; i++) {
                assertEquals(logprobs[i], tokens.get(i));
            }
        }
    }

    @Test
    void savedAndLoadedPipelineGivesTheSameOutput(@TempDir Path dir) throws Exception {
        LlmGenerator generator = sampler();
        generator.setErrorColumn("generate_error");
        LlmScorer scorer = new LlmScorer().setModel(MODEL.toString());
        scorer.setErrorColumn("score_error");
        Pipeline pipeline = new Pipeline().setStages(new PipelineStage[] {generator, scorer});
        Dataset<Row> input = frame(prompts(8), promptSchema(), 2);
        PipelineModel fitted = pipeline.fit(input);
        String path = dir.resolve("pipeline").toString();
        fitted.write().overwrite().save(path);
        PipelineModel loaded = PipelineModel.load(path);

        Map<Integer, Row> before = byId(fitted.transform(input));
        Map<Integer, Row> after = byId(loaded.transform(input));
        assertEquals(8, after.size());
        for (int id = 0; id < 8; id++) {
            assertNull(after.get(id).getAs("score_error"));
            assertEquals(before.get(id), after.get(id));
        }
        LlmGenerator reloaded = (LlmGenerator) loaded.stages()[0];
        assertEquals(7L, (long) reloaded.getOrDefault(reloaded.seed()));
        assertNotEquals(generator.uid(), scorer.uid());
        assertEquals(generator.uid(), reloaded.uid());
    }
}
