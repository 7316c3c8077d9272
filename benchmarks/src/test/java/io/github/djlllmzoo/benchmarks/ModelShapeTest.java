package io.github.djlllmzoo.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import io.github.djlllmzoo.blocks.config.GemmaLayout;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Every benchmark shape is a config.json its family's parser accepts, with the architecture it names. */
class ModelShapeTest {

    @TempDir Path dir;

    @ParameterizedTest
    @EnumSource(ModelShape.class)
    void eachShapesConfigReadsAsItsFamily(ModelShape shape) throws Exception {
        Files.writeString(dir.resolve(CheckpointFiles.CONFIG), shape.config().toString());
        DecoderConfig config = Configs.read(dir);
        assertEquals(shape.config().get("model_type").getAsString(), config.modelType());
        assertEquals(shape.config().get("vocab_size").getAsInt(), config.vocabSize());
        assertEquals(shape, ModelShape.of(shape.label()));
    }

    @Test
    void gemma3ShapeSlidesOnFiveLayersOfSixWithItsRealWindow() throws Exception {
        Files.writeString(dir.resolve(CheckpointFiles.CONFIG), ModelShape.GEMMA3_270M.config().toString());
        LlamaConfig config = (LlamaConfig) Configs.read(dir);
        for (int layer = 0; layer < config.numLayers(); layer++) {
            assertEquals((layer + 1) % 6 == 0 ? 0 : 512, config.slidingWindow(layer), "layer " + layer);
        }
        assertEquals(new GemmaLayout(256, 0, 0, true, 10000.0), config.gemma());
        assertEquals(256, config.headDim());
        assertEquals(1, config.numKvHeads());
    }

    @Test
    void tinyLlamaShapeReadsAsTinyLlama11bsDimensions() throws Exception {
        Files.writeString(dir.resolve(CheckpointFiles.CONFIG), ModelShape.of("tinyllama-1.1b").config().toString());
        LlamaConfig config = (LlamaConfig) Configs.read(dir);
        assertEquals(2048, config.hiddenSize());
        assertEquals(22, config.numLayers());
        assertEquals(32, config.numHeads());
        assertEquals(4, config.numKvHeads());
        assertEquals(64, config.headDim());
        assertEquals(5632, config.intermediateSize());
        assertEquals(32000, config.vocabSize());
        assertFalse(config.tieWordEmbeddings());
    }
}
