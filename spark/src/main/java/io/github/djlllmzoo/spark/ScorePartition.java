package io.github.djlllmzoo.spark;

import io.github.djlllmzoo.translators.Generator;
import io.github.djlllmzoo.zoo.LocalModel;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;

/**
 * {@link LlmScorer}'s work on one partition: each text's tokens scored in one forward pass with
 * {@link Generator#scoreTokens}, the computation of {@code bin/llmzoo score}.
 */
final class ScorePartition extends RowBatches {

    private static final long serialVersionUID = 1L;

    private final ModelSpec spec;
    private final boolean tokenLogprobs;

    private transient LocalModel model;
    private transient Generator generator;

    ScorePartition(ModelSpec spec, int inputIndex, int batchSize, boolean tokenLogprobs) {
        super(inputIndex, batchSize);
        this.spec = spec;
        this.tokenLogprobs = tokenLogprobs;
    }

    @Override
    AutoCloseable open() {
        model = ExecutorModels.get(spec);
        generator = model.generator();
        return () -> { };
    }

    @Override
    List<Object[]> outputs(List<Object> texts, List<Row> rows) {
        List<Object[]> out = new ArrayList<>(texts.size());
        for (Object text : texts) {
            out.add(score((String) text));
        }
        return out;
    }

    private Object[] score(String text) {
        if (text == null || text.isEmpty()) {
            return error("the text is empty");
        }
        long[] ids = model.tokenizer().encode(text);
        if (ids.length < 2) {
            return error("need at least 2 tokens to score, got " + ids.length);
        }
        float[] logprobs;
        try {
            logprobs = generator.scoreTokens(ids);
        } catch (RuntimeException e) {
            return error(message(e));
        }
        double total = 0;
        for (float lp : logprobs) {
            total += lp;
        }
        double mean = total / logprobs.length;
        Object[] columns = new Object[tokenLogprobs ? 6 : 5];
        columns[0] = ids.length;
        columns[1] = total;
        columns[2] = mean;
        columns[3] = Math.exp(-mean);
        if (tokenLogprobs) {
            columns[4] = logprobs;
        }
        return columns;
    }

    private Object[] error(String message) {
        Object[] columns = new Object[tokenLogprobs ? 6 : 5];
        columns[columns.length - 1] = message;
        return columns;
    }
}
