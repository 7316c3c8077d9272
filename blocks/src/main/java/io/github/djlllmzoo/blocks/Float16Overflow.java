package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import io.github.djlllmzoo.blocks.config.LlamaFamily;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What to do when float16 is asked of a family whose activations exceed its range (largest finite
 * value 65504): Gemma 2 and Gemma 3, trained in bfloat16, whose residual stream grows past it on real
 * checkpoints (Hugging Face warns against float16 for them), so that a float16 pass yields
 * infinities and then NaN logits. bfloat16, which would hold them, aborts DJL 0.35.1's JNI.
 */
public enum Float16Overflow {
    /** Such a family computes in float32 instead, with a warning; the default. */
    GUARD,
    /** Compute in float16 as asked, accepting infinities and NaNs where the activations overflow. */
    ALLOW;

    private static final Logger LOG = LoggerFactory.getLogger(Float16Overflow.class);

    /**
     * @param config the model's config
     * @return whether the family's activations are known to exceed float16's range
     */
    public static boolean exceedsFloat16(DecoderConfig config) {
        return config instanceof LlamaConfig && LlamaFamily.of(config.modelType()).exceedsFloat16();
    }

    /**
     * The element type a model computes in.
     *
     * @param config the model's config
     * @param requested the element type asked for
     * @return {@code requested}, or float32 in place of float16 for a family that {@link
     *     #exceedsFloat16} under {@link #GUARD} (logged as a warning)
     */
    public DataType computeType(DecoderConfig config, DataType requested) {
        if (requested != DataType.FLOAT16 || !exceedsFloat16(config)) {
            return requested;
        }
        if (this == ALLOW) {
            LOG.warn(
                    "{} computes in float16 as forced: its activations exceed float16's range on real checkpoints,"
                            + " which gives infinite and NaN logits",
                    config.modelType());
            return requested;
        }
        LOG.warn(
                "{} computes in float32, not float16: its activations exceed float16's range on real checkpoints"
                        + " (NaN logits); force float16 with --allow-float16-overflow (CLI) or the argument"
                        + " allowFloat16Overflow=true (model zoo)",
                config.modelType());
        return DataType.FLOAT32;
    }
}
