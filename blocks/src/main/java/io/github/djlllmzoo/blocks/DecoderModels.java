package io.github.djlllmzoo.blocks;

import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.blocks.config.Gpt2Config;
import io.github.djlllmzoo.blocks.config.LlamaConfig;

/** Creates the model block of a config's family. */
public final class DecoderModels {

    private DecoderModels() {}

    /**
     * Creates an uninitialized model block for {@code config}.
     *
     * @param config a family config record
     * @return the block (load weights into it, or initialize it to train from scratch)
     */
    public static CausalLmBlock create(DecoderConfig config) {
        if (config instanceof Gpt2Config) {
            return new Gpt2Model((Gpt2Config) config);
        }
        if (config instanceof LlamaConfig) {
            return new LlamaModel((LlamaConfig) config);
        }
        throw new IllegalArgumentException("no model block for model_type " + config.modelType());
    }
}
