package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import java.nio.ByteBuffer;

/**
 * A decode step's elementwise operations, each one call of a native AVX-512 kernel ({@code
 * cpu-kernels/src/main/native/decode_ops.c}) writing one output: RMSNorm, the rotary embedding of
 * query or key heads, and the MLP's activation (times the up projection). The engine computes each
 * as a chain of five or six calls with an array each, whose fixed cost, not the arithmetic, is their
 * time at a decode step's few rows (docs/PERFORMANCE.md, "A decode step's elementwise operations").
 *
 * <p>Used for inference where {@link NativeKernels} are loaded, on float32 CPU arrays held densely
 * of at most {@link #MAX_ELEMENTS} elements (a decode step's, not a long prefill's, which the
 * engine's operations spread over the cores), unless {@code -Dllmzoo.decodeOps=false}; the results
 * agree with the engine's to float rounding. Inference and the switch are the caller's to check.
 */
final class DecodeOps {

    /** The switch that turns the kernels off: {@code -Dllmzoo.decodeOps=false}. */
    static final String SWITCH = "llmzoo.decodeOps";

    /** The largest input the kernels take: eight rows of a 16384-wide MLP. */
    static final long MAX_ELEMENTS = 8L * 16384;

    private DecodeOps() {}

    /**
     * Whether {@link #rmsNorm} takes these arrays: float32, dense, on the CPU, a weight as wide as
     * {@code x}'s last axis, no more than {@link #MAX_ELEMENTS}.
     *
     * @param x input (..., W)
     * @param weight the scale
     * @return whether the kernel computes the norm
     */
    static boolean takesRmsNorm(NDArray x, NDArray weight) {
        Shape shape = x.getShape();
        return NativeKernels.loaded()
                && shape.dimension() >= 1
                && shape.size() > 0
                && shape.size() <= MAX_ELEMENTS
                && weight.getShape().dimension() == 1
                && weight.getShape().get(0) == shape.get(shape.dimension() - 1)
                && NativeKernels.denseFloat32OnCpu(x)
                && NativeKernels.denseFloat32OnCpu(weight);
    }

    /**
     * {@code x * rsqrt(mean(x^2) + eps) * weight} (or {@code * (1 + weight)}) over the last axis.
     *
     * @param x input (..., W) that {@link #takesRmsNorm} accepts
     * @param weight (W)
     * @param eps the epsilon added to the mean square
     * @param unitOffset whether the scale is {@code 1 + weight}
     * @return (..., W), in {@code x}'s manager
     */
    static NDArray rmsNorm(NDArray x, NDArray weight, float eps, boolean unitOffset) {
        Shape shape = x.getShape();
        int width = Math.toIntExact(shape.get(shape.dimension() - 1));
        NDArray out = x.getManager().create(shape, DataType.FLOAT32);
        rmsNorm(NativeKernels.buffer(x), NativeKernels.buffer(weight), NativeKernels.buffer(out),
                Math.toIntExact(shape.size() / width), width, eps, unitOffset);
        return out;
    }

    /**
     * Whether {@link #rotate} takes these heads and factors: float32, dense, on the CPU, heads (B,
     * H, T, D) of no more than {@link #MAX_ELEMENTS}, factors (B or 1, 1, T, D).
     *
     * @param x heads (B, H, T, D)
     * @param cosSin the factors of {@code RotaryEmbedding.cosSin}
     * @return whether the kernel rotates them
     */
    static boolean takesRotation(NDArray x, NDList cosSin) {
        Shape heads = x.getShape();
        if (!NativeKernels.loaded() || heads.dimension() != 4 || heads.size() == 0
                || heads.size() > MAX_ELEMENTS
                || heads.get(3) % 2 != 0) {
            return false;
        }
        for (NDArray factor : cosSin) {
            Shape f = factor.getShape();
            if (f.dimension() != 4
                    || (f.get(0) != 1 && f.get(0) != heads.get(0))
                    || f.get(1) != 1
                    || f.get(2) != heads.get(2)
                    || f.get(3) != heads.get(3)
                    || !NativeKernels.denseFloat32OnCpu(factor)) {
                return false;
            }
        }
        return NativeKernels.denseFloat32OnCpu(x);
    }

    /**
     * {@code x * cos + rotate_half(x) * sin}, as {@code RotaryEmbedding.rotate} computes it.
     *
     * @param x heads (B, H, T, D) that {@link #takesRotation} accepts
     * @param cosSin {@code cat(cos, cos)} and {@code cat(-sin, sin)}, (B or 1, 1, T, D)
     * @return the rotated heads (B, H, T, D), in {@code x}'s manager
     */
    static NDArray rotate(NDArray x, NDList cosSin) {
        Shape heads = x.getShape();
        NDArray out = x.getManager().create(heads, DataType.FLOAT32);
        rotate(NativeKernels.buffer(x), NativeKernels.buffer(cosSin.get(0)), NativeKernels.buffer(cosSin.get(1)),
                NativeKernels.buffer(out), Math.toIntExact(heads.get(0)), Math.toIntExact(heads.get(1)),
                Math.toIntExact(heads.get(2)), Math.toIntExact(heads.get(3)),
                cosSin.get(0).getShape().get(0) != 1);
        return out;
    }

    /**
     * Whether {@link #activate} takes these arrays: float32, dense, on the CPU, of one shape, no
     * more than {@link #MAX_ELEMENTS}.
     *
     * @param gate the pre-activation
     * @param up the up projection, or {@code null}
     * @return whether the kernel computes the activation
     */
    static boolean takesActivation(NDArray gate, NDArray up) {
        return NativeKernels.loaded()
                && gate.size() > 0
                && gate.size() <= MAX_ELEMENTS
                && NativeKernels.denseFloat32OnCpu(gate)
                && (up == null || up.getShape().equals(gate.getShape()) && NativeKernels.denseFloat32OnCpu(up));
    }

    /**
     * {@code act(gate) * up}, or {@code act(gate)} without {@code up}.
     *
     * @param gate the pre-activation that {@link #takesActivation} accepts
     * @param up the up projection, or {@code null}
     * @param activation the activation
     * @return of {@code gate}'s shape, in its manager
     */
    static NDArray activate(NDArray gate, NDArray up, HiddenActivation activation) {
        NDArray out = gate.getManager().create(gate.getShape(), DataType.FLOAT32);
        activate(NativeKernels.buffer(gate), up == null ? null : NativeKernels.buffer(up), NativeKernels.buffer(out),
                gate.size(), code(activation));
        return out;
    }

    /** decode_ops.c's number for an activation. */
    static int code(HiddenActivation activation) {
        return switch (activation) {
            case SILU -> 0;
            case GELU_TANH -> 1;
        };
    }

    private static native void rmsNorm(
            ByteBuffer x, ByteBuffer weight, ByteBuffer out, int rows, int width, float eps, boolean unitOffset);

    private static native void rotate(
            ByteBuffer x, ByteBuffer cos, ByteBuffer sin, ByteBuffer out, int batch, int heads, int positions,
            int headDim, boolean perSequence);

    private static native void activate(ByteBuffer gate, ByteBuffer up, ByteBuffer out, long size, int activation);
}
