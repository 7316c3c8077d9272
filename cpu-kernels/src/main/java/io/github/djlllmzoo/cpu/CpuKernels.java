package io.github.djlllmzoo.cpu;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.ParameterStore;
import io.github.djlllmzoo.blocks.AttentionScores;
import io.github.djlllmzoo.blocks.CompressedWeight;
import io.github.djlllmzoo.blocks.EngineKernels;
import io.github.djlllmzoo.blocks.KeyValues;
import io.github.djlllmzoo.blocks.Kernels;
import io.github.djlllmzoo.blocks.LoraRowPairs;
import io.github.djlllmzoo.blocks.ProjectionWeight;
import io.github.djlllmzoo.blocks.ProjectionWeight.Layout;
import io.github.djlllmzoo.blocks.ScaledDotProductAttention;
import io.github.djlllmzoo.blocks.WeightFormat;
import io.github.djlllmzoo.blocks.config.HiddenActivation;
import java.nio.ByteBuffer;
import java.util.Set;
import java.util.function.Supplier;

/**
 * The {@link Kernels} of models that PyTorch runs on the CPU ({@link CpuKernelsProvider}): a decode
 * step's (and, on one PyTorch thread, a prefill's) projections split across the cores ({@link
 * SplitProjection}), the products of a few rows by {@link FewRowProduct}'s native kernel, a decode
 * step's attention by {@link DecodeAttention}'s kernel straight from the cache's buffers, a
 * prefill's by {@link PrefillAttention}'s kernel on both cores, other inference attention split across the cores ({@link SplitAttention}), and a finished step's arrays
 * freed by a worker thread ({@link CoreWorkers}); a compressed weight's decode products by {@link
 * CompressedProduct}'s kernel (several of them, as {@link #projectPair} and {@link #projectAll}
 * take, in one hand-over to the cores), its other products (a prefill) by {@link CompressedGemm}'s kernel where the CPU has
 * the format's dot-product instruction, else by the engine's over the weight widened to float32 in
 * one reused buffer ({@link WideningBuffer}); the norms, rotary embedding and MLP activation by
 * {@link DecodeOps}' kernels, one call each (a prefill's split across the cores), GPT-2's LayerNorm
 * too; a prefill's attention by {@link PrefillAttention}; a decode step's gate and up products
 * with their activation, and at 1 to 8 rows its MLP's down product and its attention's output
 * projection each added into the residual stream, in one hand-over each, with a bias where the
 * projection has one ({@link FusedProducts}; GPT-2's (in, out) float32 {@code c_proj} by {@link
 * SplitProjection#matMulAddInto}); a batch's per-row LoRA updates, one native call a projection
 * ({@link LoraUpdate}).
 *
 * <p>Which kernels are on is settled when the instance is made (once per model): the native ones
 * where the library of the instruction set {@link CpuIsa} chose is loaded ({@code -Dllmzoo.cpu.isa=none}:
 * none) and {@code -Dllmzoo.cpu.off} does not list them ({@link KernelSwitches}: besides the kernels,
 * {@code projectAll}: the first of an odd count of products alone and the others in pairs, {@code
 * decodeAttention.writeCache}: a step's new keys and values written by the engine, {@code
 * residualBias}: a projection with a bias, GPT-2's {@code c_proj}, not added into the residual by the
 * kernel, {@code fewRowProduct.fourRows}: one row's product by a wide (in, out) weight one weight row at
 * a time, {@code cpu.dynamicSplit}: one fixed share of a product's columns a core, {@code
 * rotateInPlace}: query and key heads rotated into new arrays, {@code rotatePair}: a decode step's query
 * and key heads rotated in a call each, the rotary factors checked for each, {@code argMax}: a step's
 * greedy pick by the engine's {@code argMax}, {@code normedProducts}: a decode step's
 * norm before its products into an array of its own, {@code compressedProduct.prepared}: an int8 or int4
 * decode product's input quantized again by every core's call, each core one fixed share of the columns).
 * Each call then takes a kernel where it can read the arrays (inference on the CPU, float32 and dense for the native ones,
 * the row counts and shapes each kernel takes) and the engine's operations, as {@link
 * io.github.djlllmzoo.blocks.EngineKernels} computes them, elsewhere.
 */
public final class CpuKernels implements Kernels {

    /**
     * The switch that makes {@link #projectAll} compute the first of an odd count alone and the
     * others in pairs instead of all in one hand-over: {@code -Dllmzoo.cpu.off=projectAll}.
     */
    static final String PROJECT_ALL_SWITCH = "projectAll";

    private final boolean fewRowProduct;
    private final boolean decodeAttention;
    private final boolean compressedProduct = NativeKernels.enabled(CompressedProduct.SWITCH);
    private final boolean compressedGemm = compressedProduct && NativeKernels.enabled(CompressedGemm.SWITCH);
    private final boolean decodeOps = NativeKernels.enabled(DecodeOps.SWITCH);
    private final boolean layerNorm = NativeKernels.enabled(DecodeOps.LAYER_NORM_SWITCH);
    private final boolean placeColumns = NativeKernels.enabled(DecodeOps.COLUMNS_SWITCH);
    private final boolean gatedProduct = NativeKernels.enabled(FusedProducts.GATED_SWITCH);
    private final boolean residualProduct = NativeKernels.enabled(FusedProducts.RESIDUAL_SWITCH);
    /** Whether a projection with a bias (GPT-2's {@code c_proj}) is added into the residual too. */
    private final boolean residualBias = residualProduct && NativeKernels.enabled(FusedProducts.RESIDUAL_BIAS_SWITCH);
    /** Whether one row's product by a wide (in, out) weight reads four weight rows at a time. */
    private final boolean fourRows = NativeKernels.enabled(FewRowProduct.FOUR_ROWS_SWITCH);
    /** Whether {@link #projectAll} hands several products over at once. */
    private final boolean projectAll = NativeKernels.enabled(PROJECT_ALL_SWITCH);
    /** Whether the decode attention kernel writes a step's new keys and values into the cache. */
    private final boolean attentionWritesCache = NativeKernels.enabled(DecodeAttention.WRITE_SWITCH);
    private final boolean prefillAttention = NativeKernels.enabled(PrefillAttention.SWITCH);
    /** Whether dense query and key heads are rotated in place ({@link DecodeOps#rotateInPlace}). */
    private final boolean rotateInPlace = NativeKernels.enabled(DecodeOps.ROTATE_IN_PLACE_SWITCH);
    /** Whether a decode step's query and key heads are rotated in place in one call ({@link DecodeOps#rotatePairInPlace}). */
    private final boolean rotatePair = rotateInPlace && NativeKernels.enabled(DecodeOps.ROTATE_PAIR_SWITCH);
    /** Whether a step's greedy pick scans the logits in place ({@link DecodeOps#argMax}). */
    private final boolean argMax = NativeKernels.enabled(DecodeOps.ARG_MAX_SWITCH);
    /** Whether a norm before a decode step's products is computed into their input ({@link DecodeOps#rmsNormed}). */
    private final boolean normedProducts = NativeKernels.enabled(DecodeOps.NORMED_PRODUCTS_SWITCH);
    /**
     * Whether an int8 or int4 decode product's input is quantized once for all the cores' calls
     * ({@link CompressedProduct#prepare}), its columns then going to whichever core is free.
     */
    private final boolean preparedInput = NativeKernels.enabled(CompressedProduct.PREPARED_SWITCH);
    /** Whether a product's columns go to whichever core is free ({@link CoreWorkers#share}). */
    private final boolean dynamicSplit = NativeKernels.enabled(CoreWorkers.DYNAMIC_SPLIT_SWITCH);
    /** Whether a per-row selection's LoRA update takes one native call ({@link LoraUpdate}). */
    private final boolean loraUpdate = NativeKernels.enabled(LoraUpdate.SWITCH);

    /** Where a compressed weight is widened for a product of many rows. */
    private final WideningBuffer widening = new WideningBuffer();

    /** The kernels the system properties and the loaded library allow. */
    CpuKernels() {
        this(NativeKernels.enabled(FewRowProduct.SWITCH), NativeKernels.enabled(DecodeAttention.SWITCH));
    }

    /**
     * @param fewRowProduct whether products of a few rows take {@link FewRowProduct}'s kernel
     * @param decodeAttention whether a decode step's attention takes {@link DecodeAttention}'s kernel
     */
    CpuKernels(boolean fewRowProduct, boolean decodeAttention) {
        NativeKernels.isa(); // a forced instruction set that cannot run is refused here, when a model loads
        KernelSwitches.off(); // as is an unknown name in -Dllmzoo.cpu.off
        this.fewRowProduct = fewRowProduct && NativeKernels.loaded();
        this.decodeAttention = decodeAttention && NativeKernels.loaded();
    }

    /**
     * Passes of more than {@link CompressedProduct#MAX_ROWS} rows take {@link CompressedGemm}, whose
     * every output row depends on its input row alone (the input is quantized per row, the sums run
     * over the inputs in one order), and {@link PrefillAttention} reads each position's keys from the
     * cache in position order: so where both take the model's weights, a prompt's passes may be split
     * anywhere at such sizes (CompressedModelTest). Passes of fewer rows take the decode kernels,
     * whose last bits differ.
     */
    @Override
    public boolean prefillSplitsExactly(Set<WeightFormat> formats, int minPassRows) {
        return compressedGemm && prefillAttention && minPassRows > CompressedProduct.MAX_ROWS
                && formats.stream().allMatch(CompressedGemm::takes);
    }

    @Override
    public NDArray project(NDArray x, ProjectionWeight weight, ParameterStore store, boolean training) {
        return shared(() -> projectShared(x, weight, store, training));
    }

    private NDArray projectShared(NDArray x, ProjectionWeight weight, ParameterStore store, boolean training) {
        Device device = x.getDevice();
        CompressedWeight compressed = weight.compressed();
        if (compressed != null) {
            NDArray b = weight.bias(store, device, training);
            Shape shape = x.getShape();
            long rows = shape.size() / shape.get(shape.dimension() - 1);
            if (compressedProduct
                    && CoreWorkers.inferenceOnCpu(x, training)
                    && CompressedProduct.applies(x, compressed, b, rows)) {
                return CompressedProduct.multiply(x, compressed, b, rows, preparedInput);
            }
            if (compressedGemm
                    && CoreWorkers.inferenceOnCpu(x, training)
                    && CompressedGemm.applies(x, compressed, b)) {
                return CompressedGemm.multiply(x, compressed, b, rows);
            }
            if (compressedProduct && CoreWorkers.inferenceOnCpu(x, training) && CompressedProduct.widens(compressed)) {
                return widening.product(x, compressed, b);
            }
            return EngineKernels.INSTANCE.project(x, weight, store, training);
        }
        NDArray w = weight.weight(store, device, training);
        NDArray b = weight.bias(store, device, training);
        SplitProjection split = split(weight);
        return weight.layout() == Layout.OUT_IN
                ? split.linear(x, w, b, training)
                : split.matMulAdd(x, w, b, training);
    }

    @Override
    public NDArray[] projectPair(
            NDArray x, ProjectionWeight first, ProjectionWeight second, ParameterStore store, boolean training) {
        return shared(() -> projectPairShared(x, first, second, store, training));
    }

    private NDArray[] projectPairShared(
            NDArray x, ProjectionWeight first, ProjectionWeight second, ParameterStore store, boolean training) {
        if (first.compressed() != null && second.compressed() != null) {
            NDArray[] both = compressedAll(x, new ProjectionWeight[] {first, second}, store, training);
            if (both != null) {
                return both;
            }
        }
        if (first.layout() != Layout.OUT_IN
                || second.layout() != Layout.OUT_IN
                || first.compressed() != null
                || second.compressed() != null) {
            return new NDArray[] {project(x, first, store, training), project(x, second, store, training)};
        }
        Device device = x.getDevice();
        NDArray[] weights = {first.weight(store, device, training), second.weight(store, device, training)};
        NDArray[] biases = {first.bias(store, device, training), second.bias(store, device, training)};
        NDArray[] both = SplitProjection.pair(x, weights, biases, training, fewRowProduct);
        if (both != null) {
            return both;
        }
        return new NDArray[] {
            split(first).linear(x, weights[0], biases[0], training),
            split(second).linear(x, weights[1], biases[1], training)
        };
    }

    /**
     * Projections of the same input in one hand-over to the cores where a decode step's kernel
     * takes them all: compressed weights by {@link CompressedProduct}'s kernel, float32 (out, in)
     * ones by {@link FewRowProduct}'s, each core filling its columns of every output. Otherwise the
     * first weight of an odd count alone and the others in pairs, as {@link #project} and {@link
     * #projectPair} compute them.
     */
    @Override
    public NDArray[] projectAll(NDArray x, ProjectionWeight[] weights, ParameterStore store, boolean training) {
        return shared(() -> projectAllShared(x, weights, store, training));
    }

    private NDArray[] projectAllShared(NDArray x, ProjectionWeight[] weights, ParameterStore store, boolean training) {
        if (weights.length == 2) {
            return projectPair(x, weights[0], weights[1], store, training);
        }
        NDArray[] all = projectAll && weights.length > 2 ? fusedAll(x, weights, store, training) : null;
        if (all != null) {
            return all;
        }
        all = new NDArray[weights.length];
        int paired = weights.length % 2;
        if (paired == 1) {
            all[0] = project(x, weights[0], store, training);
        }
        for (int i = paired; i < weights.length; i += 2) {
            NDArray[] pair = projectPair(x, weights[i], weights[i + 1], store, training);
            all[i] = pair[0];
            all[i + 1] = pair[1];
        }
        return all;
    }

    /** All products by one kernel in one hand-over, or {@code null} where it does not take them all. */
    private NDArray[] fusedAll(NDArray x, ProjectionWeight[] weights, ParameterStore store, boolean training) {
        int compressed = 0;
        for (ProjectionWeight w : weights) {
            compressed += w.compressed() != null ? 1 : 0;
        }
        if (compressed == weights.length) {
            return compressedAll(x, weights, store, training);
        }
        if (compressed > 0 || !fewRowProduct) {
            return null;
        }
        Device device = x.getDevice();
        NDArray[] ws = new NDArray[weights.length];
        NDArray[] bs = new NDArray[weights.length];
        for (int i = 0; i < weights.length; i++) {
            if (weights[i].layout() != Layout.OUT_IN) {
                return null;
            }
            ws[i] = weights[i].weight(store, device, training);
            bs[i] = weights[i].bias(store, device, training);
        }
        return SplitProjection.fewRowsAll(x, ws, bs, training);
    }

    /**
     * The products of a decode step by {@link CompressedProduct}'s kernel in one hand-over to the
     * cores, or {@code null} where the kernel does not take one of them.
     */
    private NDArray[] compressedAll(NDArray x, ProjectionWeight[] projections, ParameterStore store, boolean training) {
        if (!CoreWorkers.inferenceOnCpu(x, training)) {
            return null;
        }
        Compressed operands = compressed(x, projections, null, store, training);
        return operands == null
                ? null
                : CompressedProduct.multiplyAll(
                        x, operands.weights(), operands.biases(), operands.rows(), preparedInput);
    }

    /** A decode step's compressed weights, their biases and the rows of x they multiply. */
    private record Compressed(CompressedWeight[] weights, NDArray[] biases, long rows) {}

    /**
     * The compressed weights and biases of {@code projections} for {@link CompressedProduct}'s
     * kernel, or {@code null} where that kernel is off, a weight is not compressed, the kernel does
     * not take it, or a product does not fit its shape.
     *
     * @param shapes each product's shape, or {@code null} for the kernel's own
     */
    private Compressed compressed(
            NDArray x, ProjectionWeight[] projections, Shape[] shapes, ParameterStore store, boolean training) {
        if (!compressedProduct) {
            return null;
        }
        Device device = x.getDevice();
        CompressedWeight[] weights = new CompressedWeight[projections.length];
        NDArray[] biases = new NDArray[projections.length];
        long rows = rows(x);
        for (int i = 0; i < weights.length; i++) {
            weights[i] = projections[i].compressed();
            biases[i] = projections[i].bias(store, device, training);
            if (weights[i] == null || !CompressedProduct.applies(x, weights[i], biases[i], rows)
                    || (shapes != null && shapes[i].size() != rows * weights[i].outFeatures())) {
                return null;
            }
        }
        return new Compressed(weights, biases, rows);
    }

    @Override
    public NDArray attend(
            NDArray q, KeyValues kv, NDArray mask, AttentionScores scores, float dropout, boolean training) {
        if (takesDecodeKernel(q, kv, mask, training)) {
            return DecodeAttention.attend(q, kv, mask, scores, attentionWritesCache);
        }
        if (prefillAttention && CoreWorkers.inferenceOnCpu(q, training) && PrefillAttention.applies(q, kv, mask)) {
            return PrefillAttention.attend(q, kv, mask, scores);
        }
        if (!training) {
            NDArray split = SplitAttention.attend(q, kv.keys(), kv.values(), mask, scores);
            if (split != null) {
                return split;
            }
        }
        return ScaledDotProductAttention.attend(q, kv.keys(), kv.values(), mask, scores, dropout, training);
    }

    /**
     * Whether {@link #attend} takes {@link DecodeAttention}'s kernel: inference over a cache's
     * buffers that the kernel can read, with the kernel on (any scale, soft-capped scores too).
     *
     * @param q queries (B, H, T, D)
     * @param kv keys and values
     * @param mask additive mask, or {@code null}
     * @param training whether this is a training pass
     * @return whether the kernel computes this attention
     */
    boolean takesDecodeKernel(NDArray q, KeyValues kv, NDArray mask, boolean training) {
        return decodeAttention
                && kv.inCache()
                && CoreWorkers.inferenceOnCpu(q, training)
                && DecodeAttention.applies(q, kv, mask);
    }

    @Override
    public NDArray rmsNorm(NDArray x, NDArray weight, float eps, boolean unitOffset, boolean training) {
        if (decodeOps && CoreWorkers.inferenceOnCpu(x, training) && DecodeOps.takesRmsNorm(x, weight)) {
            return DecodeOps.rmsNorm(x, weight, eps, unitOffset);
        }
        return EngineKernels.INSTANCE.rmsNorm(x, weight, eps, unitOffset, training);
    }

    @Override
    public NDArray layerNorm(NDArray x, NDArray weight, NDArray bias, float eps, boolean training) {
        if (layerNorm && CoreWorkers.inferenceOnCpu(x, training) && DecodeOps.takesLayerNorm(x, weight, bias)) {
            return DecodeOps.layerNorm(x, weight, bias, eps);
        }
        return EngineKernels.INSTANCE.layerNorm(x, weight, bias, eps, training);
    }

    @Override
    public NDArray[] rotate(NDArray q, NDArray k, NDList cosSin, boolean training) {
        if (decodeOps && rotatePair && CoreWorkers.inferenceOnCpu(q, training) && !k.hasGradient()) {
            NDArray[] rotated = DecodeOps.rotatePairInPlace(q, k, cosSin);
            if (rotated != null) {
                return rotated;
            }
        }
        if (decodeOps
                && CoreWorkers.inferenceOnCpu(q, training)
                && !k.hasGradient()
                && DecodeOps.takesRotation(q, cosSin)
                && DecodeOps.takesRotation(k, cosSin)) {
            return new NDArray[] {rotated(q, cosSin), rotated(k, cosSin)};
        }
        return EngineKernels.INSTANCE.rotate(q, k, cosSin, training);
    }

    @Override
    public long[] argMax(NDArray logits) {
        if (argMax && DecodeOps.takesArgMax(logits)) {
            return DecodeOps.argMax(logits);
        }
        return Kernels.super.argMax(logits);
    }

    /** Heads rotated in place where they are dense and the switch allows, else into a new array. */
    private NDArray rotated(NDArray x, NDList cosSin) {
        return rotateInPlace && NativeKernels.denseFloat32OnCpu(x)
                ? DecodeOps.rotateInPlace(x, cosSin)
                : DecodeOps.rotate(x, cosSin);
    }

    @Override
    public NDArray activate(NDArray gate, NDArray up, HiddenActivation activation, boolean training) {
        if (decodeOps
                && CoreWorkers.inferenceOnCpu(gate, training)
                && (up == null || !up.hasGradient())
                && DecodeOps.takesActivation(gate, up)) {
            return DecodeOps.activateInPlace(gate, up, activation);
        }
        return EngineKernels.INSTANCE.activate(gate, up, activation, training);
    }

    @Override
    public NDArray gatedProject(
            NDArray x,
            ProjectionWeight gate,
            ProjectionWeight up,
            HiddenActivation activation,
            ParameterStore store,
            boolean training) {
        if (gatedProduct && CoreWorkers.inferenceOnCpu(x, training)) {
            NDArray fused =
                    shared(() -> FusedProducts.gated(
                            x, null, gate, up, activation, store, fewRowProduct, compressedProduct, preparedInput));
            if (fused != null) {
                return fused;
            }
        }
        return Kernels.super.gatedProject(x, gate, up, activation, store, training);
    }

    @Override
    public NDArray[] normedProjectAll(
            NDArray x,
            NDArray normWeight,
            float eps,
            boolean unitOffset,
            ProjectionWeight[] weights,
            Shape[] shapes,
            ParameterStore store,
            boolean training) {
        if (normedProducts(x, normWeight, training) && projectAll) {
            NDArray[] all = shared(() -> normedCompressedAll(x, normWeight, eps, unitOffset, weights, shapes, store));
            if (all != null) {
                return all;
            }
        }
        return Kernels.super.normedProjectAll(x, normWeight, eps, unitOffset, weights, shapes, store, training);
    }

    /**
     * {@link CompressedProduct#multiplyAll} of {@code rmsNorm(x)}, the norm in the calling thread's
     * buffer, each product made in its shape, or {@code null} where a weight is not compressed or
     * the kernel does not take it.
     */
    private NDArray[] normedCompressedAll(
            NDArray x, NDArray normWeight, float eps, boolean unitOffset, ProjectionWeight[] projections,
            Shape[] shapes, ParameterStore store) {
        Compressed operands = compressed(x, projections, shapes, store, false);
        if (operands == null) {
            return null;
        }
        ByteBuffer normed = DecodeOps.rmsNormed(x, normWeight, eps, unitOffset);
        return CompressedProduct.multiplyAll(x, normed, operands.weights(), operands.biases(), shapes, operands.rows(),
                CompressedProduct.dotProducts(), preparedInput);
    }

    @Override
    public NDArray normedGatedProject(
            NDArray x,
            NDArray normWeight,
            float eps,
            boolean unitOffset,
            ProjectionWeight gate,
            ProjectionWeight up,
            HiddenActivation activation,
            ParameterStore store,
            boolean training) {
        if (normedProducts(x, normWeight, training) && gatedProduct) {
            NDArray fused = shared(() -> FusedProducts.gated(x, DecodeOps.rmsNormed(x, normWeight, eps, unitOffset),
                    gate, up, activation, store, fewRowProduct, compressedProduct, preparedInput));
            if (fused != null) {
                return fused;
            }
        }
        return Kernels.super.normedGatedProject(x, normWeight, eps, unitOffset, gate, up, activation, store, training);
    }

    /**
     * Whether a norm before products may go into the calling thread's buffer for them to read
     * ({@link DecodeOps#rmsNormed}): inference on the CPU at a decode step's rows, with the norm
     * kernel on and taking these arrays.
     */
    private boolean normedProducts(NDArray x, NDArray normWeight, boolean training) {
        return normedProducts
                && decodeOps
                && CoreWorkers.inferenceOnCpu(x, training)
                && rows(x) <= CompressedProduct.MAX_ROWS
                && DecodeOps.takesRmsNorm(x, normWeight);
    }

    private static long rows(NDArray x) {
        Shape shape = x.getShape();
        return shape.size() / Math.max(1, shape.get(shape.dimension() - 1));
    }

    @Override
    public NDArray projectAdd(
            NDArray x, ProjectionWeight weight, NDArray residual, ParameterStore store, boolean training) {
        if (residualProduct && CoreWorkers.inferenceOnCpu(x, training)) {
            NDArray sum = shared(() -> FusedProducts.residual(
                    x, weight, residual, store, fewRowProduct, compressedProduct, residualBias, preparedInput));
            if (sum == null && residualBias && weight.compressed() == null && weight.layout() == Layout.IN_OUT) {
                Device device = x.getDevice();
                sum = split(weight).matMulAddInto(
                        x, weight.weight(store, device, false), weight.bias(store, device, false), residual);
            }
            if (sum != null) {
                return sum;
            }
        }
        return Kernels.super.projectAdd(x, weight, residual, store, training);
    }

    /**
     * A per-row selection's LoRA update added into {@code y} in one native call ({@link LoraUpdate})
     * where the arrays allow it, else the engine's form.
     */
    @Override
    public NDArray loraUpdate(NDArray x, NDArray y, LoraRowPairs pairs) {
        if (loraUpdate && CoreWorkers.inferenceOnCpu(x, false) && !y.hasGradient() && LoraUpdate.takes(x, y, pairs)) {
            return LoraUpdate.addInto(x, y, pairs);
        }
        return Kernels.super.loraUpdate(x, y, pairs);
    }

    /**
     * Whether the elementwise operations of a decode step take {@link DecodeOps}' kernels (where
     * the arrays allow it).
     *
     * @return whether the kernels are on
     */
    boolean decodeOps() {
        return decodeOps;
    }

    /**
     * Whether a product of this many rows may take {@link FewRowProduct}'s kernel (where the
     * arrays allow it).
     *
     * @return whether the few-row kernel is on
     */
    boolean fewRowProduct() {
        return fewRowProduct;
    }

    @Override
    public void closeStep(NDManager step) {
        CoreWorkers.release(step);
    }

    /**
     * Computes {@code products} with their columns shared as {@link #dynamicSplit} says: a pool for
     * whichever core is free, or one fixed share a core ({@link CoreWorkers#withFixedShares}).
     */
    private <T> T shared(Supplier<T> products) {
        return dynamicSplit ? products.get() : CoreWorkers.withFixedShares(products);
    }

    private SplitProjection split(ProjectionWeight weight) {
        return weight.prepared(this, SplitProjection.class, () -> new SplitProjection(fewRowProduct, placeColumns, fourRows));
    }

    /** @return the bytes the widening buffer holds: 0 until a product widens a weight */
    long wideningBytes() {
        return widening.capacity();
    }

    @Override
    public String toString() {
        return "CPU kernels (" + CoreWorkers.PARALLELISM + " threads, few-row product "
                + (fewRowProduct ? "on" : "off") + ", decode attention " + (decodeAttention ? "on" : "off")
                + ", compressed product " + (compressedProduct ? "on" : "off")
                + ", compressed GEMM " + (compressedGemm ? "on" : "off")
                + ", decode ops " + (decodeOps ? "on" : "off")
                + ", layer norm " + (layerNorm ? "on" : "off")
                + ", place columns " + (placeColumns ? "on" : "off")
                + ", gated product " + (gatedProduct ? "on" : "off")
                + ", residual product " + (residualProduct ? "on" : "off")
                + ", residual bias " + (residualBias ? "on" : "off")
                + ", four weight rows " + (fourRows ? "on" : "off")
                + ", project all " + (projectAll ? "on" : "off")
                + ", attention writes cache " + (attentionWritesCache ? "on" : "off")
                + ", prefill attention " + (prefillAttention ? "on" : "off")
                + ", dynamic split " + (dynamicSplit ? "on" : "off")
                + ", rotate in place " + (rotateInPlace ? "on" : "off")
                + ", rotate pair " + (rotatePair ? "on" : "off")
                + ", arg max " + (argMax ? "on" : "off")
                + ", normed products " + (normedProducts ? "on" : "off")
                + ", prepared input " + (preparedInput ? "on" : "off")
                + ", LoRA update " + (loraUpdate ? "on" : "off") + ")";
    }
}
