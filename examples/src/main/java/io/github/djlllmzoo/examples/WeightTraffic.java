package io.github.djlllmzoo.examples;

import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.blocks.ConfiguredBlock;
import io.github.djlllmzoo.blocks.Embedding;
import java.util.HashSet;
import java.util.Set;

/**
 * The weight bytes one decode step reads: every parameter once, except embedding tables, of which a
 * step reads only the rows of its tokens, unless the table is also the (tied) LM head, which reads
 * all of it.
 */
final class WeightTraffic {

    private WeightTraffic() {}

    /**
     * @param model the model, its parameters initialized or loaded
     * @param batchSize sequences per decode step
     * @return bytes of weights read per decode step
     */
    static long bytesPerStep(CausalLmBlock model, int batchSize) {
        Set<Parameter> tables = new HashSet<>();
        collectEmbeddingTables(model, tables);
        int vocab = model.config().vocabSize();
        boolean tied = model.config().tieWordEmbeddings();
        long total = 0;
        for (Parameter p : model.namedParameters().values()) {
            Shape shape = p.getArray().getShape();
            long elementBytes = p.getArray().getDataType().getNumOfBytes();
            boolean headTable = tied && shape.get(0) == vocab;
            if (tables.contains(p) && !headTable) {
                total += batchSize * shape.size(1) * elementBytes; // one row per token
            } else {
                total += shape.size() * elementBytes;
            }
        }
        return total;
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
