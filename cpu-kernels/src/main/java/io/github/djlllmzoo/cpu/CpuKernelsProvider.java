package io.github.djlllmzoo.cpu;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.blocks.KernelsProvider;
import java.util.Optional;

/**
 * Offers {@link CpuKernels} to models whose parameters PyTorch holds on the CPU, of any element type
 * (the native kernels take float32 only and leave other types to the engine, call by call).
 * Registered for {@link java.util.ServiceLoader} in {@code META-INF/services}.
 */
public final class CpuKernelsProvider implements KernelsProvider {

    /** The engine whose arrays the kernels read. */
    static final String ENGINE = "PyTorch";

    @Override
    public Optional<Kernels> kernels(Engine engine, Device device, DataType dataType) {
        if (!ENGINE.equals(engine.getEngineName()) || !Device.Type.CPU.equals(device.getDeviceType())) {
            return Optional.empty();
        }
        return Optional.of(new CpuKernels());
    }
}
