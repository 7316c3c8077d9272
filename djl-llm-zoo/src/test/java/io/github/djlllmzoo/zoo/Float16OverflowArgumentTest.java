package io.github.djlllmzoo.zoo;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import ai.djl.Model;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.Float16Overflow;
import io.github.djlllmzoo.blocks.WeightFormat;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The zoo's {@code allowFloat16Overflow} argument and what loading Gemma 2 in float16 computes in. */
class Float16OverflowArgumentTest {

    @Test
    void float16IsGuardedUnlessTheArgumentAllowsIt() {
        assertEquals(Float16Overflow.GUARD, ZooArguments.float16Overflow(Map.of()));
        assertEquals(Float16Overflow.GUARD, ZooArguments.float16Overflow(Map.of("allowFloat16Overflow", "false")));
        assertEquals(Float16Overflow.ALLOW, ZooArguments.float16Overflow(Map.of("allowFloat16Overflow", "true")));
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> ZooArguments.float16Overflow(Map.of("allowFloat16Overflow", "yes")));
        assertTrue(e.getMessage().contains("allowFloat16Overflow must be true or false, not 'yes'"), e.getMessage());
    }

    @Test
    void gemma2AskedInFloat16LoadsInFloat32UnlessAllowed() throws Exception {
        GoldenCase gemma2 = GoldenCase.load("gemma2-softcap-window");
        // Loaded on the CPU: the choice depends on the family, not on the device.
        try (Model guarded = LocalModel.loadModel(gemma2.dir(), Device.cpu(), DataType.FLOAT16, WeightFormat.FLOAT32)) {
            assertEquals(DataType.FLOAT32, guarded.getDataType());
        }
        try (Model forced =
                LocalModel.loadModel(
                        gemma2.dir(), Device.cpu(), DataType.FLOAT16, WeightFormat.FLOAT32, Float16Overflow.ALLOW)) {
            assertEquals(DataType.FLOAT16, forced.getDataType());
        }
    }
}
