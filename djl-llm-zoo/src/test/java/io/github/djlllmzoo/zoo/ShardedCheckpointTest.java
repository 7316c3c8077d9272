package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonObject;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsReader;
import io.github.djlllmzoo.zoo.safetensors.SafeTensorsWriter;
import io.github.djlllmzoo.zoo.safetensors.TensorInfo;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * The same weights split over several shards with {@code model.safetensors.index.json} load into a
 * model that computes exactly the logits of the single-file checkpoint.
 */
class ShardedCheckpointTest {

    private static final int SHARDS = 3;

    @ParameterizedTest
    @ValueSource(strings = {"llama-gqa", "llama-mqa-tied-bf16"})
    void shardedCheckpointGivesTheLogitsOfTheSingleFile(String name, @TempDir Path sharded)
            throws Exception {
        GoldenCase golden = GoldenCase.load(name);
        Files.copy(golden.dir().resolve("config.json"), sharded.resolve("config.json"));
        List<String> shardNames =
                writeShards(golden.dir().resolve(CheckpointFiles.WEIGHTS), sharded);
        assertEquals(SHARDS, CheckpointWeights.files(sharded).size());
        assertEquals(
                shardNames.get(0),
                CheckpointWeights.files(sharded).get(0).getFileName().toString());

        float[] single = logits(golden.dir(), golden.promptIds());
        float[] fromShards = logits(sharded, golden.promptIds());
        assertArrayEquals(single, fromShards);
    }

    private static float[] logits(Path dir, long[] ids) throws Exception {
        try (LocalModel model = LocalModel.load(dir);
                NDManager manager = model.model().getNDManager().newSubManager()) {
            return model.block()
                    .forward(
                            null,
                            manager.create(ids, new Shape(1, ids.length)),
                            null,
                            null,
                            null,
                            false,
                            false)
                    .toFloatArray();
        }
    }

    /** Splits the tensors of {@code single} round-robin over shards and writes the index. */
    private static List<String> writeShards(Path single, Path dir) throws Exception {
        List<List<SafeTensorsWriter.RawTensor>> shards = new ArrayList<>();
        for (int i = 0; i < SHARDS; i++) {
            shards.add(new ArrayList<>());
        }
        JsonObject weightMap = new JsonObject();
        List<String> names = new ArrayList<>();
        for (int i = 0; i < SHARDS; i++) {
            names.add(String.format("model-%05d-of-%05d.safetensors", i + 1, SHARDS));
        }
        long totalSize = 0;
        try (SafeTensorsReader reader = SafeTensorsReader.open(single)) {
            int i = 0;
            for (TensorInfo info : reader.tensors().values()) {
                int shard = i++ % SHARDS;
                shards.get(shard)
                        .add(
                                new SafeTensorsWriter.RawTensor(
                                        info.name(),
                                        info.dtype(),
                                        info.shape(),
                                        reader.rawData(info.name())));
                weightMap.addProperty(info.name(), names.get(shard));
                totalSize += info.byteSize();
            }
            for (int s = 0; s < SHARDS; s++) {
                SafeTensorsWriter.write(
                        dir.resolve(names.get(s)), shards.get(s), Map.of("format", "pt"));
            }
        }
        JsonObject metadata = new JsonObject();
        metadata.addProperty("total_size", totalSize);
        JsonObject index = new JsonObject();
        index.add("metadata", metadata);
        index.add("weight_map", weightMap);
        Files.writeString(
                dir.resolve(CheckpointFiles.WEIGHTS_INDEX),
                new GsonBuilder().setPrettyPrinting().create().toJson(index));
        return names;
    }
}
