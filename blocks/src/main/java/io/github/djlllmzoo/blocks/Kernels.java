package io.github.djlllmzoo.blocks;

import ai.djl.Device;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import java.util.Optional;
import java.util.ServiceLoader;
import java.util.Set;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The operations of a forward pass that have faster implementations than the engine's plain
 * NDArray calls: the projections, attention, the norms, the rotary embedding and the MLP's
 * activation (each several engine calls, whose fixed cost is a decode step's time at its few
 * rows), the gated MLP's projections with it, and the end of a decode step. Blocks call these and
 * never a kernel directly, as Hugging Face's attention layers call the function {@code
 * attn_implementation} names in {@code ALL_ATTENTION_FUNCTIONS}, and Jlama's layers the {@code
 * TensorOperations} its provider picked for the machine.
 *
 * <p>{@link EngineKernels} is the reference: the engine's operations, on any device, type and
 * engine, recording gradients in training. Other implementations come from {@link
 * KernelsProvider}s that {@link ServiceLoader} finds (the {@code cpu-kernels} module's, for
 * PyTorch on the CPU). A model chooses once, the first time it runs, from its parameters' engine,
 * device and element type ({@link #forModel}), and every block of the model computes with that
 * choice ({@link ConfiguredBlock#kernels()}); nothing re-decides it per call. Within an
 * implementation each call still checks whether its kernel can take these arrays (their shapes,
 * layout, a training pass) and takes the reference's operations where it cannot; its results agree
 * with the reference's to float rounding.
 *
 * <p>Compressed weights (int8 or bf16 held as raw bits) come in behind the same methods: {@link
 * #project}, {@link #projectPair} and {@link #projectAll} take the block's {@link ProjectionWeight}, not an array, so an
 * implementation with products for such a weight reads its bits from the holder, and the
 * reference asks the holder for the float array.
 */
public interface Kernels {

    /**
     * An affine projection: {@code x @ weight^T + bias} for an (out, in) weight, {@code x @ weight
     * + bias} for an (in, out) one, as {@code weight.layout()} says.
     *
     * @param x input (..., in); the result is attached to its manager
     * @param weight the block's weight and bias
     * @param store the parameter store, or {@code null} to use the parameters' own arrays
     * @param training whether this is a training pass
     * @return (..., out)
     */
    NDArray project(NDArray x, ProjectionWeight weight, ParameterStore store, boolean training);

    /**
     * Two projections of the same input (SwiGLU's gate and up, attention's key and value), which an
     * implementation may compute at once.
     *
     * @param x input (..., in); the results are attached to its manager
     * @param first a projection
     * @param second another projection of the same input
     * @param store the parameter store, or {@code null}
     * @param training whether this is a training pass
     * @return {@code first(x)} and {@code second(x)}
     */
    NDArray[] projectPair(
            NDArray x, ProjectionWeight first, ProjectionWeight second, ParameterStore store, boolean training);

    /**
     * Projections of the same input (attention's query, key and value), which an implementation
     * may compute at once; two are {@link #projectPair}'s. The reference computes each with {@link
     * #project}.
     *
     * @param x input (..., in); the results are attached to its manager
     * @param weights the projections
     * @param store the parameter store, or {@code null}
     * @param training whether this is a training pass
     * @return {@code weights[i](x)} in the order of the weights
     */
    default NDArray[] projectAll(NDArray x, ProjectionWeight[] weights, ParameterStore store, boolean training) {
        if (weights.length == 2) {
            return projectPair(x, weights[0], weights[1], store, training);
        }
        NDArray[] out = new NDArray[weights.length];
        for (int i = 0; i < weights.length; i++) {
            out[i] = project(x, weights[i], store, training);
        }
        return out;
    }

    /**
     * {@code softmax(q k^T / sqrt(D) + mask) v}, grouped-query where {@code H > H_kv}, over keys and
     * values from the KV cache ({@link KvCache#update}, a decode step's among them) or a cache-free
     * pass ({@link KeyValues#of}).
     *
     * @param q queries (B, H, T, D); the result is attached to its manager
     * @param kv keys and values (B, H_kv, S, D), H divisible by H_kv
     * @param mask additive mask broadcastable to (B, 1, T, S), or {@code null}
     * @param dropout dropout rate on the attention probabilities (training only)
     * @param training whether this is a training pass
     * @return the attended values (B, H, T, D)
     */
    default NDArray attend(NDArray q, KeyValues kv, NDArray mask, float dropout, boolean training) {
        return attend(q, kv, mask, AttentionScores.standard(q.getShape().get(3)), dropout, training);
    }

    /**
     * {@code softmax(cap(q k^T * scale) + mask) v}: {@link #attend(NDArray, KeyValues, NDArray,
     * float, boolean)} with the scores a family computes its own way (Gemma's {@code
     * query_pre_attn_scalar} and soft-capping).
     *
     * @param q queries (B, H, T, D); the result is attached to its manager
     * @param kv keys and values (B, H_kv, S, D), H divisible by H_kv
     * @param mask additive mask broadcastable to (B, 1, T, S), or {@code null}
     * @param scores how the products {@code q·k} become scores
     * @param dropout dropout rate on the attention probabilities (training only)
     * @param training whether this is a training pass
     * @return the attended values (B, H, T, D)
     */
    NDArray attend(
            NDArray q, KeyValues kv, NDArray mask, AttentionScores scores, float dropout, boolean training);

    /**
     * Root-mean-square normalization over the last axis: {@code x * rsqrt(mean(x^2) + eps) *
     * weight}, or {@code * (1 + weight)} with {@code unitOffset} (Gemma), the statistics in float32
     * for half-precision inputs ({@link RmsNorm}).
     *
     * @param x input (..., W); the result is attached to its manager
     * @param weight the scale (W)
     * @param eps the epsilon added to the mean square
     * @param unitOffset whether the scale is {@code 1 + weight}
     * @param training whether this is a training pass
     * @return (..., W), of {@code x}'s type
     */
    NDArray rmsNorm(NDArray x, NDArray weight, float eps, boolean unitOffset, boolean training);

    /**
     * Layer normalization over the last axis: {@code (x - mean) / sqrt(var + eps) * weight + bias},
     * {@code var} the biased variance ({@link LayerNorm}, GPT-2's).
     *
     * @param x input (..., W); the result is attached to its manager
     * @param weight the scale (W)
     * @param bias the shift (W)
     * @param eps the epsilon added to the variance
     * @param training whether this is a training pass
     * @return (..., W)
     */
    NDArray layerNorm(NDArray x, NDArray weight, NDArray bias, float eps, boolean training);

    /**
     * Rotates query and key heads by the rotary embedding ({@link RotaryEmbedding#rotate}, each).
     *
     * @param q queries (B, H, T, D); the results are attached to their managers; the caller must
     *     not read {@code q} and {@code k} afterwards (they may be the results, rotated in place)
     * @param k keys (B, H_kv, T, D)
     * @param cosSin the factors {@link RotaryEmbedding#cosSin} gathered for these positions
     * @param training whether this is a training pass
     * @return the rotated queries and keys
     */
    NDArray[] rotate(NDArray q, NDArray k, NDList cosSin, boolean training);

    /**
     * The MLP's activation, {@code act(gate) * up} (a gated MLP) or {@code act(gate)} ({@code up}
     * null: GPT-2), with {@link Activations}' functions.
     *
     * @param gate the pre-activation (..., I); the result is attached to its manager; the caller
     *     must not read it afterwards (it may be the result, updated in place)
     * @param up the up projection (..., I), or {@code null}
     * @param activation the activation
     * @param training whether this is a training pass
     * @return (..., I)
     */
    NDArray activate(NDArray gate, NDArray up, HiddenActivation activation, boolean training);

    /**
     * The first half of a gated MLP, {@code act(gate(x)) * up(x)}: {@link #projectPair} and {@link
     * #activate} in one call, which an implementation may compute as one product whose columns
     * come back activated, with no gate and up arrays between them.
     *
     * @param x input (..., in); the result is attached to its manager
     * @param gate the gate projection (I, in)
     * @param up the up projection (I, in)
     * @param activation the gate's activation
     * @param store the parameter store, or {@code null}
     * @param training whether this is a training pass
     * @return (..., I)
     */
    default NDArray gatedProject(
            NDArray x,
            ProjectionWeight gate,
            ProjectionWeight up,
            HiddenActivation activation,
            ParameterStore store,
            boolean training) {
        NDArray[] both = projectPair(x, gate, up, store, training); // 2 x (..., I)
        return activate(both[0], both[1], activation, training);
    }

    /**
     * {@link #projectAll} of {@code rmsNorm(x)}: a pre-norm layer's first products (attention's
     * query, key and value), which an implementation may compute with the norm inside the products'
     * hand-over and no array for the normed input. The reference norms, then projects.
     *
     * @param x input (..., in), the residual stream before its norm; the results are attached to
     *     its manager
     * @param normWeight the norm's scale (in)
     * @param eps the epsilon added to the mean square
     * @param unitOffset whether the scale is {@code 1 + normWeight} (Gemma)
     * @param weights the projections
     * @param shapes the shape of each result: its elements in the order of (..., out_i), e.g. a
     *     decode step's heads (B, H, 1, D), which an implementation may make the result in, where
     *     the reference reshapes it
     * @param store the parameter store, or {@code null}
     * @param training whether this is a training pass
     * @return {@code weights[i](rmsNorm(x))} in the order of the weights, each of {@code shapes[i]}
     */
    default NDArray[] normedProjectAll(
            NDArray x,
            NDArray normWeight,
            float eps,
            boolean unitOffset,
            ProjectionWeight[] weights,
            Shape[] shapes,
            ParameterStore store,
            boolean training) {
        NDArray[] out = projectAll(rmsNorm(x, normWeight, eps, unitOffset, training), weights, store, training);
        for (int i = 0; i < out.length; i++) {
            out[i] = out[i].getShape().equals(shapes[i]) ? out[i] : out[i].reshape(shapes[i]);
        }
        return out;
    }

    /**
     * {@link #normedProjectAll} of a decode step's attention, queries and keys then rotated by the
     * rotary embedding ({@link #rotate}): an implementation may rotate them within the products'
     * results. The reference projects, then rotates.
     *
     * @param x input (B, 1, in), the residual stream before its norm; the results are attached to
     *     its manager
     * @param normWeight the norm's scale (in)
     * @param eps the epsilon added to the mean square
     * @param unitOffset whether the scale is {@code 1 + normWeight} (Gemma)
     * @param weights the query, key and value projections
     * @param shapes the heads of each: (B, H, 1, D), (B, H_kv, 1, D), (B, H_kv, 1, D)
     * @param cosSin the factors {@link RotaryEmbedding#cosSin} gathered for this position
     * @param store the parameter store, or {@code null}
     * @param training whether this is a training pass
     * @return the rotated queries and keys, and the values, of {@code shapes}
     */
    default NDArray[] normedProjectRotate(
            NDArray x,
            NDArray normWeight,
            float eps,
            boolean unitOffset,
            ProjectionWeight[] weights,
            Shape[] shapes,
            NDList cosSin,
            ParameterStore store,
            boolean training) {
        NDArray[] qkv = normedProjectAll(x, normWeight, eps, unitOffset, weights, shapes, store, training);
        NDArray[] rotated = rotate(qkv[0], qkv[1], cosSin, training);
        return new NDArray[] {rotated[0], rotated[1], qkv[2]};
    }

    /**
     * {@link #gatedProject} of {@code rmsNorm(x)}: a pre-norm layer's gated MLP, which an
     * implementation may compute with the norm inside the products' hand-over and no array for the
     * normed input. The reference norms, then projects.
     *
     * @param x input (..., in), the residual stream before its norm; the result is attached to its
     *     manager
     * @param normWeight the norm's scale (in)
     * @param eps the epsilon added to the mean square
     * @param unitOffset whether the scale is {@code 1 + normWeight} (Gemma)
     * @param gate the gate projection (I, in)
     * @param up the up projection (I, in)
     * @param activation the gate's activation
     * @param store the parameter store, or {@code null}
     * @param training whether this is a training pass
     * @return (..., I)
     */
    default NDArray normedGatedProject(
            NDArray x,
            NDArray normWeight,
            float eps,
            boolean unitOffset,
            ProjectionWeight gate,
            ProjectionWeight up,
            HiddenActivation activation,
            ParameterStore store,
            boolean training) {
        return gatedProject(rmsNorm(x, normWeight, eps, unitOffset, training), gate, up, activation, store, training);
    }

    /**
     * A projection added to the residual stream, {@code residual + project(x, weight)} (a layer's
     * last projection and its skip connection), which an implementation may compute by adding the
     * product straight into {@code residual}'s memory.
     *
     * @param x input (..., in); the result is attached to its manager
     * @param weight the projection, as {@link #project} takes it
     * @param residual the residual stream (..., out); the caller must not read it afterwards (it
     *     may be the result, updated in place)
     * @param store the parameter store, or {@code null}
     * @param training whether this is a training pass
     * @return (..., out)
     */
    default NDArray projectAdd(
            NDArray x, ProjectionWeight weight, NDArray residual, ParameterStore store, boolean training) {
        // the fresh product takes the sum: autograd keeps the residual it saved for the norm
        return project(x, weight, store, training).addi(residual);
    }

    /**
     * One projection's LoRA update for a batch whose rows each have an adapter of their own: for
     * each row {@code b} of the batch, at each of its positions, {@code y += scaling_b (x A_b^T)
     * B_b^T} over its own adapter's rank columns only (nothing for a row whose adapter does not adapt
     * the projection). Each row's result is what it is alone, at any batch size. An implementation may
     * add the update straight into {@code y}'s memory; the reference is the engine's products over
     * the concatenated pairs with the other adapters' columns masked out per row: {@code y + ((x A^T)
     * * mask) B^T}, four engine calls. Inference only (a per-row selection is never trained).
     *
     * @param x the projection's input (B, ..., in)
     * @param y the frozen projection's output (B, ..., out); the caller must not read it afterwards
     *     (it may be the result, updated in place)
     * @param pairs the pairs and each row's adapter columns
     * @return (B, ..., out), {@code y}'s shape
     */
    default NDArray loraUpdate(NDArray x, NDArray y, LoraRowPairs pairs) {
        Shape shape = x.getShape();
        boolean rows3 = shape.dimension() == 3; // the masks are (B, 1, R): other ranks pass as (B, T, in)
        NDArray in = rows3 ? x : x.reshape(pairs.rows(), -1, shape.get(shape.dimension() - 1));
        NDArray down = in.matMul(pairs.aTransposed()).muli(pairs.mask()); // (B, T, R), other adapters' columns zero
        NDArray delta = down.matMul(pairs.bTransposed()); // (B, T, out)
        return y.add(rows3 ? delta : delta.reshape(y.getShape())); // (B, ..., out)
    }

    /**
     * The greedy pick of a step: each row's index of its largest logit, the first on ties, a NaN
     * counting as the largest (the engine's {@code argMax}), read out to Java. An implementation may
     * scan the logits' memory in place, with no index array between; the reference is the engine's
     * {@code argMax(-1)} and its copy out.
     *
     * @param logits (..., V), e.g. a decode step's (B, 1, V)
     * @return each row's index, in row-major order of the leading axes
     */
    default long[] argMax(NDArray logits) {
        try (NDArray picked = logits.argMax(-1)) {
            return picked.toLongArray();
        }
    }

    /**
     * Ends a decode step: closes its manager, now or off the calling thread. Use it in place of
     * {@code close()} once everything the step produced has been copied out.
     *
     * @param step the manager of a finished step; the caller must not use it or its arrays again
     */
    void closeStep(NDManager step);

    /**
     * Whether a prompt's prefill computes every position the same bit for bit however its tokens are
     * split into passes of at least {@code minPassRows} rows each, for weights held in {@code
     * formats}: every row of each product depends on that row alone, and attention reads a
     * position's earlier keys and values in the same order from the cache or the pass. A scheduler may
     * then stack several chunks of a prompt into one pass and still reuse any chunk boundary of it
     * exactly (prefix caching). The engine's own products (MKL's GEMM) block their sums by the row
     * count, so the default is {@code false}.
     *
     * @param formats the formats the model's weight matrices are held in
     * @param minPassRows the fewest rows a pass of the split has
     * @return whether such splits give the same values as one pass
     */
    default boolean prefillSplitsExactly(Set<WeightFormat> formats, int minPassRows) {
        return false;
    }

    /**
     * The kernels for a model: those of the first {@link KernelsProvider} that applies, else the
     * engine's.
     *
     * @param engine the engine that holds the model's parameters
     * @param device the device they are on
     * @param dataType their element type
     * @return the kernels
     */
    static Kernels forModel(Engine engine, Device device, DataType dataType) {
        Logger log = LoggerFactory.getLogger(Kernels.class);
        for (KernelsProvider provider : ServiceLoader.load(KernelsProvider.class, Kernels.class.getClassLoader())) {
            Optional<Kernels> kernels = provider.kernels(engine, device, dataType);
            if (kernels.isPresent()) {
                log.debug("{} {} on {}: {}", engine.getEngineName(), dataType, device, kernels.get());
                return kernels.get();
            }
        }
        log.debug("{} {} on {}: the engine's operations", engine.getEngineName(), dataType, device);
        return EngineKernels.INSTANCE;
    }
}
