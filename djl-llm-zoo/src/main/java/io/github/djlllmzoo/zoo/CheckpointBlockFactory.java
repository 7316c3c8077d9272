package io.github.djlllmzoo.zoo;

import ai.djl.Model;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Block;
import ai.djl.nn.BlockFactory;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.DecoderModels;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.Configs;
import java.io.IOException;
import java.nio.file.Path;
import java.util.Map;

/**
 * Builds the family's {@link CausalLmBlock} of a Hugging Face-layout checkpoint directory with its
 * safetensors weights, for DJL's own model loader: the checkpoints that {@code
 * Criteria.optModelPath(dir)} and {@code optModelUrls("file:///dir")} or {@code
 * ("djl://io.github.djlllmzoo/gpt2")} name are loaded through it (see {@link
 * CheckpointRepositoryFactory}). The {@code dtype} argument picks the element type (float32 by
 * default).
 */
public final class CheckpointBlockFactory implements BlockFactory {

    private static final long serialVersionUID = 1L;

    /** The engine the blocks are written for. */
    static final String ENGINE = "PyTorch";

    @Override
    public Block newBlock(Model model, Path modelPath, Map<String, ?> arguments) throws IOException {
        // DJL's loader drops the model it made when this throws: close it, or its memory leaks.
        try {
            NDManager manager = model.getNDManager();
            String engine = manager.getEngine().getEngineName();
            if (!ENGINE.equals(engine)) {
                throw new IOException(
                        modelPath + ": djl-llm-zoo checkpoints run on DJL's " + ENGINE + " engine, not " + engine);
            }
            DataType dataType = ZooArguments.dataType(arguments, manager.getDevice());
            CausalLmBlock block = DecoderModels.create(Configs.read(modelPath));
            CheckpointWeights.load(block, modelPath, manager, dataType);
            model.setDataType(dataType);
            return block;
        } catch (InvalidCheckpointException e) {
            model.close();
            // DJL's BlockFactory may only throw IOException; the message names the file and field.
            throw new IOException(e.getMessage(), e);
        } catch (IOException | RuntimeException e) {
            model.close();
            throw e;
        }
    }
}
