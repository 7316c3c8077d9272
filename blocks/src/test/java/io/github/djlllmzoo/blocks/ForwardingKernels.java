package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.HiddenActivation;

/**
 * A test's {@link Kernels} that hands every operation the interface leaves abstract to {@code
 * inner}, so that a test overrides only the one it watches or changes. The interface's default
 * methods stay the interface's (composed of these), not {@code inner}'s: a subclass that wants
 * {@code inner}'s fused forms forwards them itself.
 */
public class ForwardingKernels implements Kernels {

    /** The kernels every operation goes to. */
    protected final Kernels inner;

    /** @param inner the kernels every operation goes to */
    public ForwardingKernels(Kernels inner) {
        this.inner = inner;
    }

    @Override
    public NDArray project(NDArray x, ProjectionWeight weight, ParameterStore store, boolean training) {
        return inner.project(x, weight, store, training);
    }

    @Override
    public NDArray[] projectPair(
            NDArray x, ProjectionWeight first, ProjectionWeight second, ParameterStore store, boolean training) {
        return inner.projectPair(x, first, second, store, training);
    }

    @Override
    public NDArray attend(
            NDArray q, KeyValues kv, NDArray mask, AttentionScores scores, float dropout, boolean training) {
        return inner.attend(q, kv, mask, scores, dropout, training);
    }

    @Override
    public NDArray rmsNorm(NDArray x, NDArray weight, float eps, boolean unitOffset, boolean training) {
        return inner.rmsNorm(x, weight, eps, unitOffset, training);
    }

    @Override
    public NDArray layerNorm(NDArray x, NDArray weight, NDArray bias, float eps, boolean training) {
        return inner.layerNorm(x, weight, bias, eps, training);
    }

    @Override
    public NDArray[] rotate(NDArray q, NDArray k, NDList cosSin, boolean training) {
        return inner.rotate(q, k, cosSin, training);
    }

    @Override
    public NDArray activate(NDArray gate, NDArray up, HiddenActivation activation, boolean training) {
        return inner.activate(gate, up, activation, training);
    }

    @Override
    public void closeStep(NDManager step) {
        inner.closeStep(step);
    }
}
