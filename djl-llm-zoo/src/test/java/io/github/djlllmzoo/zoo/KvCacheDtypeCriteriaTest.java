package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.repository.zoo.Criteria;
import ai.djl.repository.zoo.ZooModel;
import ai.djl.translate.NoopTranslator;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import org.junit.jupiter.api.Test;

/** The Criteria argument {@code kvCacheDtype}: the model's caches in its type, an unknown one refused by name. */
class KvCacheDtypeCriteriaTest {

    private static Criteria<NDList, NDList> criteria(String kvCacheDtype) {
        return Criteria.builder()
                .setTypes(NDList.class, NDList.class)
                .optGroupId(LlmModelZoo.GROUP_ID)
                .optArtifactId(LlmModelZoo.ANY_MODEL)
                .optArgument("model", GoldenCase.root().resolve("llama-gqa").toString())
                .optArgument("kvCacheDtype", kvCacheDtype)
                .optTranslator(new NoopTranslator())
                .build();
    }

    @Test
    void theKvCacheDtypeArgumentMakesTheModelsCachesFloat16() throws Exception {
        try (ZooModel<NDList, NDList> model = criteria("float16").loadModel()) {
            CausalLmBlock block = (CausalLmBlock) model.getBlock();
            assertEquals(DataType.FLOAT16, block.kvCacheDataType());
            assertEquals(DataType.FLOAT32, block.dataType(), "the model still computes in float32");
        }
    }

    @Test
    void anUnknownKvCacheDtypeIsRefusedNamingTheArgument() {
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> criteria("float8").loadModel().close());
        assertEquals("kvCacheDtype must be float32 or float16, not 'float8'", e.getMessage());
    }
}
