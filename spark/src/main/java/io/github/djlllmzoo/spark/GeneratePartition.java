package io.github.djlllmzoo.spark;

import ai.djl.inference.Predictor;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.GenerationTranslator;
import io.github.djlllmzoo.zoo.LocalModel;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Row;

/**
 * {@link LlmGenerator}'s work on one partition: the rows of a batch with a prompt go through
 * {@code Predictor.batchPredict} together (left-padded, as the server batches); a row without one
 * gets its {@code error}. When the batch is refused (a prompt over the context window refuses the
 * whole batch), its rows are generated one by one, so only the row at fault gets the error.
 */
final class GeneratePartition extends RowBatches {

    private static final long serialVersionUID = 1L;

    private final ModelSpec spec;
    private final GenerationSettings settings;
    private final int idIndex;

    private transient LocalModel model;
    private transient GenerationConfig config;
    private transient Predictor<GenerationRequest, GenerationResult> predictor;

    GeneratePartition(ModelSpec spec, GenerationSettings settings, int inputIndex, int idIndex, int batchSize) {
        super(inputIndex, batchSize);
        this.spec = spec;
        this.settings = settings;
        this.idIndex = idIndex;
    }

    @Override
    AutoCloseable open() {
        model = ExecutorModels.get(spec);
        try {
            config = settings.apply(GenerationConfig.forCheckpoint(model.dir(), model.config()));
        } catch (Exception e) {
            throw new IllegalStateException("model " + spec.reference() + ": " + e.getMessage(), e);
        }
        predictor = model.model().newPredictor(new GenerationTranslator(model.tokenizer(), config));
        return predictor;
    }

    @Override
    List<Object[]> outputs(List<String> prompts, List<Row> rows) {
        Object[][] out = new Object[rows.size()][];
        List<GenerationRequest> requests = new ArrayList<>();
        List<Integer> positions = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            String prompt = prompts.get(i);
            if (prompt == null || prompt.isEmpty()) {
                out[i] = error("the prompt is empty");
                continue;
            }
            Row row = rows.get(i);
            String key = idIndex < 0 ? prompt : String.valueOf(row.get(idIndex));
            requests.add(GenerationRequest.of(prompt, config.toBuilder().seed(settings.rowSeed(key)).build()));
            positions.add(i);
        }
        List<Object[]> results = generate(requests);
        for (int r = 0; r < positions.size(); r++) {
            out[positions.get(r)] = results.get(r);
        }
        return Arrays.asList(out);
    }

    private List<Object[]> generate(List<GenerationRequest> requests) {
        List<Object[]> out = new ArrayList<>(requests.size());
        if (requests.isEmpty()) {
            return out;
        }
        try {
            for (GenerationResult result : predictor.batchPredict(requests)) {
                out.add(columns(result));
            }
            return out;
        } catch (Exception batchFailure) {
            out.clear();
            for (GenerationRequest request : requests) {
                try {
                    out.add(columns(predictor.predict(request)));
                } catch (Exception e) {
                    out.add(error(message(e)));
                }
            }
            return out;
        }
    }

    private static Object[] columns(GenerationResult result) {
        return new Object[] {
            result.text(), result.finishReason().jsonName(), result.promptTokens(), result.tokenIds().length, null
        };
    }

    private static Object[] error(String message) {
        return new Object[] {null, null, null, null, message};
    }
}
