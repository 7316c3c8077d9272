package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.LlamaConfig;

/**
 * A Llama-family model (Hugging Face {@code LlamaForCausalLM}; also Mistral (whose sliding
 * window {@link GroupedQueryAttention} applies), Qwen2, Qwen3 and Phi-3, whose differences {@link GroupedQueryAttention} and {@link
 * GatedMlp} take from the config): token embedding {@code embed_tokens}, {@code num_hidden_layers} pre-norm layers {@code
 * layers.i} ({@code input_layernorm, self_attn, post_attention_layernorm, mlp}) with RMSNorm,
 * rotary grouped-query attention and a SwiGLU MLP, final {@code norm}, and an {@code lm_head} of
 * its own or tied to {@code embed_tokens}. Parameter names are the checkpoint's without the {@code
 * model.} prefix. Positions enter only through the rotary embedding.
 */
public final class LlamaModel extends CausalLmBlock {

    private static final String[] LAYER_CHILD_NAMES = {
        "input_layernorm", "self_attn", "post_attention_layernorm", "mlp"
    };

    private final Embedding embedTokens;
    private final RotaryEmbedding rotaryEmbedding;

    /** @param config the model config */
    public LlamaModel(LlamaConfig config) {
        super(config);
        int e = config.hiddenSize();
        float eps = config.rmsNormEps();
        embedTokens =
                setTokenEmbedding(
                        "embed_tokens",
                        new Embedding(config.vocabSize(), e, config.initializerRange()));
        rotaryEmbedding = RotaryEmbedding.of(config);
        for (int i = 0; i < config.numHiddenLayers(); i++) {
            addLayer(
                    "layers." + i,
                    new DecoderLayer(
                            LAYER_CHILD_NAMES,
                            new RmsNorm(e, eps),
                            new GroupedQueryAttention(config, i, rotaryEmbedding),
                            new RmsNorm(e, eps),
                            mlp(config)));
        }
        setFinalNormAndHead("norm", new RmsNorm(e, eps));
    }

    private static GatedMlp mlp(LlamaConfig config) {
        int e = config.hiddenSize();
        int inner = config.intermediateSize();
        return config.fusedProjections()
                ? GatedMlp.fused(e, inner, config.mlpBias(), config.initializerRange())
                : new GatedMlp(e, inner, config.mlpBias(), config.initializerRange());
    }

    /** @return the rotary embedding all layers share */
    public RotaryEmbedding rotaryEmbedding() {
        return rotaryEmbedding;
    }

    @Override
    protected NDArray embed(
            ParameterStore store, NDArray inputIds, NDArray positionIds, boolean training) {
        return embedTokens.forward(store, inputIds, training); // (B, T, E)
    }
}
