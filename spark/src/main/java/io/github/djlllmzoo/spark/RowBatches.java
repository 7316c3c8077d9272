package io.github.djlllmzoo.spark;

import ai.djl.translate.TranslateException;
import java.util.ArrayList;
import java.util.Iterator;
import java.util.List;
import java.util.NoSuchElementException;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.function.MapPartitionsFunction;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.util.TaskCompletionListener;

/**
 * Runs a partition in batches of rows: reads up to {@code batchSize} rows, computes their output
 * columns together, and hands each input row on with its outputs appended, never holding more
 * than one batch. Serializable: only settings travel to the executors, never a model.
 */
abstract class RowBatches implements MapPartitionsFunction<Row, Row> {

    private static final long serialVersionUID = 1L;

    private final int inputIndex;
    private final int batchSize;

    /**
     * @param inputIndex the index of the input column
     * @param batchSize rows per batch
     */
    RowBatches(int inputIndex, int batchSize) {
        this.inputIndex = inputIndex;
        this.batchSize = batchSize;
    }

    /**
     * Prepares the task (loads or finds the model); called once per partition on the executor.
     *
     * @return what to release when the task completes
     */
    abstract AutoCloseable open();

    /**
     * Computes one batch.
     *
     * @param inputs the input column of each row (null where the row has none): a {@code String}, or
     *     for an array column a {@code java.util.List}
     * @param rows the rows
     * @return per row, its output columns in {@link LlmTransformer#outputFields()} order
     */
    abstract List<Object[]> outputs(List<Object> inputs, List<Row> rows);

    @Override
    public Iterator<Row> call(Iterator<Row> input) throws Exception {
        AutoCloseable resource = open();
        TaskContext task = TaskContext.get();
        if (task != null) {
            task.addTaskCompletionListener((TaskCompletionListener) context -> close(resource));
        }
        return new Iterator<>() {
            private Iterator<Row> batch = List.<Row>of().iterator();

            @Override
            public boolean hasNext() {
                if (!batch.hasNext() && input.hasNext()) {
                    batch = nextBatch(input);
                }
                return batch.hasNext();
            }

            @Override
            public Row next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                return batch.next();
            }
        };
    }

    private Iterator<Row> nextBatch(Iterator<Row> input) {
        List<Row> rows = new ArrayList<>(batchSize);
        List<Object> inputs = new ArrayList<>(batchSize);
        while (rows.size() < batchSize && input.hasNext()) {
            Row row = input.next();
            rows.add(row);
            inputs.add(row.isNullAt(inputIndex) ? null : row.get(inputIndex) instanceof String ? row.getString(inputIndex) : row.getList(inputIndex));
        }
        List<Object[]> outputs = outputs(inputs, rows);
        List<Row> out = new ArrayList<>(rows.size());
        for (int i = 0; i < rows.size(); i++) {
            Row row = rows.get(i);
            Object[] extra = outputs.get(i);
            Object[] values = new Object[row.size() + extra.length];
            for (int c = 0; c < row.size(); c++) {
                values[c] = row.get(c);
            }
            System.arraycopy(extra, 0, values, row.size(), extra.length);
            out.add(RowFactory.create(values));
        }
        return out.iterator();
    }

    private static void close(AutoCloseable resource) {
        try {
            resource.close();
        } catch (Exception e) {
            throw new IllegalStateException("cannot close " + resource + ": " + e.getMessage(), e);
        }
    }

    /**
     * The message a failed row's {@code error} column gets: the cause's message, without DJL's
     * translator wrapping.
     *
     * @param e what the row's computation threw
     * @return the message
     */
    static String message(Exception e) {
        Throwable cause = e;
        while (cause instanceof TranslateException && cause.getCause() != null) {
            cause = cause.getCause();
        }
        return cause.getMessage() != null ? cause.getMessage() : cause.getClass().getName();
    }
}
