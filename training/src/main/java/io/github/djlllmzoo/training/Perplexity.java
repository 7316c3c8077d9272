package io.github.djlllmzoo.training;

import ai.djl.Device;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Block;
import ai.djl.training.ParameterStore;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.BatchSampler;
import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.SequenceSampler;
import ai.djl.translate.TranslateException;
import java.io.IOException;

/**
 * A causal LM's held-out loss: the mean next-token negative log-likelihood over every counted
 * position of a dataset (not a mean of batch means), and its exponential, the perplexity.
 *
 * @param meanLoss the mean negative log-likelihood in nats
 * @param tokens how many positions were counted
 */
public record Perplexity(double meanLoss, long tokens) {

    /** @return {@code exp(meanLoss)} */
    public double value() {
        return Math.exp(meanLoss);
    }

    /**
     * Evaluates a model on a whole dataset in inference mode (no dropout).
     *
     * @param model a causal LM block: {@code [input_ids] -> [logits]}
     * @param data records of {@code [input_ids]} / {@code [targets]} as the training datasets make
     * @param manager the parent of the per-batch managers; its device is where the model runs
     * @param batchSize records per forward pass
     * @return the loss and count
     * @throws IOException if the data cannot be read
     * @throws TranslateException if batching fails
     * @throws IllegalArgumentException if no position of the dataset counts
     */
    public static Perplexity evaluate(
            Block model, RandomAccessDataset data, NDManager manager, int batchSize)
            throws IOException, TranslateException {
        CausalLmLoss loss = new CausalLmLoss();
        Device device = manager.getDevice();
        ParameterStore store = new ParameterStore(manager, false);
        double sum = 0;
        long count = 0;
        for (Batch batch : data.getData(manager, new BatchSampler(new SequenceSampler(), batchSize, false))) {
            try (batch) {
                NDList inputs = batch.getData().toDevice(device, false);
                NDList labels = batch.getLabels().toDevice(device, false);
                NDList logits = model.forward(store, inputs, false);
                CausalLmLoss.TokenLoss tokenLoss = loss.tokenLoss(labels, logits);
                sum += tokenLoss.sum().toType(DataType.FLOAT64, false).getDouble();
                count += Math.round(tokenLoss.count().toType(DataType.FLOAT64, false).getDouble());
            }
        }
        if (count == 0) {
            throw new IllegalArgumentException("no position of the evaluation data counts towards the loss");
        }
        return new Perplexity(sum / count, count);
    }
}
