package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Parameter;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.config.ConfigJson;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Embedding tables held compressed: the lookup widens the rows it gathers, a tied head reads the same codes. */
class CompressedEmbeddingTest {

    @Test
    void aCompressedTableLooksUpItsWidenedRowsAndRefusesIdsOutsideIt() {
        try (NDManager manager = NDManager.newBaseManager()) {
            Embedding embedding = new Embedding(10, 64, 1f);
            embedding.initialize(manager, DataType.FLOAT32, new Shape(1, 1));
            embedding.projection().compress(WeightFormat.INT8);
            assertFalse(embedding.weight().isInitialized(), "the float table is freed");
            float[] table = embedding.projection().compressed().toFloatArray();
            long[] ids = {3, 0, 9, 3, 7, 1};
            NDArray rows = embedding.forward(null, manager.create(ids, new Shape(2, 3)), false);
            assertEquals(new Shape(2, 3, 64), rows.getShape());
            float[] expected = new float[ids.length * 64];
            for (int i = 0; i < ids.length; i++) {
                System.arraycopy(table, (int) ids[i] * 64, expected, i * 64, 64);
            }
            assertArrayEquals(expected, rows.toFloatArray());
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> embedding.forward(null, manager.create(new long[] {10}, new Shape(1, 1)), false));
            assertTrue(e.getMessage().contains("id 10"), e.getMessage());
            assertThrows(
                    UnsupportedOperationException.class,
                    () -> embedding.forward(null, manager.create(new long[] {1}, new Shape(1, 1)), true));
        }
    }

    /**
     * A tied model compressed holds its token table once, compressed (the head reads the same
     * codes), and computes the logits of the float32 model whose weights are the compressed ones
     * widened: the same operations on the same values, so exactly.
     */
    @ParameterizedTest
    @EnumSource(value = WeightFormat.class, names = {"INT8", "BFLOAT16", "FLOAT16", "INT6"})
    void aTiedModelWithItsTableCompressedComputesTheLogitsOfItsWidenedWeights(WeightFormat format) throws Exception {
        long[] ids = {5, 17, 2, 44, 31, 8};
        try (NDManager manager = NDManager.newBaseManager()) {
            LlamaModel compressed = new LlamaModel(tiedConfig());
            compressed.initialize(manager, DataType.FLOAT32, new Shape(1, 1));
            LlamaModel widened = new LlamaModel(tiedConfig());
            widened.initialize(manager, DataType.FLOAT32, new Shape(1, 1));
            Map<String, Parameter> from = compressed.namedParameters();
            widened.namedParameters().forEach((name, p) -> p.getArray().set(from.get(name).getArray().toFloatArray()));

            compressed.compressWeights(format);
            Parameter table = from.get("embed_tokens.weight");
            Map<Parameter, CompressedWeight> held = compressed.compressedWeights();
            assertTrue(held.containsKey(table), "the token table is compressed");
            assertFalse(table.isInitialized(), "and its float array freed");
            assertSame(held.get(table), compressed.compressibleWeights().get(table).compressed());
            for (Map.Entry<Parameter, ProjectionWeight> e : widened.compressibleWeights().entrySet()) {
                Parameter original = from.get(nameOf(widened, e.getKey()));
                e.getKey().getArray().set(held.get(original).toFloatArray());
            }
            assertEquals(DataType.FLOAT32, compressed.dataType());

            NDArray input = manager.create(ids, new Shape(1, ids.length));
            float[] want = widened.forward(null, input, null, null, null, false, false).toFloatArray();
            float[] have = compressed.forward(null, input, null, null, null, false, false).toFloatArray();
            assertArrayEquals(want, have);
        }
    }

    private static String nameOf(CausalLmBlock model, Parameter parameter) {
        for (Map.Entry<String, Parameter> e : model.namedParameters().entrySet()) {
            if (e.getValue() == parameter) {
                return e.getKey();
            }
        }
        throw new IllegalArgumentException(parameter.getName());
    }

    private static LlamaConfig tiedConfig() throws Exception {
        JsonObject json =
                JsonParser.parseString(
                                "{\"model_type\": \"llama\", \"num_hidden_layers\": 2, \"max_position_embeddings\": 32,"
                                        + " \"vocab_size\": 64, \"hidden_size\": 64, \"intermediate_size\": 96,"
                                        + " \"num_attention_heads\": 4, \"num_key_value_heads\": 2,"
                                        + " \"tie_word_embeddings\": true}")
                        .getAsJsonObject();
        return LlamaConfig.parse(ConfigJson.of(null, json));
    }
}
