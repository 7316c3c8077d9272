package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.GemmaLayout;
import io.github.djlllmzoo.blocks.config.LlamaConfig;

/**
 * A Llama-family model (Hugging Face {@code LlamaForCausalLM}; also Mistral (whose sliding
 * window {@link GroupedQueryAttention} applies), Qwen2, Qwen3, Phi-3 and Gemma 1/2/3, whose
 * differences {@link GroupedQueryAttention}, {@link GatedMlp} and {@link RmsNorm} take from the
 * config): token embedding {@code embed_tokens}, {@code num_hidden_layers} pre-norm layers {@code
 * layers.i} ({@code input_layernorm, self_attn, post_attention_layernorm, mlp}) with RMSNorm,
 * rotary grouped-query attention and a gated MLP, final {@code norm}, and an {@code lm_head} of
 * its own or tied to {@code embed_tokens}. Parameter names are the checkpoint's without the {@code
 * model.} prefix. Positions enter only through the rotary embedding.
 *
 * <p>Gemma ({@link LlamaConfig#gemma()}) scales the embeddings by {@code sqrt(hidden_size)} (rounded
 * to the compute type, as {@code GemmaModel}'s normalizer), uses {@code 1 + w} RMSNorms, and from
 * Gemma 2 on norms the sublayers' outputs too ({@code post_attention_layernorm} after attention,
 * {@code pre_feedforward_layernorm} and {@code post_feedforward_layernorm} around the MLP); Gemma 3's
 * sliding-window layers rotate with their own base ({@code rope_local_base_freq}, unscaled).
 */
public final class LlamaModel extends CausalLmBlock {

    private static final String[] LAYER_CHILD_NAMES = {
        "input_layernorm", "self_attn", "post_attention_layernorm", "mlp"
    };

    private static final String[] SANDWICH_CHILD_NAMES = {
        "input_layernorm",
        "self_attn",
        "pre_feedforward_layernorm",
        "mlp",
        "post_attention_layernorm",
        "post_feedforward_layernorm"
    };

    private final Embedding embedTokens;
    private final RotaryEmbedding rotaryEmbedding;
    private final RotaryEmbedding localRotaryEmbedding;
    private final double embeddingScale;

    /** @param config the model config */
    public LlamaModel(LlamaConfig config) {
        super(config);
        int e = config.hiddenSize();
        float eps = config.rmsNormEps();
        embedTokens =
                setTokenEmbedding(
                        "embed_tokens",
                        new Embedding(config.vocabSize(), e, config.initializerRange()));
        GemmaLayout gemma = config.gemma();
        rotaryEmbedding = RotaryEmbedding.of(config);
        localRotaryEmbedding =
                gemma != null && gemma.localRopeTheta() > 0
                        ? new RotaryEmbedding(config.headDim(), config.maxPositionEmbeddings(), gemma.localRopeTheta(), null)
                        : rotaryEmbedding;
        embeddingScale = gemma != null ? Math.sqrt(e) : 1;
        for (int i = 0; i < config.numHiddenLayers(); i++) {
            RotaryEmbedding rope = config.slidingWindow(i) > 0 ? localRotaryEmbedding : rotaryEmbedding;
            GroupedQueryAttention attention = new GroupedQueryAttention(config, i, rope);
            DecoderLayer layer =
                    gemma != null && gemma.sandwichNorms()
                            ? DecoderLayer.sandwich(
                                    SANDWICH_CHILD_NAMES,
                                    norm(config),
                                    attention,
                                    norm(config),
                                    norm(config),
                                    mlp(config),
                                    norm(config))
                            : new DecoderLayer(LAYER_CHILD_NAMES, norm(config), attention, norm(config), mlp(config));
            addLayer("layers." + i, layer);
        }
        setFinalNormAndHead("norm", norm(config));
    }

    private static RmsNorm norm(LlamaConfig config) {
        return config.gemma() != null
                ? RmsNorm.gemma(config.hiddenSize(), config.rmsNormEps())
                : new RmsNorm(config.hiddenSize(), config.rmsNormEps());
    }

    private static GatedMlp mlp(LlamaConfig config) {
        int e = config.hiddenSize();
        int inner = config.intermediateSize();
        return config.fusedProjections()
                ? GatedMlp.fused(e, inner, config.mlpBias(), config.initializerRange())
                : new GatedMlp(e, inner, config.mlpBias(), config.initializerRange(), config.hiddenActivation());
    }

    /** @return the rotary embedding the global layers share (all layers but Gemma 3's local ones) */
    public RotaryEmbedding rotaryEmbedding() {
        return rotaryEmbedding;
    }

    /** @return the rotary embedding of the sliding-window layers (Gemma 3's own base; else the global one) */
    public RotaryEmbedding localRotaryEmbedding() {
        return localRotaryEmbedding;
    }

    @Override
    protected NDArray embed(
            ParameterStore store, NDArray inputIds, NDArray positionIds, boolean training) {
        NDArray h = embedTokens.forward(store, inputIds, training); // (B, T, E)
        return embeddingScale == 1 ? h : h.mul(Scalars.of(embeddingScale, h));
    }
}
