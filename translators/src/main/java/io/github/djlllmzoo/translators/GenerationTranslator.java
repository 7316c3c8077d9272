package io.github.djlllmzoo.translators;

import ai.djl.Model;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.nn.Block;
import ai.djl.translate.Batchifier;
import ai.djl.translate.Translator;
import ai.djl.translate.TranslatorContext;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import java.util.List;

/**
 * The DJL translator of text generation: a {@code Predictor<GenerationRequest, GenerationResult>}
 * over a {@link Model} whose block is a {@link CausalLmBlock}.
 *
 * <p>Autoregressive generation is a loop of forward passes with a KV cache, not one forward, so the
 * whole loop runs inside the translator ({@link BatchGenerator} on the context's model block):
 * {@code processInput} only records the request and hands the predictor an empty {@link NDList},
 * for which DJL's {@code Predictor} skips its single block forward, and {@code processOutput} runs
 * the generation. {@code Predictor.batchPredict} generates all its requests as one batch.
 *
 * <p>Stateless: one instance may serve many predictors on many threads. Generation runs on the
 * model's device.
 */
public final class GenerationTranslator implements Translator<GenerationRequest, GenerationResult> {

    private static final String REQUESTS = GenerationTranslator.class.getName() + ".requests";

    private final TextTokenizer tokenizer;
    private final GenerationConfig defaults;

    /**
     * @param tokenizer the model's tokenizer, or {@code null} to accept token ids only
     * @param defaults the config of requests that carry none
     */
    public GenerationTranslator(TextTokenizer tokenizer, GenerationConfig defaults) {
        this.tokenizer = tokenizer;
        this.defaults = defaults;
    }

    /** @return the config of requests that carry none */
    public GenerationConfig defaults() {
        return defaults;
    }

    /** @return the tokenizer, or {@code null} */
    public TextTokenizer tokenizer() {
        return tokenizer;
    }

    /**
     * Non-null so that {@code Predictor.batchPredict} calls {@link #batchProcessInput}; the
     * batchifier itself is never used.
     */
    @Override
    public Batchifier getBatchifier() {
        return Batchifier.STACK;
    }

    @Override
    public NDList processInput(TranslatorContext ctx, GenerationRequest input) {
        ctx.setAttachment(REQUESTS, List.of(input));
        return new NDList();
    }

    @Override
    public GenerationResult processOutput(TranslatorContext ctx, NDList list) {
        return generate(ctx).get(0);
    }

    @Override
    public NDList batchProcessInput(TranslatorContext ctx, List<GenerationRequest> inputs) {
        ctx.setAttachment(REQUESTS, List.copyOf(inputs));
        return new NDList();
    }

    @Override
    public List<GenerationResult> batchProcessOutput(TranslatorContext ctx, NDList list) {
        return generate(ctx);
    }

    @SuppressWarnings("unchecked")
    private List<GenerationResult> generate(TranslatorContext ctx) {
        List<GenerationRequest> requests = (List<GenerationRequest>) ctx.getAttachment(REQUESTS);
        Model model = ctx.getModel();
        if (!model.getNDManager().isOpen()) {
            throw new IllegalStateException("model " + model.getName() + " is closed");
        }
        CausalLmBlock block = causalLm(model);
        try (NDManager manager = ctx.getNDManager().newSubManager(model.getNDManager().getDevice())) {
            return new BatchGenerator(block, manager, tokenizer).generate(requests, defaults);
        }
    }

    /**
     * The model's block as a causal LM.
     *
     * @param model the model
     * @return its block
     * @throws IllegalArgumentException if the block is not a {@link CausalLmBlock}
     */
    static CausalLmBlock causalLm(Model model) {
        Block block = model.getBlock();
        if (!(block instanceof CausalLmBlock)) {
            throw new IllegalArgumentException(
                    "model " + model.getName() + " does not hold a djl-llm-zoo CausalLmBlock but "
                            + (block == null ? "no block" : block.getClass().getName()));
        }
        return (CausalLmBlock) block;
    }
}
