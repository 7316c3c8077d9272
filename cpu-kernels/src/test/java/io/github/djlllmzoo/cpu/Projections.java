package io.github.djlllmzoo.cpu;

import ai.djl.ndarray.NDArray;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;

/** Projection weights over given arrays, as a block would hold them. */
final class Projections {

    private Projections() {}

    /**
     * @param layout how {@code weight} is stored
     * @param weight the weight's array
     * @param bias the bias's array, or {@code null}
     * @return a holder whose parameters have these arrays
     */
    static ProjectionWeight of(Layout layout, NDArray weight, NDArray bias) {
        return new ProjectionWeight(layout, parameter("weight", Parameter.Type.WEIGHT, weight),
                bias == null ? null : parameter("bias", Parameter.Type.BIAS, bias));
    }

    private static Parameter parameter(String name, Parameter.Type type, NDArray array) {
        Parameter parameter = Parameter.builder().setName(name).setType(type).build();
        parameter.setArray(array);
        return parameter;
    }
}
