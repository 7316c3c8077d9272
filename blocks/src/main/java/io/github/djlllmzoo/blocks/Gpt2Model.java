package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.Gpt2Config;

/**
 * GPT-2 (Hugging Face {@code GPT2LMHeadModel}): token embedding {@code wte} plus learned position
 * embedding {@code wpe}, {@code n_layer} pre-LN layers {@code h.i} ({@code ln_1, attn, ln_2,
 * mlp}), final {@code ln_f}, LM head tied to {@code wte}. Parameter names are the checkpoint's
 * without the {@code transformer.} prefix.
 */
public final class Gpt2Model extends CausalLmBlock {

    private final Gpt2Config config;
    private final Embedding wte;
    private final Embedding wpe;

    /** @param config the model config */
    public Gpt2Model(Gpt2Config config) {
        super(config);
        this.config = config;
        wte = setTokenEmbedding("wte", new Embedding(config.vocabSize(), config.nEmbd(), Gpt2Config.INITIALIZER_RANGE));
        wpe = addChildBlock("wpe", new Embedding(config.nPositions(), config.nEmbd(), Gpt2Config.POSITION_INITIALIZER_RANGE));
        String[] names = {"ln_1", "attn", "ln_2", "mlp"};
        for (int i = 0; i < config.nLayer(); i++) {
            addLayer(
                    "h." + i,
                    new DecoderLayer(
                            names,
                            new LayerNorm(config.nEmbd(), config.layerNormEpsilon()),
                            new Gpt2Attention(config, i),
                            new LayerNorm(config.nEmbd(), config.layerNormEpsilon()),
                            new Gpt2Mlp(config)));
        }
        setFinalNormAndHead("ln_f", new LayerNorm(config.nEmbd(), config.layerNormEpsilon()));
    }

    @Override
    protected NDArray embed(
            ParameterStore store, NDArray inputIds, NDArray positionIds, boolean training) {
        NDArray h = wte.forward(store, inputIds, training).add(wpe.forward(store, positionIds, training));
        return Dropouts.apply(h, config.embdPdrop(), training); // (B, T, E)
    }
}
