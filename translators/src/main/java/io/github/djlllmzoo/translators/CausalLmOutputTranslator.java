package io.github.djlllmzoo.translators;

import ai.djl.modality.nlp.generate.CausalLMOutput;
import ai.djl.modality.nlp.generate.TextGenerator;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.translate.NoBatchifyTranslator;
import ai.djl.translate.TranslatorContext;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.KvCache;

/**
 * Adapts a {@link CausalLmBlock} to the language-model contract of DJL's own {@link
 * TextGenerator} (greedy, beam and contrastive search), which calls a {@code Predictor<NDList,
 * CausalLMOutput>} once per step. DJL 0.35.1 has no {@code LMBlock} type; this translator is that
 * contract.
 *
 * <p>Input: {@code [input_ids (B, T), position_ids (B, T), attention_mask (B, past + T)]}, followed
 * by the past keys and values {@code k0, v0, k1, v1, ...}, each (B, H_kv, past, D), from the
 * previous output (none on the first call). Output: logits (B, T, V), the last hidden state after
 * the final norm (B, T, E), which contrastive search compares, and the keys and values of past and
 * new tokens, (B, H_kv, past + T, D) per layer. The outputs are attached to the manager of {@code
 * input_ids}, so they outlive the predictor call as DJL's search expects; everything else a call
 * makes is freed when it returns.
 *
 * <p>As with {@link GenerationTranslator}, the forward pass runs inside the translator and the
 * predictor's own block forward is skipped.
 */
public final class CausalLmOutputTranslator implements NoBatchifyTranslator<NDList, CausalLMOutput> {

    private static final String OUTPUT = CausalLmOutputTranslator.class.getName() + ".output";

    @Override
    public NDList processInput(TranslatorContext ctx, NDList input) {
        CausalLmBlock model = GenerationTranslator.causalLm(ctx.getModel());
        ctx.setAttachment(OUTPUT, step(model, ctx.getNDManager(), input));
        return new NDList();
    }

    @Override
    public CausalLMOutput processOutput(TranslatorContext ctx, NDList list) {
        return (CausalLMOutput) ctx.getAttachment(OUTPUT);
    }

    /**
     * One forward step of DJL's search contract.
     *
     * @param model the model
     * @param scratch the parent manager of the step's temporary arrays
     * @param input ids, positions, mask, then past keys and values per layer
     * @return logits, last hidden state and the extended keys and values
     */
    static CausalLMOutput step(CausalLmBlock model, NDManager scratch, NDList input) {
        int layers = model.config().numLayers();
        if (input.size() != 3 && input.size() != 3 + 2 * layers) {
            throw new IllegalArgumentException(
                    "expected [input_ids, position_ids, attention_mask] and "
                            + (2 * layers)
                            + " past key/value arrays or none, got "
                            + input.size()
                            + " arrays");
        }
        NDArray ids = input.get(0);
        NDManager out = ids.getManager();
        try (NDManager step = scratch.newSubManager(ids.getDevice())) {
            NDArray localIds = local(ids, step); // (B, T)
            NDArray positions = local(input.get(1), step); // (B, T)
            NDArray mask = local(input.get(2), step); // (B, past + T)
            int b = Math.toIntExact(ids.getShape().get(0));
            int t = Math.toIntExact(ids.getShape().get(1));
            int past = input.size() == 3 ? 0 : Math.toIntExact(input.get(3).getShape().get(2));
            KvCache cache = model.newCache(step, b, past + t, false); // hands on every position
            if (past > 0) {
                for (int layer = 0; layer < layers; layer++) {
                    cache.update(layer, input.get(3 + 2 * layer), input.get(4 + 2 * layer));
                }
            }
            NDArray hidden =
                    model.hiddenStates(null, localIds, positions, mask, cache, false, false); // (B, T, E)
            NDArray logits = model.logits(null, hidden, false); // (B, T, V)
            NDList keyValues = new NDList(2 * layers);
            for (int layer = 0; layer < layers; layer++) {
                KeyValues kv = cache.read(layer, step);
                keyValues.add(kv.keys().duplicate()); // (B, H_kv, past + T, D), outliving the cache
                keyValues.add(kv.values().duplicate());
            }
            logits.attach(out);
            hidden.attach(out);
            keyValues.attach(out);
            return new CausalLMOutput(logits, hidden, keyValues);
        }
    }

    private static NDArray local(NDArray array, NDManager manager) {
        NDArray copy = array.duplicate();
        copy.attach(manager);
        return copy;
    }
}
