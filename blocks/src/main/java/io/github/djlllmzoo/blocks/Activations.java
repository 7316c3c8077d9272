package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;

/** The activation functions the supported families use, with Hugging Face's names. */
public final class Activations {

    private static final double SQRT_2_OVER_PI = Math.sqrt(2.0 / Math.PI);
    private static final double GELU_CUBIC = 0.044715;

    private Activations() {}

    /**
     * GPT-2's {@code gelu_new}, which is Gemma's {@code gelu_pytorch_tanh}: {@code 0.5 x (1 +
     * tanh(sqrt(2/pi) (x + 0.044715 x^3)))}, computed
     * as the identical {@code x sigmoid(2 sqrt(2/pi) x (1 + 0.044715 x^2))} in six engine calls
     * with {@link Scalars} constants.
     *
     * @param x the input; results are attached to its manager
     * @return the activation
     */
    public static NDArray geluNew(NDArray x) {
        // 0.5 (1 + tanh(z)) = sigmoid(2z). In-place steps only where autograd keeps no copy of the
        // overwritten value.
        NDArray twoZ =
                x.square()
                        .muli(Scalars.of(2 * SQRT_2_OVER_PI * GELU_CUBIC, x))
                        .addi(Scalars.of(2 * SQRT_2_OVER_PI, x))
                        .mul(x);
        return twoZ.getNDArrayInternal().sigmoid().mul(x);
    }

    /**
     * SiLU (swish), {@code x * sigmoid(x)}, Llama's {@code hidden_act} "silu".
     *
     * @param x the input; results are attached to its manager
     * @return the activation
     */
    public static NDArray silu(NDArray x) {
        return x.getNDArrayInternal().sigmoid().mul(x);
    }
}
