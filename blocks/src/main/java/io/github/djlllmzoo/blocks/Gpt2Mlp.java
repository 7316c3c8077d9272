package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.HiddenActivation;

/** GPT-2's feed-forward network: {@code c_proj(gelu_new(c_fc(x)))}, residual dropout in training. */
public final class Gpt2Mlp extends UnaryBlock {

    private final float residDropout;
    private final Conv1D cFc;
    private final Conv1D cProj;

    /** @param config the model config */
    public Gpt2Mlp(Gpt2Config config) {
        this.residDropout = config.residPdrop();
        cFc = addChildBlock("c_fc", new Conv1D(config.nEmbd(), config.nInner(), Gpt2Config.INITIALIZER_RANGE));
        cProj =
                addChildBlock(
                        "c_proj",
                        new Conv1D(config.nInner(), config.nEmbd(), config.residualInitializerRange()));
    }

    @Override
    public NDArray forward(ParameterStore store, NDArray x, boolean training) {
        return Dropouts.apply(cProj.forward(store, activated(store, x, training), training), residDropout, training);
    }

    @Override
    NDArray forwardAdding(ParameterStore store, NDArray x, NDArray residual, boolean training) {
        if ((training && residDropout > 0) || cProj.loraSlot().adapts()) {
            return forward(store, x, training).addi(residual);
        }
        return kernels().projectAdd(activated(store, x, training), cProj.projection(), residual, store, training);
    }

    /** {@code gelu_new(c_fc(x))}, (B, T, n_inner). */
    private NDArray activated(ParameterStore store, NDArray x, boolean training) {
        return kernels().activate(cFc.forward(store, x, training), null, HiddenActivation.GELU_TANH, training);
    }
}
