package io.github.djlllmzoo.spark;

import ai.djl.inference.Predictor;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.chat.ChatMessage;
import io.github.djlllmzoo.chat.ChatTemplate;
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
 * {@link LlmGenerator}'s work on one partition: chat messages are rendered with the checkpoint's
 * chat template and tokenized as the server does; the rows of a batch with a prompt go through
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
    private transient ChatTemplate chatTemplate;

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

    /** The checkpoint's chat template, read the first time a row holds messages. */
    private ChatTemplate chatTemplate() {
        if (chatTemplate == null) {
            try {
                chatTemplate = ChatTemplate.forCheckpoint(model.dir());
            } catch (InvalidCheckpointException e) {
                throw new IllegalStateException("model " + spec.reference() + ": " + e.getMessage(), e);
            }
        }
        return chatTemplate;
    }

    @Override
    List<Object[]> outputs(List<Object> prompts, List<Row> rows) {
        Object[][] out = new Object[rows.size()][];
        List<GenerationRequest> requests = new ArrayList<>();
        List<Integer> positions = new ArrayList<>();
        for (int i = 0; i < rows.size(); i++) {
            Object input = prompts.get(i);
            GenerationRequest request;
            String key;
            if (input instanceof List<?> messages) {
                try {
                    String rendered = chatTemplate().render(chatMessages(messages));
                    request = GenerationRequest.ofIds(chatTemplate().encode(rendered, model.tokenizer()), config);
                    key = rendered;
                } catch (IllegalArgumentException e) {
                    out[i] = error(e.getMessage());
                    continue;
                }
            } else if (input == null || ((String) input).isEmpty()) {
                out[i] = error("the prompt is empty");
                continue;
            } else {
                request = GenerationRequest.of((String) input, config);
                key = (String) input;
            }
            if (idIndex >= 0) {
                key = String.valueOf(rows.get(i).get(idIndex));
            }
            requests.add(new GenerationRequest(
                    request.prompt(), request.promptIds(), config.toBuilder().seed(settings.rowSeed(key)).build(), null));
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

    private static List<ChatMessage> chatMessages(List<?> rows) {
        List<ChatMessage> messages = new ArrayList<>(rows.size());
        for (Object message : rows) {
            Row row = (Row) message;
            messages.add(new ChatMessage(row.getAs("role"), row.getAs("content")));
        }
        return messages;
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
