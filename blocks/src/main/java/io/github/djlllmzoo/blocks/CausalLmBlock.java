package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Block;
import ai.djl.nn.Parameter;
import ai.djl.training.ParameterStore;
import ai.djl.util.PairList;
import io.github.djlllmzoo.blocks.config.DecoderConfig;
import java.util.ArrayList;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A decoder-only causal language model: token embedding, a stack of {@link DecoderLayer}s, a final
 * norm and an LM head (its own {@code lm_head} or tied to the token embedding). Subclasses supply
 * each family's embedding step and children.
 *
 * <p>As a DJL block its {@code forward} takes {@code [input_ids (B, T)]}, optionally followed by
 * {@code attention_mask (B, T)} and {@code position_ids (B, T)}, and returns {@code [logits (B, T,
 * V)]}, so a {@code Model} can hold it, a {@code Predictor} can run it and a {@code Trainer} can
 * train it. Generation uses {@link #forward(ParameterStore, NDArray, NDArray, NDArray, KvCache,
 * boolean, boolean)} with a {@link KvCache}, ending each step with {@code kernels().closeStep};
 * continuous batching uses {@link SlotPasses} over a {@link SlotKvCache}.
 *
 * <p>The first time the model runs it settles where: the manager that holds its parameters (the
 * model's, which also keeps what layers derive once, such as RoPE tables) and the {@link Kernels}
 * for their engine, device and type, which every block of the model then computes with.
 */
public abstract class CausalLmBlock extends ConfiguredBlock {

    private final DecoderConfig config;
    private final List<DecoderLayer> layers = new ArrayList<>();
    private Embedding tokenEmbedding;
    private UnaryBlock finalNorm;
    private Linear lmHead;
    private ProjectionWeight tiedHead;
    private Kernels chosenKernels;
    private volatile Placement placement;
    private volatile KvCacheDtype kvCacheDtype;

    /** Where the model runs: the manager holding its parameters, and its kernels. */
    private record Placement(NDManager manager, Kernels kernels) {}

    /** @param config the model config */
    protected CausalLmBlock(DecoderConfig config) {
        this.config = config;
    }

    /** @return the model config */
    public DecoderConfig config() {
        return config;
    }

    /** @return the decoder layers, in order */
    public List<DecoderLayer> layers() {
        return Collections.unmodifiableList(layers);
    }

    /**
     * Registers the token embedding (the tied LM head reads its weight).
     *
     * @param name its checkpoint name
     * @param embedding the embedding
     * @return the embedding
     */
    protected final Embedding setTokenEmbedding(String name, Embedding embedding) {
        tokenEmbedding = addChildBlock(name, embedding);
        return embedding;
    }

    /**
     * Registers the next decoder layer.
     *
     * @param name its checkpoint name, e.g. "h.0"
     * @param layer the layer
     */
    protected final void addLayer(String name, DecoderLayer layer) {
        layers.add(addChildBlock(name, layer));
    }

    /**
     * Registers the final norm, then the untied LM head when the config does not tie it.
     *
     * @param name the checkpoint name of the norm
     * @param norm the norm
     */
    protected final void setFinalNormAndHead(String name, UnaryBlock norm) {
        finalNorm = addChildBlock(name, norm);
        if (config.tieWordEmbeddings()) {
            tiedHead = tokenEmbedding.projection();
        } else {
            lmHead =
                    addChildBlock(
                            "lm_head",
                            new Linear(config.hiddenSize(), config.vocabSize(), false, 0.02f));
        }
    }

    /**
     * Embeds the new tokens (and, for families with learned positions, their positions).
     *
     * @param store the parameter store, or {@code null}
     * @param inputIds (B, T) int64
     * @param positionIds (B or 1, T) int64
     * @param training whether this is a training pass
     * @return the residual stream (B, T, E), a new array (not a view of the table): the layers
     *     of a decode step add into it
     */
    protected abstract NDArray embed(
            ParameterStore store, NDArray inputIds, NDArray positionIds, boolean training);

    /**
     * The kernels the model computes with: those {@link #useKernels} set, else the ones {@link
     * Kernels#forModel} chooses for its parameters' engine, device and type the first time the
     * model runs (or this is asked).
     *
     * @return the kernels
     * @throws IllegalStateException if neither was set and the parameters have no arrays yet
     */
    @Override
    public Kernels kernels() {
        return placement().kernels();
    }

    /**
     * Makes the model compute with {@code kernels} instead of the ones it would choose.
     *
     * @param kernels the kernels
     */
    @Override
    public void useKernels(Kernels kernels) {
        synchronized (this) {
            chosenKernels = kernels;
            placement = null;
        }
    }

    /** Settles where the model runs (again after the manager holding its parameters closed). */
    private Placement placement() {
        Placement p = placement;
        if (p != null && p.manager().isOpen()) {
            return p;
        }
        synchronized (this) {
            p = placement;
            if (p == null || !p.manager().isOpen()) {
                NDArray weights = heldArray();
                if (weights == null) {
                    throw new IllegalStateException("the model's parameters have no values yet");
                }
                NDManager manager = weights.getManager();
                Kernels kernels =
                        chosenKernels != null
                                ? chosenKernels
                                : Kernels.forModel(manager.getEngine(), weights.getDevice(), weights.getDataType());
                super.useKernels(kernels);
                p = new Placement(manager, kernels);
                placement = p;
            }
            return p;
        }
    }

    /**
     * Holds every weight matrix (the embedding tables, and with the token embedding a head tied to
     * it, the layers' projections, an untied LM head) as {@code format} from now on, freeing their
     * float arrays ({@link ProjectionWeight#compress}); norms and biases stay float32, as does all
     * computing. A compressed model runs inference only.
     *
     * @param format the form to hold the weights in
     */
    public void compressWeights(WeightFormat format) {
        Map<Parameter, WeightFormat> formats = weightFormats(format);
        for (Map.Entry<Parameter, ProjectionWeight> e : compressibleWeights().entrySet()) {
            e.getValue().compress(formats.get(e.getKey()));
        }
    }

    /**
     * @return the formats the weight matrices are held in now ({@link WeightFormat#FLOAT32} for those
     *     not compressed)
     */
    public Set<WeightFormat> heldFormats() {
        Set<WeightFormat> formats = EnumSet.noneOf(WeightFormat.class);
        for (ProjectionWeight weight : compressibleWeights().values()) {
            formats.add(weight.compressed() == null ? WeightFormat.FLOAT32 : weight.compressed().format());
        }
        return formats;
    }

    /**
     * The format each weight {@link #compressWeights} compresses is held in when {@code format} is
     * asked: {@code format} itself, except that {@link WeightFormat#Q4_K} keeps a few weights finer, as
     * llama.cpp's Q4_K_M does ({@link Q4KMix}).
     *
     * @param format the format asked
     * @return each compressible weight's format, by its parameter
     */
    public Map<Parameter, WeightFormat> weightFormats(WeightFormat format) {
        Map<Parameter, ProjectionWeight> compressible = compressibleWeights();
        ProjectionWeight head = tiedHead != null ? tiedHead : lmHead == null ? null : projectionOf(lmHead);
        Map<Parameter, WeightFormat> formats = new IdentityHashMap<>();
        for (Map.Entry<String, Parameter> e : namedParameters().entrySet()) {
            ProjectionWeight projection = compressible.get(e.getValue());
            if (projection != null) {
                formats.put(e.getValue(), format == WeightFormat.Q4_K
                        ? Q4KMix.formatOf(e.getKey(), projection == head, config.numLayers())
                        : format);
            }
        }
        return formats;
    }

    /**
     * The weights {@link #compressWeights} holds compressed, by their parameter, so that a loader
     * can compress each straight from a checkpoint ({@link ProjectionWeight#hold}).
     *
     * @return the holder of each such weight, in declaration order
     */
    public Map<Parameter, ProjectionWeight> compressibleWeights() {
        Map<Parameter, ProjectionWeight> weights = new LinkedHashMap<>();
        collectCompressible(this, weights);
        return weights;
    }

    /** @return the compressed weights by the parameter each replaces (empty while float32) */
    public Map<Parameter, CompressedWeight> compressedWeights() {
        Map<Parameter, CompressedWeight> weights = new IdentityHashMap<>();
        for (Map.Entry<Parameter, ProjectionWeight> e : compressibleWeights().entrySet()) {
            if (e.getValue().compressed() != null) {
                weights.put(e.getKey(), e.getValue().compressed());
            }
        }
        return weights;
    }

    private static void collectCompressible(Block block, Map<Parameter, ProjectionWeight> weights) {
        for (Block child : block.getChildren().values()) {
            ProjectionWeight projection = projectionOf(child);
            if (projection != null) {
                weights.put(projection.weightParameter(), projection);
            } else {
                collectCompressible(child, weights);
            }
        }
    }

    static ProjectionWeight projectionOf(Block block) {
        if (block instanceof Embedding) {
            return ((Embedding) block).projection();
        }
        if (block instanceof Linear) {
            return ((Linear) block).projection();
        }
        return block instanceof Conv1D ? ((Conv1D) block).projection() : null;
    }

    /**
     * Stores the keys and values of this model's caches ({@link #newCache}, {@link
     * SlotPasses#newCache}) in {@code dtype}, whatever type it computes in; caches allocated
     * before keep theirs.
     *
     * @param dtype the cache's element type, or {@code null} for the compute type (the default)
     */
    public void setKvCacheDtype(KvCacheDtype dtype) {
        kvCacheDtype = dtype;
    }

    /**
     * @return the element type this model's caches store keys and values in: {@link
     *     #setKvCacheDtype}'s, else the compute type ({@link #dataType()})
     */
    public DataType kvCacheDataType() {
        KvCacheDtype dtype = kvCacheDtype;
        return dtype == null ? dataType() : dtype.dataType();
    }

    /** @return the element type of the parameters (the compute type) */
    public DataType dataType() {
        NDArray w = heldArray();
        return w == null ? DataType.FLOAT32 : w.getDataType();
    }

    /**
     * The array of the first parameter that holds one: compressed weights hold none (the norms
     * always do), and the model's other arrays share its manager, device and type.
     */
    private NDArray heldArray() {
        for (Parameter p : namedParameters().values()) {
            if (p.isInitialized()) {
                return p.getArray();
            }
        }
        return null;
    }

    /**
     * Allocates a KV cache for this model on {@code manager}'s device.
     *
     * @param manager the parent manager of the cache
     * @param batchSize sequences in the batch
     * @param capacity positions to allocate up front (capped at the context window)
     * @return an empty cache
     */
    public KvCache newCache(NDManager manager, int batchSize, int capacity) {
        return newCache(manager, batchSize, capacity, true);
    }

    /**
     * Allocates a KV cache for this model on {@code manager}'s device.
     *
     * @param manager the parent manager of the cache
     * @param batchSize sequences in the batch
     * @param capacity positions to allocate up front (capped at the context window)
     * @param bounded whether sliding-window layers keep only their window; {@code false} keeps every
     *     position (for callers that hand the whole cache on as arrays), the masks still applying the
     *     window
     * @return an empty cache
     */
    public KvCache newCache(NDManager manager, int batchSize, int capacity, boolean bounded) {
        int max = config.maxPositions();
        int[] windows = new int[config.numLayers()];
        for (int i = 0; bounded && i < windows.length; i++) {
            windows[i] = config.slidingWindow(i);
        }
        return new KvCache(
                manager,
                windows,
                batchSize,
                config.numKvHeads(),
                config.headDim(),
                Math.max(1, Math.min(capacity, max)),
                max,
                dataType(),
                kvCacheDataType());
    }

    /**
     * Runs the decoder on new tokens, storing their keys and values in {@code cache}.
     *
     * @param store the parameter store, or {@code null} to use the parameters' own arrays
     * @param inputIds new tokens (B, T) int64; every result is attached to its manager
     * @param positionIds their absolute positions (B, T), or {@code null} for {@code past ..
     *     past+T-1}
     * @param attentionMask (B, past + T) with 1 for real tokens and 0 for padding, or {@code null}
     * @param cache the cache to extend, or {@code null} for a cache-free pass
     * @param lastOnly whether to compute logits for the last position only
     * @param training whether this is a training pass
     * @return logits (B, T, V), or (B, 1, V) when {@code lastOnly}
     */
    public NDArray forward(
            ParameterStore store,
            NDArray inputIds,
            NDArray positionIds,
            NDArray attentionMask,
            KvCache cache,
            boolean lastOnly,
            boolean training) {
        NDArray h =
                hiddenStates(
                        store, inputIds, positionIds, attentionMask, cache, lastOnly, training);
        return logits(store, h, training);
    }

    /**
     * Runs the decoder on new tokens up to and including the final norm (Hugging Face's last
     * hidden state), storing their keys and values in {@code cache}.
     *
     * @param store the parameter store, or {@code null} to use the parameters' own arrays
     * @param inputIds new tokens (B, T) int64; every result is attached to its manager
     * @param positionIds their absolute positions (B, T), or {@code null} for {@code past ..
     *     past+T-1}
     * @param attentionMask (B, past + T) with 1 for real tokens and 0 for padding, or {@code null}
     * @param cache the cache to extend, or {@code null} for a cache-free pass
     * @param lastOnly whether to keep the last position only
     * @param training whether this is a training pass
     * @return the normed hidden states (B, T, E), or (B, 1, E) when {@code lastOnly}
     */
    public NDArray hiddenStates(
            ParameterStore store,
            NDArray inputIds,
            NDArray positionIds,
            NDArray attentionMask,
            KvCache cache,
            boolean lastOnly,
            boolean training) {
        Placement placed = placement();
        NDManager manager = inputIds.getManager();
        int t = Math.toIntExact(inputIds.getShape().get(1));
        int past = cache == null ? 0 : cache.length();
        if (past + t > config.maxPositions()) {
            throw new IllegalArgumentException(
                    "sequence of "
                            + (past + t)
                            + " tokens exceeds the model's context window of "
                            + config.maxPositions());
        }
        NDArray positions = positionIds != null ? positionIds : positions(manager, past, t); // (1, T)
        NDArray h = embed(store, inputIds, positions, training); // (B, T, E)
        NDArray mask = AttentionMask.build(manager, t, past, attentionMask, h.getDataType());
        // One mask per distinct window: layers with the same window share it, global ones the causal mask.
        Map<Integer, NDArray> windowMasks = new HashMap<>();
        for (int i = 0; i < config.numLayers(); i++) {
            int window = config.slidingWindow(i);
            if (window > 0 && !windowMasks.containsKey(window)) {
                long[] keys =
                        cache == null
                                ? WindowLayerCache.keyPositions(0, t, Integer.MAX_VALUE)
                                : cache.windowKeyPositions(window, t);
                windowMasks.put(
                        window,
                        AttentionMask.window(manager, t, past, keys, window, attentionMask, h.getDataType()));
            }
        }
        AttentionContext context =
                new AttentionContext(positions, mask, windowMasks, cache, placed.manager());
        try {
            h = layersForward(store, h, context, t, training);
        } catch (RuntimeException e) {
            if (cache != null) {
                try {
                    cache.truncate(past); // the layers before the failure stored this pass's positions
                } catch (IllegalStateException lost) {
                    e.addSuppressed(lost);
                }
            }
            throw e;
        }
        if (lastOnly && t > 1) {
            h = h.get(new NDIndex(":, -1:, :")); // (B, 1, E)
        }
        return finalNorm.forward(store, h, training);
    }

    /**
     * Positions {@code past .. past+t-1} as (1, T) int64, made from Java values in one engine call
     * (an {@code arange} and its {@code expandDims} are two, a decode step's fixed cost).
     */
    private static NDArray positions(NDManager manager, int past, int t) {
        long[] values = new long[t];
        for (int i = 0; i < t; i++) {
            values[i] = past + i;
        }
        return manager.create(values, new Shape(1, t));
    }

    /** The layers over the residual stream h (B, T, E). */
    private NDArray layersForward(ParameterStore store, NDArray h, AttentionContext context, int t, boolean training) {
        return layersForward(store, h, context, t, training, 0, layers.size());
    }

    /** Layers {@code [from, to)} over the residual stream h (B, T, E). */
    private NDArray layersForward(
            ParameterStore store, NDArray h, AttentionContext context, int t, boolean training, int from, int to) {
        // A pass over many positions frees each layer's intermediates as the layer returns; a
        // decode step's are a few small arrays, which a scope per layer would cost more than free.
        // h, the embedding's fresh output and then each layer's, is this pass's own: a decode
        // step's layers may add into it in place.
        boolean scoped = training || t > 1;
        for (DecoderLayer layer : layers.subList(from, to)) {
            h = scoped ? forwardScoped(layer, store, h, context, training) : layer.forward(store, h, context, true, false);
        }
        return h;
    }

    /**
     * The manager holding the model's parameters (and what its layers derive once), settling where
     * the model runs first.
     *
     * @return the manager
     */
    NDManager placementManager() {
        return placement().manager();
    }

    /**
     * Layers {@code [from, to)} of an inference pass, as {@link SlotPasses} runs them.
     *
     * @param h the residual stream (B, T, E), the pass's own
     * @param context the pass's positions, masks and cache
     * @param from the first layer
     * @param to the layer after the last
     * @return the residual stream after layer {@code to - 1} (B, T, E)
     */
    NDArray layersForward(NDArray h, AttentionContext context, int from, int to) {
        return layersForward(null, h, context, Math.toIntExact(h.getShape().get(1)), false, from, to);
    }

    /**
     * Logits of the last position of the residual stream after the last layer (every row's one
     * position at a decode step).
     *
     * @param h (B, T, E)
     * @return (B, 1, V)
     */
    NDArray lastLogits(NDArray h) {
        if (h.getShape().get(1) > 1) {
            h = h.get(new NDIndex(":, -1:, :")); // (B, 1, E)
        }
        return logits(null, finalNorm.forward(null, h, false), false);
    }

    /**
     * A layer's pass whose intermediate arrays are freed as soon as it returns: results attach to
     * their input's manager, which would otherwise hold every intermediate of every layer until the
     * pass ends. In training the tensors the backward pass needs stay referenced by the engine's
     * autograd graph; what it keeps must not be an array over Java memory made in the layer (a
     * scalar operand comes from {@link Scalars}), as closing that array frees its memory.
     */
    private static NDArray forwardScoped(
            DecoderLayer layer, ParameterStore store, NDArray h, AttentionContext context, boolean training) {
        NDManager parent = h.getManager();
        try (NDManager scope = parent.newSubManager()) {
            // The layer's input is the previous layer's output (or the embedding), which nothing reads
            // after this layer: inference frees it with the scope, or every layer's input (T x E floats)
            // would stay with the pass's manager until the pass ends. Training keeps it with the pass.
            if (training) {
                h.tempAttach(scope);
            } else {
                h.attach(scope);
            }
            NDArray out = layer.forward(store, h, context, training); // (B, T, E)
            out.attach(parent);
            return out;
        }
    }

    /**
     * The LM head: logits from normed hidden states, soft-capped where the config says ({@link
     * DecoderConfig#finalLogitSoftcapping()}).
     *
     * @param store the parameter store, or {@code null}
     * @param h the output of {@link #hiddenStates} (B, T, E)
     * @param training whether this is a training pass
     * @return logits (B, T, V)
     */
    public NDArray logits(ParameterStore store, NDArray h, boolean training) {
        NDArray logits =
                lmHead != null
                        ? lmHead.forward(store, h, training)
                        : kernels().project(h, tiedHead, store, training); // (B, T, V)
        float cap = config.finalLogitSoftcapping();
        if (cap > 0) {
            logits = logits.div(Scalars.of(cap, logits)).tanh().mul(Scalars.of(cap, logits));
        }
        return logits;
    }

    @Override
    protected NDList forwardInternal(
            ParameterStore store, NDList inputs, boolean training, PairList<String, Object> params) {
        NDArray ids = inputs.get(0);
        NDArray mask = inputs.size() > 1 ? inputs.get(1) : null;
        NDArray positions = inputs.size() > 2 ? inputs.get(2) : null;
        if (mask != null && positions == null) {
            positions = positionsFromMask(mask);
        }
        return new NDList(forward(store, ids, positions, mask, null, false, training));
    }

    /**
     * Positions for left-padded rows, as Hugging Face computes them: the count of real tokens
     * before each position ({@code cumsum(mask) - 1}, clipped at 0 for the padding).
     *
     * @param mask (B, T) with 1 for real tokens and 0 for padding
     * @return (B, T) int64 positions
     */
    public static NDArray positionsFromMask(NDArray mask) {
        return mask.toType(DataType.INT64, false).cumSum(1).subi(1).maximum(0);
    }

    @Override
    public Shape[] getOutputShapes(Shape[] inputShapes) {
        Shape ids = inputShapes[0];
        return new Shape[] {new Shape(ids.get(0), ids.get(1), config.vocabSize())};
    }
}
