package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;

/** The activation functions the supported families use, with Hugging Face's names. */
public final class Activations {

    private static final double SQRT_2_OVER_PI = Math.sqrt(2.0 / Math.PI);

    private Activations() {}

    /**
     * GPT-2's {@code gelu_new}: {@code 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))}.
     *
     * @param x the input; results are attached to its manager
     * @return the activation
     */
    public static NDArray geluNew(NDArray x) {
        // In-place steps only where autograd keeps no copy of the overwritten value.
        NDArray inner = x.mul(x).mul(x).muli(0.044715).addi(x).muli(SQRT_2_OVER_PI);
        return inner.tanh().add(1).mul(x).muli(0.5);
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
