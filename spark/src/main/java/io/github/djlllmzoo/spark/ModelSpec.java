package io.github.djlllmzoo.spark;

import ai.djl.Device;
import ai.djl.ndarray.types.DataType;
import java.io.Serializable;

/**
 * Which model an executor loads: a registry name, Hugging Face id or checkpoint directory every
 * executor can read, its element type and device. The key of {@link ExecutorModels}.
 *
 * @param reference the model reference, as {@code bin/llmzoo --model} takes it
 * @param dtype {@code float32} or {@code float16} (GPU only)
 * @param device {@code cpu} or {@code gpu}
 * @serial exclude its fields are the components above (javadoc asks a comment of each record field)
 */
public record ModelSpec(String reference, String dtype, String device) implements Serializable {

    private static final long serialVersionUID = 1L;

    /**
     * Checks every field, naming the parameter at fault.
     *
     * @param reference the model reference
     * @param dtype the element type's name
     * @param device the device's name
     */
    public ModelSpec {
        if (reference == null || reference.isBlank()) {
            throw new IllegalArgumentException("model: set the model (a registry name, Hugging Face id or directory)");
        }
        if (!dtype.equals("float32") && !dtype.equals("float16")) {
            throw new IllegalArgumentException("dtype must be float32 or float16, not '" + dtype + "'");
        }
        if (!device.equals("cpu") && !device.equals("gpu")) {
            throw new IllegalArgumentException("device must be cpu or gpu, not '" + device + "'");
        }
        if (dtype.equals("float16") && device.equals("cpu")) {
            throw new IllegalArgumentException("dtype float16 needs device gpu");
        }
    }

    /** @return the element type of weights and KV cache */
    public DataType dataType() {
        return dtype.equals("float16") ? DataType.FLOAT16 : DataType.FLOAT32;
    }

    /** @return the DJL device */
    public Device djlDevice() {
        return device.equals("gpu") ? Device.gpu() : Device.cpu();
    }
}
