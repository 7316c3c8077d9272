package io.github.djlllmzoo.training;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.nn.Parameter;
import java.util.Collection;

/**
 * Clipping by the global L2 norm of all gradients, as {@code torch.nn.utils.clip_grad_norm_} and
 * Hugging Face's {@code max_grad_norm}: when the norm exceeds the limit, every gradient is scaled
 * by {@code limit / (norm + 1e-6)}. DJL's own {@code optClipGrad} cannot stand in for it: DJL's
 * PyTorch optimizers clamp each gradient element separately (and only from above).
 */
public final class GradientClipping {

    private static final double EPSILON = 1e-6;

    private GradientClipping() {}

    /**
     * Measures the global gradient norm of the trainable parameters and clips it in place.
     *
     * @param parameters the parameters; those that do not require a gradient are skipped
     * @param maxNorm the limit, or a value {@code <= 0} to only measure
     * @param manager the manager under which a scoped sub-manager holds the temporary arrays
     * @return the norm before clipping
     */
    public static double clipGlobalNorm(Collection<Parameter> parameters, double maxNorm, NDManager manager) {
        try (NDManager local = manager.newSubManager()) {
            NDList grads = new NDList();
            for (Parameter parameter : parameters) {
                if (parameter.requiresGradient()) {
                    NDArray grad = parameter.getArray().getGradient(); // shares the stored gradient
                    grad.attach(local);
                    grads.add(grad);
                }
            }
            if (grads.isEmpty()) {
                return 0;
            }
            NDList squares = new NDList();
            for (NDArray grad : grads) {
                squares.add(grad.square().sum());
            }
            double norm = Math.sqrt(NDArrays.stack(squares).sum().toType(DataType.FLOAT64, false).getDouble());
            if (maxNorm > 0 && norm > maxNorm) {
                double scale = maxNorm / (norm + EPSILON);
                for (NDArray grad : grads) {
                    grad.muli(scale);
                }
            }
            return norm;
        }
    }
}
