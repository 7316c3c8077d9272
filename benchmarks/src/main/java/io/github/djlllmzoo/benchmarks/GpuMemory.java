package io.github.djlllmzoo.benchmarks;

import ai.djl.Device;
import ai.djl.util.cuda.CudaUtils;
import java.lang.management.MemoryUsage;

/**
 * The memory in use on a GPU as CUDA reports it ({@code cudaMemGetInfo}, through DJL's {@code
 * CudaUtils.getGpuMemory}): the whole device's, this process's CUDA context and PyTorch's caching
 * allocator included (which keeps what it once reserved, so the figure after a run is at least the
 * run's peak reservation). Sampled as a run goes; {@link #peakMib()} is the largest sample. DJL
 * 0.35.1 exposes no per-process or allocator statistics (PyTorch's {@code max_memory_allocated}).
 */
public final class GpuMemory {

    private final Device device;
    private long peak = -1;
    private long total = -1;

    /** @param device the device to watch; on the CPU nothing is measured */
    public GpuMemory(Device device) {
        this.device = device;
    }

    /** Takes one sample, where the device is a GPU and CUDA answers. */
    public void sample() {
        if (!device.isGpu()) {
            return;
        }
        try {
            MemoryUsage usage = CudaUtils.getGpuMemory(device);
            peak = Math.max(peak, usage.getUsed());
            total = usage.getMax();
        } catch (IllegalArgumentException | IllegalStateException | UnsatisfiedLinkError e) {
            // no CUDA runtime answered: the figure stays not measured
        }
    }

    /** @return the largest sample in MiB, or NaN where none was taken */
    public double peakMib() {
        return peak < 0 ? Double.NaN : peak / (double) (1 << 20);
    }

    /** @return the device's memory in MiB, or NaN where no sample was taken */
    public double totalMib() {
        return total < 0 ? Double.NaN : total / (double) (1 << 20);
    }
}
