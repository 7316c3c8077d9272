package io.github.djlllmzoo.blocks;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import java.util.Optional;

/**
 * Offers {@link Kernels} for the models it can speed up. Implementations are found with {@link
 * java.util.ServiceLoader} ({@code META-INF/services/io.github.djlllmzoo.blocks.KernelsProvider})
 * and asked once per model, by {@link Kernels#forModel}.
 */
public interface KernelsProvider {

    /**
     * The kernels for a model whose parameters this engine holds on this device, of this type.
     *
     * @param engine the engine
     * @param device the device
     * @param dataType the parameters' element type
     * @return the kernels, or empty where this provider has nothing faster than the engine (another
     *     engine or device, a CPU its kernels do not run on)
     */
    Optional<Kernels> kernels(Engine engine, Device device, DataType dataType);
}
