package io.github.djlllmzoo.training;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.AttentionContext;
import io.github.djlllmzoo.blocks.Gpt2Attention;
import io.github.djlllmzoo.blocks.ConfiguredBlock;
import io.github.djlllmzoo.blocks.Conv1D;
import io.github.djlllmzoo.blocks.DecoderLayer;
import io.github.djlllmzoo.blocks.Embedding;
import io.github.djlllmzoo.blocks.GatedMlp;
import io.github.djlllmzoo.blocks.Gpt2Mlp;
import io.github.djlllmzoo.blocks.Gpt2Model;
import io.github.djlllmzoo.blocks.GroupedQueryAttention;
import io.github.djlllmzoo.blocks.LayerNorm;
import io.github.djlllmzoo.blocks.Linear;
import io.github.djlllmzoo.blocks.LlamaModel;
import io.github.djlllmzoo.blocks.RmsNorm;
import io.github.djlllmzoo.blocks.RotaryEmbedding;
import io.github.djlllmzoo.blocks.UnaryBlock;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import java.util.Random;
import java.util.function.Function;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * Autograd gradients of every block of both families agree with central finite differences in
 * float64, in the training path (dropout rates 0 so the loss is a deterministic function of the
 * weights).
 */
class BlockGradientTest {

    private static final int SAMPLES = 6;
    /** Entries per parameter of the whole model, whose forward passes are the slowest. */
    private static final int MODEL_SAMPLES = 4;
    private static final Gpt2Config CONFIG = TinyModels.config(11, 8, 8, 2, 2);
    private static final Shape HIDDEN = new Shape(2, 5, 8); // (B, T, E)

    private NDManager manager;
    private ParameterStore store;
    private Random random;

    @BeforeEach
    void setUp() {
        Engine.getEngine("PyTorch").setRandomSeed(3);
        manager = NDManager.newBaseManager("PyTorch");
        store = new ParameterStore(manager, false);
        random = new Random(11);
    }

    @AfterEach
    void tearDown() {
        manager.close();
    }

    @Test
    void conv1dGradientsMatchFiniteDifferences() {
        checkUnary(new Conv1D(8, 6, 0.5f), HIDDEN);
    }

    @Test
    void linearGradientsMatchFiniteDifferences() {
        checkUnary(new Linear(8, 6, true, 0.5f), HIDDEN);
    }

    @Test
    void layerNormGradientsMatchFiniteDifferences() {
        LayerNorm norm = new LayerNorm(8, 1e-5f);
        norm.initialize(manager, DataType.FLOAT64, HIDDEN);
        scaleUp(norm);
        check(norm, HIDDEN, (x) -> norm.forward(store, x, true));
    }

    @Test
    void embeddingGradientsMatchFiniteDifferences() {
        Embedding embedding = new Embedding(11, 8, 0.5f);
        embedding.initialize(manager, DataType.FLOAT64, new Shape(2, 5));
        NDArray ids = manager.create(new long[] {1, 4, 4, 10, 0, 7, 3, 4, 9, 2}, new Shape(2, 5));
        NDArray weights = randomLike(new Shape(2, 5, 8));
        int checked =
                FiniteDifferenceCheck.assertGradientsMatch(
                        embedding, () -> embedding.forward(store, ids, true).mul(weights), 3 * SAMPLES, random);
        assertEquals(3 * SAMPLES, checked);
    }

    @Test
    void causalSelfAttentionGradientsMatchFiniteDifferences() {
        Gpt2Attention attention = new Gpt2Attention(CONFIG, 0);
        attention.initialize(manager, DataType.FLOAT64, HIDDEN);
        scaleUp(attention);
        check(attention, HIDDEN, x -> attention.forward(store, x, AttentionContext.causal(x), true));
    }

    @Test
    void gpt2MlpGradientsMatchFiniteDifferences() {
        Gpt2Mlp mlp = new Gpt2Mlp(CONFIG);
        mlp.initialize(manager, DataType.FLOAT64, HIDDEN);
        scaleUp(mlp);
        check(mlp, HIDDEN, x -> mlp.forward(store, x, true));
    }

    @Test
    void decoderLayerGradientsMatchFiniteDifferences() {
        DecoderLayer layer =
                new DecoderLayer(
                        new String[] {"ln_1", "attn", "ln_2", "mlp"},
                        new LayerNorm(8, 1e-5f),
                        new Gpt2Attention(CONFIG, 0),
                        new LayerNorm(8, 1e-5f),
                        new Gpt2Mlp(CONFIG));
        layer.initialize(manager, DataType.FLOAT64, HIDDEN);
        scaleUp(layer);
        check(layer, HIDDEN, x -> layer.forward(store, x, AttentionContext.causal(x), true));
    }

    @Test
    void wholeGpt2ModelWithTheCausalLmLossMatchesFiniteDifferences() {
        Gpt2Model model = new Gpt2Model(CONFIG);
        model.initialize(manager, DataType.FLOAT64, new Shape(2, 5));
        scaleUp(model);
        checkWithCausalLmLoss(model);
    }

    @Test
    void rmsNormGradientsMatchFiniteDifferences() {
        RmsNorm norm = new RmsNorm(8, 1e-6f);
        norm.initialize(manager, DataType.FLOAT64, HIDDEN);
        scaleUp(norm);
        check(norm, HIDDEN, x -> norm.forward(store, x, true));
    }

    @Test
    void gatedMlpGradientsMatchFiniteDifferences() {
        GatedMlp mlp = new GatedMlp(8, 12, true, 0.5f);
        mlp.initialize(manager, DataType.FLOAT64, HIDDEN);
        check(mlp, HIDDEN, x -> mlp.forward(store, x, true));
    }

    @Test
    void groupedQueryAttentionWithRotaryPositionsMatchesFiniteDifferences() throws Exception {
        checkAttention(llama(false));
    }

    @Test
    void fusedGateUpMlpGradientsMatchFiniteDifferences() {
        GatedMlp mlp = GatedMlp.fused(8, 12, false, 0.5f);
        mlp.initialize(manager, DataType.FLOAT64, HIDDEN);
        check(mlp, HIDDEN, x -> mlp.forward(store, x, true));
    }

    @Test
    void qwen3AttentionWithPerHeadQueryKeyNormsMatchesFiniteDifferences() throws Exception {
        LlamaConfig config = family("qwen3");
        assertTrue(config.qkNorm());
        checkAttention(config);
    }

    @Test
    void phi3AttentionWithFusedQkvProjectionMatchesFiniteDifferences() throws Exception {
        LlamaConfig config = family("phi3");
        assertTrue(config.fusedProjections());
        checkAttention(config);
    }

    @Test
    void qwen2AttentionWithQueryKeyValueBiasesOnlyMatchesFiniteDifferences() throws Exception {
        LlamaConfig config = family("qwen2");
        assertTrue(config.qkvBias() && !config.attentionBias());
        checkAttention(config);
    }

    @Test
    void gemmaRmsNormWithUnitOffsetGradientsMatchFiniteDifferences() {
        checkUnary(RmsNorm.gemma(8, 1e-6f), HIDDEN);
    }

    @Test
    void geluTanhGatedMlpGradientsMatchFiniteDifferences() {
        GatedMlp mlp = new GatedMlp(8, 12, true, 0.5f, HiddenActivation.GELU_TANH);
        mlp.initialize(manager, DataType.FLOAT64, HIDDEN);
        check(mlp, HIDDEN, x -> mlp.forward(store, x, true));
    }

    @Test
    void gemma2SoftCappedAttentionMatchesFiniteDifferences() throws Exception {
        LlamaConfig config = family("gemma2");
        assertEquals(2f, config.gemma().attnLogitSoftcapping());
        checkAttention(config, 1); // a global layer: the causal context has no window mask
    }

    @Test
    void gemma3AttentionWithUnitOffsetQueryKeyNormsMatchesFiniteDifferences() throws Exception {
        LlamaConfig config = family("gemma3_text");
        assertTrue(config.qkNorm() && config.slidingWindow(0) > 0 && config.slidingWindow(1) == 0);
        checkAttention(config, 1);
    }

    @ParameterizedTest
    @ValueSource(strings = {"qwen2", "qwen3", "phi3", "gemma", "gemma2", "gemma3_text"})
    void wholeModelOfEachLlamaShapedFamilyWithTheCausalLmLossMatchesFiniteDifferences(String modelType)
            throws Exception {
        LlamaModel model = new LlamaModel(family(modelType));
        model.initialize(manager, DataType.FLOAT64, new Shape(2, 5));
        scaleUp(model);
        checkWithCausalLmLoss(model);
    }

    private void checkAttention(LlamaConfig config) {
        checkAttention(config, 0);
    }

    private void checkAttention(LlamaConfig config, int layer) {
        GroupedQueryAttention attention =
                new GroupedQueryAttention(config, layer, RotaryEmbedding.of(config));
        Shape input = new Shape(2, 5, config.hiddenSize());
        attention.initialize(manager, DataType.FLOAT64, input);
        scaleUp(attention);
        check(attention, input, x -> attention.forward(store, x, AttentionContext.causal(x), true));
    }

    /**
     * The tiny Llama config read as another family's (head_dim 6 x 4 heads != hidden 16); Gemma 2
     * and 3 with a window of 3 over the 5 positions and Gemma 2's soft caps small enough to bend.
     */
    private static LlamaConfig family(String modelType) throws Exception {
        String json = TinyModels.llamaJson(11, false).replace("\"llama\"", "\"" + modelType + "\"");
        JsonObject object = JsonParser.parseString(json).getAsJsonObject();
        if (modelType.startsWith("gemma") && !modelType.equals("gemma")) {
            object.addProperty("sliding_window", 3);
            object.addProperty("query_pre_attn_scalar", 4);
            object.addProperty("sliding_window_pattern", 2);
        }
        if (modelType.equals("gemma2")) {
            object.addProperty("attn_logit_softcapping", 2.0);
            object.addProperty("final_logit_softcapping", 3.0);
        }
        return LlamaConfig.parse(ConfigJson.of(null, object));
    }

    @Test
    void wholeLlamaModelWithItsOwnHeadAndTheCausalLmLossMatchesFiniteDifferences() throws Exception {
        // GPT-2 above covers a head tied to the embedding; here the untied lm_head.
        LlamaModel model = new LlamaModel(llama(false));
        model.initialize(manager, DataType.FLOAT64, new Shape(2, 5));
        scaleUp(model);
        checkWithCausalLmLoss(model);
    }

    private static LlamaConfig llama(boolean tied) throws Exception {
        String json = TinyModels.llamaJson(11, tied);
        return LlamaConfig.parse(ConfigJson.of(null, JsonParser.parseString(json).getAsJsonObject()));
    }

    /**
     * Checks the causal-LM loss of a whole model over a fixed batch. The loss is its own single
     * term: a mean of non-negative token losses, so its magnitude is the loss itself.
     */
    private void checkWithCausalLmLoss(ConfiguredBlock model) {
        NDArray ids = manager.create(new long[] {1, 4, 4, 10, 0, 7, 3, 4, 9, 2}, new Shape(2, 5));
        long ignore = CausalLmLoss.IGNORE_INDEX;
        NDArray targets = manager.create(new long[] {4, 4, 10, 0, ignore, 3, ignore, 9, 2, 5}, new Shape(2, 5));
        CausalLmLoss loss = new CausalLmLoss();
        int checked =
                FiniteDifferenceCheck.assertGradientsMatch(
                        model,
                        () -> loss.evaluate(new NDList(targets), model.forward(store, new NDList(ids), true)),
                        MODEL_SAMPLES,
                        random);
        assertEquals(model.namedParameters().size() * MODEL_SAMPLES, checked);
    }

    private void checkUnary(UnaryBlock block, Shape input) {
        block.initialize(manager, DataType.FLOAT64, input);
        check(block, input, x -> block.forward(store, x, true));
    }

    /**
     * Checks the loss {@code sum(block(x) * R)}, whose terms are {@code block(x) * R}, for a fixed
     * random input {@code x} and weights {@code R}.
     */
    private void check(ConfiguredBlock block, Shape input, Function<NDArray, NDArray> forward) {
        NDArray x = randomLike(input);
        NDArray weights = randomLike(forward.apply(x).getShape());
        int checked =
                FiniteDifferenceCheck.assertGradientsMatch(
                        block, () -> forward.apply(x).mul(weights), SAMPLES, random);
        assertEquals(block.namedParameters().size() * SAMPLES, checked);
    }

    private NDArray randomLike(Shape shape) {
        return manager.randomNormal(shape).toType(DataType.FLOAT64, false);
    }

    /**
     * Perturbs the initial weights (GPT-2's std 0.02, norms at exactly 1 and 0) by unit-scale noise,
     * so attention, GELU and the norms work away from their linear regime and the check exercises
     * their curvature.
     */
    private void scaleUp(ConfiguredBlock block) {
        for (Parameter p : block.namedParameters().values()) {
            p.getArray().addi(randomLike(p.getArray().getShape()).muli(0.3));
        }
    }
}
