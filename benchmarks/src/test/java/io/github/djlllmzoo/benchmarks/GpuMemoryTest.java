package io.github.djlllmzoo.benchmarks;

import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Device;
import org.junit.jupiter.api.Test;

class GpuMemoryTest {

    @Test
    void onTheCpuNothingIsMeasured() {
        GpuMemory memory = new GpuMemory(Device.cpu());
        memory.sample();
        assertTrue(Double.isNaN(memory.peakMib()));
        assertTrue(Double.isNaN(memory.totalMib()));
    }
}
