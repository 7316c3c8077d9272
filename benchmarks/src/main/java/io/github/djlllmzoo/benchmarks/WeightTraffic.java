package io.github.djlllmzoo.benchmarks;

import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.ConfiguredBlock;
import io.github.djlllmzoo.blocks.Embedding;
import java.util.HashSet;
import java.util.Map;
import java.util.Set;

/**
 * What one decode step does with the weights. It reads every parameter once, except embedding
 * tables, of which a step reads only the rows of its tokens, unless the table is also the (tied) LM
 * head, which reads all of it; a compressed weight is read once as its codes and scales (a
 * compressed lookup table, its rows' codes and scales); and its matrix products do one multiply-add per matrix element and
 * sequence.
 */
public final class WeightTraffic {

    private WeightTraffic() {}

    /**
     * @param model the model, its parameters initialized or loaded
     * @param batchSize sequences per decode step
     * @return bytes of weights read per decode step
     */
    public static long bytesPerStep(CausalLmBlock model, int batchSize) {
        Set<Parameter> lookups = lookupTables(model);
        Map<Parameter, CompressedWeight> compressed = model.compressedWeights();
        long total = 0;
        for (Parameter p : model.namedParameters().values()) {
            CompressedWeight c = compressed.get(p);
            if (c != null) {
                total += lookups.contains(p) ? batchSize * c.rowBytes() : c.bytes();
                continue;
            }
            Shape shape = p.getArray().getShape();
            long elementBytes = p.getArray().getDataType().getNumOfBytes();
            if (lookups.contains(p)) {
                total += batchSize * shape.size(1) * elementBytes; // one row per token
            } else {
                total += shape.size() * elementBytes;
            }
        }
        return total;
    }

    /**
     * @param model the model, its parameters initialized or loaded
     * @return bytes the model holds for its weights: parameter arrays and compressed weights
     */
    public static long residentBytes(CausalLmBlock model) {
        Map<Parameter, CompressedWeight> compressed = model.compressedWeights();
        long total = 0;
        for (Parameter p : model.namedParameters().values()) {
            total += compressed.containsKey(p)
                    ? compressed.get(p).bytes()
                    : p.getArray().getShape().size() * p.getArray().getDataType().getNumOfBytes();
        }
        return total;
    }

    /**
     * The multiply-adds of a decode step's matrix products: every matrix weight (the projections
     * and the LM head) times each sequence's one token. Embedding lookups, norms, biases and the
     * attention over the cache are not counted.
     *
     * @param model the model, its parameters initialized or loaded
     * @param batchSize sequences per decode step
     * @return multiply-adds per decode step
     */
    public static long multiplyAddsPerStep(CausalLmBlock model, int batchSize) {
        Set<Parameter> lookups = lookupTables(model);
        Map<Parameter, CompressedWeight> compressed = model.compressedWeights();
        long total = 0;
        for (Parameter p : model.namedParameters().values()) {
            if (compressed.containsKey(p)) {
                if (!lookups.contains(p)) {
                    total += batchSize * (long) compressed.get(p).outFeatures() * compressed.get(p).inFeatures();
                }
                continue;
            }
            Shape shape = p.getArray().getShape();
            if (shape.dimension() == 2 && !lookups.contains(p)) {
                total += batchSize * shape.size();
            }
        }
        return total;
    }

    /** The embedding tables a step only looks rows up in: all but a table tied to the LM head. */
    private static Set<Parameter> lookupTables(CausalLmBlock model) {
        Set<Parameter> tables = new HashSet<>();
        collectEmbeddingTables(model, tables);
        if (model.config().tieWordEmbeddings()) {
            int vocab = model.config().vocabSize();
            Map<String, Shape> shapes = model.declaredShapes();
            Set<Parameter> tied = new HashSet<>();
            model.namedParameters().forEach((name, p) -> {
                if (tables.contains(p) && shapes.get(name).get(0) == vocab) {
                    tied.add(p);
                }
            });
            tables.removeAll(tied);
        }
        return tables;
    }

    private static void collectEmbeddingTables(Block block, Set<Parameter> out) {
        if (block instanceof Embedding) {
            out.add(((Embedding) block).weight());
        }
        for (Block child : block.getChildren().values()) {
            if (child instanceof ConfiguredBlock) {
                collectEmbeddingTables(child, out);
            }
        }
    }
}
