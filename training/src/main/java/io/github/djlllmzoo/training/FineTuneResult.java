package io.github.djlllmzoo.training;

/**
 * What a fine-tuning run reached.
 *
 * @param startStep the step the run started from (0, or the resumed checkpoint's)
 * @param finalStep the step it ended at
 * @param trainLoss the mean training loss over the last logging window
 * @param initialEval the held-out result before the first step of this run, or {@code null}
 * @param finalEval the held-out result after the last step, or {@code null}
 * @param seconds wall-clock time of the training loop
 */
public record FineTuneResult(
        int startStep, int finalStep, double trainLoss, Perplexity initialEval, Perplexity finalEval, double seconds) {}
