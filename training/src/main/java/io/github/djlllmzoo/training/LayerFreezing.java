package io.github.djlllmzoo.training;

import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.DecoderLayer;
import io.github.djlllmzoo.blocks.Embedding;
import io.github.djlllmzoo.blocks.LoraAdapter;
import java.util.List;
import java.util.Map;

/**
 * Chooses which parameters of a causal LM train, through DJL's {@link Parameter#freeze}: all of
 * them; all but the embeddings; or only the last {@code N} decoder layers plus the final norm and
 * an untied LM head (the embeddings, and so a tied head, stay frozen); or none, for training a
 * LoRA adapter.
 */
public final class LayerFreezing {

    /** {@code trainLastLayers} value that trains every layer. */
    public static final int ALL_LAYERS = -1;

    private LayerFreezing() {}

    /**
     * Freezes and unfreezes the model's parameters.
     *
     * @param model the model
     * @param trainLastLayers {@link #ALL_LAYERS}, or how many of the last decoder layers to train
     *     (0 trains only the final norm and an untied head)
     * @param freezeEmbeddings whether to freeze the embeddings when training all layers
     * @return how many parameter elements will train, and how many there are
     * @throws IllegalArgumentException if {@code trainLastLayers} exceeds the number of layers
     */
    public static Counts apply(CausalLmBlock model, int trainLastLayers, boolean freezeEmbeddings) {
        List<DecoderLayer> layers = model.layers();
        if (trainLastLayers < ALL_LAYERS || trainLastLayers > layers.size()) {
            throw new IllegalArgumentException(
                    "cannot train the last " + trainLastLayers + " layers of a model with " + layers.size());
        }
        model.freezeParameters(false);
        boolean partial = trainLastLayers != ALL_LAYERS;
        for (Block child : model.getChildren().values()) {
            if (child instanceof Embedding && (freezeEmbeddings || partial)) {
                child.freezeParameters(true);
            }
        }
        if (partial) {
            for (DecoderLayer layer : layers.subList(0, layers.size() - trainLastLayers)) {
                layer.freezeParameters(true);
            }
        }
        Map<String, Shape> shapes = model.declaredShapes();
        long trainable = 0;
        long total = 0;
        for (Map.Entry<String, Parameter> e : model.namedParameters().entrySet()) {
            long size = shapes.get(e.getKey()).size();
            total += size;
            if (e.getValue().requiresGradient()) {
                trainable += size;
            }
        }
        return new Counts(trainable, total);
    }

    /**
     * Freezes every parameter of the model, for training only an adapter's.
     *
     * @param model the model
     * @param adapter the adapter that trains
     * @return the adapter's parameter elements, and those of model and adapter together
     */
    public static Counts onlyAdapter(CausalLmBlock model, LoraAdapter adapter) {
        model.freezeParameters(true);
        long trainable = 0;
        for (Shape shape : adapter.declaredShapes().values()) {
            trainable += shape.size();
        }
        long total = trainable;
        for (Shape shape : model.declaredShapes().values()) {
            total += shape.size();
        }
        return new Counts(trainable, total);
    }

    /**
     * Parameter element counts.
     *
     * @param trainable elements that receive updates
     * @param total all elements
     */
    public record Counts(long trainable, long total) {}
}
