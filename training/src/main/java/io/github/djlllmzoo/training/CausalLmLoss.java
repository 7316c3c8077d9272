package io.github.djlllmzoo.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.loss.Loss;

/**
 * Next-token cross-entropy of a causal language model, averaged over the positions that count.
 *
 * <p>Predictions are {@code [logits (B, T, V)]}. Labels are already shifted: {@code labels[0]} is
 * {@code (B, T)} int64 where entry {@code t} is the id of the token that should follow position
 * {@code t}, or {@link #IGNORE_INDEX} (-100, as in Hugging Face) where nothing is predicted
 * (padding, prompt tokens, the end of a sequence). An optional {@code labels[1]} of shape {@code
 * (B, T)} is a mask: positions where it is 0 do not count either. The loss is the sum of {@code
 * -log p(label)} over counted positions divided by their number (0 when none count).
 */
public final class CausalLmLoss extends Loss {

    /** The label of a position that does not count, as in Hugging Face. */
    public static final long IGNORE_INDEX = -100;

    /** Creates the loss under the name "causal_lm_loss". */
    public CausalLmLoss() {
        super("causal_lm_loss");
    }

    /**
     * The summed negative log-likelihood of the counted positions and how many there are.
     *
     * @param sum scalar: sum of {@code -log p(label)} over counted positions (differentiable)
     * @param count scalar: the number of counted positions, in the logits' data type
     */
    public record TokenLoss(NDArray sum, NDArray count) {

        /**
         * The summed loss divided by the loss tokens of a whole optimizer step, to back-propagate.
         * The divisor is an array in the sum's manager, not a Java number: autograd keeps it for
         * the backward pass, and an operand made from Java data lives only as long as its array
         * (a closed one's memory is freed at the next garbage collection), so that manager must
         * stay open until the backward pass has run.
         *
         * @param tokens the step's counted positions; 0 counts as 1
         * @return {@code sum / max(tokens, 1)}, a scalar
         */
        public NDArray sumOver(long tokens) {
            NDArray divisor = sum.getManager().create((float) Math.max(tokens, 1)).toType(sum.getDataType(), false);
            return sum.div(divisor);
        }
    }

    @Override
    public NDArray evaluate(NDList labels, NDList predictions) {
        TokenLoss loss = tokenLoss(labels, predictions);
        return loss.sum().div(loss.count().maximum(1));
    }

    /**
     * Computes the summed loss and the count of counted positions, for exact averages over many
     * batches (gradient accumulation, held-out perplexity).
     *
     * @param labels {@code [targets (B, T)]} or {@code [targets (B, T), mask (B, T)]}
     * @param predictions {@code [logits (B, T, V)]}
     * @return the sum and the count
     * @throws IllegalArgumentException if the shapes disagree
     */
    public TokenLoss tokenLoss(NDList labels, NDList predictions) {
        NDArray logits = predictions.get(0); // (B, T, V)
        NDArray targets = labels.get(0); // (B, T)
        Shape shape = logits.getShape();
        if (shape.dimension() != 3 || !targets.getShape().equals(shape.slice(0, 2))) {
            throw new IllegalArgumentException(
                    "labels of shape " + targets.getShape() + " do not match logits of shape " + shape
                            + "; expected labels (B, T) for logits (B, T, V)");
        }
        NDArray counted = targets.neq(IGNORE_INDEX); // (B, T)
        if (labels.size() > 1) {
            counted = counted.logicalAnd(labels.get(1).neq(0));
        }
        NDArray safeTargets = targets.mul(counted.toType(targets.getDataType(), false)); // -100 -> 0
        NDArray logProbs = logits.logSoftmax(-1); // (B, T, V)
        NDArray picked = logProbs.gather(safeTargets.expandDims(-1), -1).squeeze(-1); // (B, T)
        // (B, T, V), the largest array of a training step: autograd keeps its own reference for the
        // backward pass and frees it there, where the manager would hold it to the step's end
        logProbs.close();
        NDArray weights = counted.toType(logits.getDataType(), false);
        return new TokenLoss(picked.mul(weights).sum().neg(), weights.sum());
    }

    /**
     * Counts the positions that count without computing the loss.
     *
     * @param labels {@code [targets (B, T)]} or {@code [targets (B, T), mask (B, T)]}
     * @return the number of positions that contribute to the loss
     */
    public static long countedTokens(NDList labels) {
        NDArray counted = labels.get(0).neq(IGNORE_INDEX);
        if (labels.size() > 1) {
            counted = counted.logicalAnd(labels.get(1).neq(0));
        }
        return counted.countNonzero().getLong();
    }
}
