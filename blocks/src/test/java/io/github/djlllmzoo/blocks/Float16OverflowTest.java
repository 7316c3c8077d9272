package io.github.djlllmzoo.blocks;

import static org.junit.jupiter.api.Assertions.assertEquals;

import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import java.nio.file.Paths;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/** Which families float16 is refused to unless forced, read from the golden checkpoints' configs. */
class Float16OverflowTest {

    private static DecoderConfig config(String golden) throws Exception {
        return Configs.read(Paths.get(System.getProperty("llmzoo.testdata"), "golden", golden));
    }

    @ParameterizedTest
    @CsvSource({
        "gemma2-softcap-window, FLOAT32",
        "gemma3-local-global, FLOAT32",
        "gemma-bf16, FLOAT16",
        "llama-gqa, FLOAT16",
        "qwen3-qknorm, FLOAT16",
        "phi3-fused, FLOAT16",
        "gpt2-tiny, FLOAT16"
    })
    void float16IsGuardedOnlyForTheFamiliesWhoseActivationsExceedItsRange(String golden, DataType guarded)
            throws Exception {
        DecoderConfig config = config(golden);
        assertEquals(guarded, Float16Overflow.GUARD.computeType(config, DataType.FLOAT16));
        assertEquals(DataType.FLOAT16, Float16Overflow.ALLOW.computeType(config, DataType.FLOAT16), "forced");
        assertEquals(DataType.FLOAT32, Float16Overflow.GUARD.computeType(config, DataType.FLOAT32));
    }
}
