package io.github.djlllmzoo.cli;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.Float16Overflow;
import io.github.djlllmzoo.blocks.KvCacheDtype;
import io.github.djlllmzoo.blocks.WeightFormat;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParameterException;
import picocli.CommandLine.Spec;

/**
 * Where a model runs, the form of its weights and of its KV cache: {@code --device}, {@code --dtype},
 * {@code --kv-cache-dtype}, {@code --allow-float16-overflow}.
 */
final class ComputeOptions {

    @Spec(Spec.Target.MIXEE)
    CommandSpec spec;

    @Option(names = "--device", defaultValue = "cpu", paramLabel = "cpu|gpu", description = "Where to run (default: ${DEFAULT-VALUE}).")
    String device;

    @Option(
            names = "--dtype",
            paramLabel = "float32|bfloat16|float16|int8|int4|int6|q4_k",
            description = "Form of the weights (default: float32; a GGUF file's nearest: F16 float16, Q4_K q4_k,"
                    + " Q8_0/Q4_0/Q5_K/Q6_K int8). On the CPU bfloat16, float16 and int8"
                    + " (per 32 inputs, as llama.cpp's Q8_0) hold the projection weights compressed and compute in"
                    + " float32, for inference only, as do int4 (Q4_0's layout, two codes a byte), int6 (6.5"
                    + " bits a weight) and q4_k (Q4_K super-blocks, 4.5 bits a weight, its finer weights in int6 as"
                    + " llama.cpp's Q4_K_M holds them in Q6_K); with --device"
                    + " gpu float16 computes in half precision.")
    String dtype;

    @Option(
            names = KvCacheDtype.OPTION,
            paramLabel = "float32|float16",
            description = "Element type of the KV cache's keys and values (default: the compute type, float32 on"
                    + " the CPU). float16 rounds each key and value to the nearest half as it is stored (llama.cpp's"
                    + " --cache-type-k/v f16, vLLM's kv_cache_dtype): half the bytes a decode step reads from the"
                    + " cache, twice the tokens in serve's KV pool for the same memory.")
    String kvCacheDtype;

    @Option(
            names = "--allow-float16-overflow",
            description = "Compute Gemma 2 and 3 in float16 when --dtype float16 asks for it on a GPU. Their"
                    + " activations exceed float16's range on real checkpoints (NaN logits), so by default they"
                    + " compute in float32 there, with a warning.")
    boolean allowFloat16Overflow;

    /** @return whether {@code --dtype} was given */
    boolean dtypeGiven() {
        return dtype != null;
    }

    /**
     * @return the device, checked against what DJL's PyTorch engine sees
     * @throws ParameterException for an unknown device, or {@code gpu} when the engine sees none
     */
    Device device() {
        return parseDevice(spec, device);
    }

    /**
     * Parses a {@code --device} value for commands that take it without this mixin.
     *
     * @param spec the command, for the usage error
     * @param device "cpu" or "gpu"
     * @return the device, checked against what DJL's PyTorch engine sees
     * @throws ParameterException for an unknown device, or {@code gpu} when the engine sees none
     */
    static Device parseDevice(CommandSpec spec, String device) {
        switch (device) {
            case "cpu":
                return Device.cpu();
            case "gpu":
                if (Engine.getEngine("PyTorch").getGpuCount() == 0) {
                    throw new ParameterException(
                            spec.commandLine(),
                            "--device gpu: DJL's PyTorch engine sees no GPU (it needs CUDA native"
                                    + " libraries; see the README, section CUDA)");
                }
                return Device.gpu();
            default:
                throw new ParameterException(
                        spec.commandLine(), "--device must be cpu or gpu, not '" + device + "'");
        }
    }

    /**
     * @return the element type of the computation and the KV cache on {@link #device}
     * @throws ParameterException as {@link #dataType(Device)}, or as {@link #device}
     */
    DataType dataType() {
        return dataType(device());
    }

    /**
     * The element type on a given device: float32 on the CPU (whatever form {@link #weightFormat}
     * holds the weights in), {@code --dtype} float32 or float16 on a GPU. Takes the device rather
     * than asking the engine, so the rule is checked without a GPU.
     *
     * @param target where the model runs
     * @return the element type of the computation and the KV cache
     * @throws ParameterException for an unknown form, int8 on a GPU, or bfloat16 on a GPU, which DJL
     *     0.35.1 cannot hold (refused with its own reason)
     */
    DataType dataType(Device target) {
        WeightFormat format = requestedFormat();
        if (!target.isGpu()) {
            return DataType.FLOAT32;
        }
        switch (format) {
            case FLOAT32:
                return DataType.FLOAT32;
            case FLOAT16:
                return DataType.FLOAT16;
            case BFLOAT16:
                // DJL 0.35.1's JNI maps no DJL type to torch.bfloat16: creating or casting to it
                // ends in std::terminate, which kills the JVM, on every device.
                throw new ParameterException(
                        spec.commandLine(),
                        "--dtype bfloat16 with --device gpu: DJL 0.35.1's PyTorch engine aborts the JVM on"
                                + " bfloat16 tensors (its JNI has no bfloat16 mapping); use float16 there, or"
                                + " bfloat16 on the CPU (compressed weights)");
            default:
                throw new ParameterException(spec.commandLine(),
                        "--dtype " + format.dtypeName() + " is for the CPU (compressed weights), not --device gpu");
        }
    }

    /**
     * @return the form of the projection weights on {@link #device}
     * @throws ParameterException as {@link #weightFormat(Device)}, or as {@link #device}
     */
    WeightFormat weightFormat() {
        return weightFormat(device());
    }

    /**
     * The form of the projection weights on a given device: {@code --dtype} on the CPU (compressed
     * weights computed in float32); on a GPU dense arrays of {@link #dataType(Device)}, which
     * {@link WeightFormat#FLOAT32} means ("as the data type").
     *
     * @param target where the model runs
     * @return the form of the projection weights
     * @throws ParameterException for an unknown form
     */
    WeightFormat weightFormat(Device target) {
        WeightFormat format = requestedFormat();
        return target.isGpu() ? WeightFormat.FLOAT32 : format;
    }

    /**
     * @return {@code --kv-cache-dtype}, or {@code null} where not given (the compute type)
     * @throws ParameterException naming the option for a value other than float32 or float16
     */
    KvCacheDtype kvCacheDtype() {
        try {
            return kvCacheDtype == null ? null : KvCacheDtype.parse(kvCacheDtype, KvCacheDtype.OPTION);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), e.getMessage());
        }
    }

    /**
     * Makes a loaded model's caches store keys and values as {@code --kv-cache-dtype} says.
     *
     * @param block the model
     * @return the model
     */
    CausalLmBlock applyKvCacheDtype(CausalLmBlock block) {
        block.setKvCacheDtype(kvCacheDtype());
        return block;
    }

    /** @return whether Gemma 2 and 3 may compute in float16 ({@code --allow-float16-overflow}) */
    Float16Overflow float16Overflow() {
        return allowFloat16Overflow ? Float16Overflow.ALLOW : Float16Overflow.GUARD;
    }

    /** {@code --dtype} parsed, whatever the device. */
    private WeightFormat requestedFormat() {
        try {
            return dtype == null ? WeightFormat.FLOAT32 : WeightFormat.parse(dtype);
        } catch (IllegalArgumentException e) {
            throw new ParameterException(spec.commandLine(), "--" + e.getMessage());
        }
    }
}
