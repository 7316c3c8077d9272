package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.RoundingBound;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;
import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointWeightsTest {

    private static final Path GPT2_TINY =
            Paths.get(System.getProperty("llmzoo.testdata", "../testdata"), "golden", "gpt2-tiny");
    private static final long[] PROMPT = {113, 455, 295, 39, 239};

    @TempDir Path tmp;

    @Test
    void transformerPrefixAndAnExplicitTiedHeadLoadToTheSameLogits() throws Exception {
        Path copy = copyCheckpoint("prefixed");
        Path weights = copy.resolve("model.safetensors");
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            Map<String, NDArray> renamed = new LinkedHashMap<>();
            try (SafeTensorsReader reader = SafeTensorsReader.open(GPT2_TINY.resolve("model.safetensors"))) {
                for (String name : reader.tensors().keySet()) {
                    renamed.put("transformer." + name, reader.load(name, manager, DataType.FLOAT32));
                }
                renamed.put("lm_head.weight", reader.load("wte.weight", manager, DataType.FLOAT32));
                renamed.put("transformer.h.0.attn.bias", manager.ones(new ai.djl.ndarray.types.Shape(1, 1, 4, 4)));
            }
            SafeTensorsWriter.write(weights, renamed, Map.of("format", "pt"));
        }
        float[] expected = lastLogits(GPT2_TINY);
        float bound =
                RoundingBound.ofLogits(Configs.read(GPT2_TINY.resolve("config.json")), PROMPT.length, expected);
        assertArrayEquals(expected, lastLogits(copy), bound);
    }

    @Test
    void truncatedWeightsNameTheFile() throws Exception {
        Path copy = copyCheckpoint("truncated");
        Path weights = copy.resolve("model.safetensors");
        try (FileChannel channel = FileChannel.open(weights, StandardOpenOption.WRITE)) {
            channel.truncate(channel.size() - 1000);
        }
        InvalidCheckpointException e = assertThrows(InvalidCheckpointException.class, () -> LocalModel.load(copy));
        assertTrue(e.getMessage().contains(weights.toString()), e.getMessage());
    }

    @Test
    void headerLengthBeyondTheFileNamesTheFile() throws Exception {
        Path copy = copyCheckpoint("header");
        Path weights = copy.resolve("model.safetensors");
        try (FileChannel channel = FileChannel.open(weights, StandardOpenOption.WRITE)) {
            ByteBuffer length = ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(0, 1L << 40);
            channel.write(length, 0);
        }
        InvalidCheckpointException e = assertThrows(InvalidCheckpointException.class, () -> LocalModel.load(copy));
        assertTrue(e.getMessage().contains(weights.toString()), e.getMessage());
    }

    @Test
    void aTensorWhoseShapeDisagreesWithTheConfigIsNamed() throws Exception {
        Path copy = copyCheckpoint("shape");
        Path config = copy.resolve("config.json");
        String json = Files.readString(config).replace("\"n_positions\": 128", "\"n_positions\": 64");
        Files.writeString(config, json);
        InvalidCheckpointException e = assertThrows(InvalidCheckpointException.class, () -> LocalModel.load(copy));
        assertTrue(e.getMessage().contains("model.safetensors"), e.getMessage());
        assertTrue(e.getMessage().contains("wpe.weight"), e.getMessage());
        assertTrue(e.getMessage().contains("(128, 64)") && e.getMessage().contains("(64, 64)"), e.getMessage());
    }

    @Test
    void aMissingTensorIsNamed() throws Exception {
        Path copy = copyCheckpoint("missing");
        Path weights = copy.resolve("model.safetensors");
        try (NDManager manager = NDManager.newBaseManager("PyTorch")) {
            Map<String, NDArray> kept = new LinkedHashMap<>();
            try (SafeTensorsReader reader = SafeTensorsReader.open(GPT2_TINY.resolve("model.safetensors"))) {
                for (String name : reader.tensors().keySet()) {
                    if (!name.equals("h.1.mlp.c_fc.bias")) {
                        kept.put(name, reader.load(name, manager, DataType.FLOAT32));
                    }
                }
            }
            SafeTensorsWriter.write(weights, kept, Map.of());
        }
        InvalidCheckpointException e = assertThrows(InvalidCheckpointException.class, () -> LocalModel.load(copy));
        assertTrue(e.getMessage().contains("transformer.h.1.mlp.c_fc.bias"), e.getMessage());
    }

    @Test
    void pytorchBinOnlyCheckpointsSaySafetensorsAreNeeded() throws Exception {
        Path dir = Files.createDirectory(tmp.resolve("bin-only"));
        Files.copy(GPT2_TINY.resolve("config.json"), dir.resolve("config.json"));
        Files.write(dir.resolve("pytorch_model.bin"), new byte[] {1, 2, 3});
        InvalidCheckpointException e = assertThrows(InvalidCheckpointException.class, () -> LocalModel.load(dir));
        assertTrue(e.getMessage().contains("only safetensors"), e.getMessage());
    }

    @Test
    void aConfigWithAnUnknownModelTypeNamesTheField() throws Exception {
        Path copy = copyCheckpoint("type");
        Path config = copy.resolve("config.json");
        Files.writeString(config, Files.readString(config).replace("\"gpt2\"", "\"bert\""));
        InvalidCheckpointException e = assertThrows(InvalidCheckpointException.class, () -> LocalModel.load(copy));
        assertTrue(e.getMessage().contains("model_type") && e.getMessage().contains("bert"), e.getMessage());
    }

    private static float[] lastLogits(Path dir) throws Exception {
        try (LocalModel model = LocalModel.load(dir);
                io.github.djlllmzoo.blocks.KvCache cache = model.block().newCache(model.model().getNDManager(), 1, 8)) {
            return model.generator().nextLogits(PROMPT, cache);
        }
    }

    private Path copyCheckpoint(String name) throws IOException {
        Path dir = Files.createDirectory(tmp.resolve(name));
        for (String file : new String[] {"config.json", "model.safetensors"}) {
            Files.copy(GPT2_TINY.resolve(file), dir.resolve(file));
            dir.resolve(file).toFile().setWritable(true);
        }
        Files.writeString(dir.resolve("README.md"), "copy of gpt2-tiny\n", StandardCharsets.UTF_8);
        return dir;
    }
}
