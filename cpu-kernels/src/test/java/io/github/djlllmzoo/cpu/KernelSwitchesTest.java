package io.github.djlllmzoo.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Set;
import org.junit.jupiter.api.Test;

class KernelSwitchesTest {

    @Test
    void theListTurnsOffExactlyTheKernelsItNames() {
        System.setProperty(KernelSwitches.PROPERTY, " decodeOps, " + CompressedGemm.SWITCH + ",");
        try {
            assertEquals(Set.of("decodeOps", "compressedGemm"), KernelSwitches.off());
            assertFalse(KernelSwitches.on(DecodeOps.SWITCH));
            assertTrue(KernelSwitches.on(DecodeOps.LAYER_NORM_SWITCH));
            CpuKernels kernels = new CpuKernels(true, true);
            assertTrue(kernels.toString().contains("decode ops off"), kernels.toString());
            assertTrue(kernels.toString().contains("layer norm " + (NativeKernels.loaded() ? "on" : "off")),
                    kernels.toString());
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
    }

    @Test
    void anUnknownNameIsRefusedWhenTheKernelsAreMadeNamingIt() {
        System.setProperty(KernelSwitches.PROPERTY, "decodeOps,fastMath");
        try {
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> new CpuKernels(true, true));
            assertTrue(e.getMessage().contains("'fastMath'"), e.getMessage());
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
    }
}
