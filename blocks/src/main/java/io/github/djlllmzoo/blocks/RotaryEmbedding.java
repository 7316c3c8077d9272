package io.github.djlllmzoo.blocks;

import ai.djl.Device;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.index.NDIndex;
import ai.djl.ndarray.internal.NDArrayEx;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.ndarray.types.SparseFormat;
import io.github.djlllmzoo.blocks.config.LlamaConfig;
import io.github.djlllmzoo.blocks.config.RopeScaling;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Rotary position embedding (RoPE) in the Hugging Face convention: each head vector of width D is
 * split into halves {@code x1 = x[:D/2]}, {@code x2 = x[D/2:]}, and pair {@code (x1[i], x2[i])} is
 * rotated by the angle {@code position * inv_freq[i]}, i.e. {@code x * cos + rotate_half(x) * sin}
 * with {@code rotate_half(x) = cat(-x2, x1)}.
 *
 * <p>{@code inv_freq[i] = rope_theta^(-2i / D)}, rescaled by {@code rope_scaling} exactly as
 * Hugging Face's {@code _compute_linear_scaling_rope_parameters}, {@code
 * _compute_llama3_parameters} and {@code _compute_longrope_parameters} do (computed here in
 * float64). LongRoPE divides each frequency by its own factor and multiplies cos and sin by {@code
 * attention_factor}; its factor set ({@code long_factor} or {@code short_factor}) is chosen once,
 * from the context window the tables cover ({@link RopeScaling#longRopeFactors}), as llama.cpp
 * chooses by its context size, where Hugging Face switches by each call's sequence length: keys in a
 * KV cache then stay rotated with the frequencies later queries use.
 *
 * <p>The cos/sin tables cover every position of the context window. They are computed once per
 * device and element type, on first use, in float64 and rounded to the compute type, and are owned
 * by the manager that owns the model's weights, so they live as long as the weights. They are laid
 * out for a rotation in five engine calls: {@code cos} is {@code cat(cos, cos)} and {@code sin} is
 * {@code cat(-sin, sin)}, so that {@code x * cos + cat(x2, x1) * sin} is exactly {@code x * cos +
 * rotate_half(x) * sin}. Each forward pass only gathers the rows of its {@code position_ids}, once
 * for all layers, so positions continue across KV-cache steps and each row of a left-padded batch
 * may have its own positions. One instance is shared by every attention layer of a model; it is
 * safe to use from several threads.
 */
public final class RotaryEmbedding {

    private final int headDim;
    private final int maxPositions;
    private final double[] inverseFrequencies;
    private final double attentionFactor;
    private final Map<TableKey, NDArray[]> tables = new HashMap<>();
    private Gathered lastGathered;

    private record TableKey(Device device, DataType dataType) {}

    /**
     * Positions whose float32 CPU rows a decode step copies from Java ({@link #decodeRows}): one
     * gather of this many rows serves as many steps.
     */
    private static final int ROW_RUN = 64;

    /**
     * {@code -Dllmzoo.rope.decodeRows=false} has a decode step gather its factors as a pass does
     * (read at each pass, so that a benchmark may alternate the two in one process).
     */
    public static final String DECODE_ROWS_PROPERTY = "llmzoo.rope.decodeRows";

    private volatile Rows rows;

    /** The rows gathered for one forward pass's positions, which every layer of the pass reuses. */
    private record Gathered(NDArray positionIds, DataType dataType, NDList cosSin) {}

    /** A run of the float32 tables' rows on the CPU, positions {@code [first, first + count)}, in Java. */
    private record Rows(NDArray cosTable, long first, int count, float[] cos, float[] sin) {}

    /**
     * @param headDim the head width D (even)
     * @param maxPositions the number of positions the tables cover (the context window)
     * @param theta the rotary base ({@code rope_theta})
     * @param scaling the frequency scaling ({@code rope_scaling}), or {@code null}
     */
    public RotaryEmbedding(int headDim, int maxPositions, double theta, RopeScaling scaling) {
        if (headDim <= 0 || headDim % 2 != 0) {
            throw new IllegalArgumentException(
                    "rotary head dimension must be positive and even, got " + headDim);
        }
        if (maxPositions <= 0) {
            throw new IllegalArgumentException(
                    "maxPositions must be positive, got " + maxPositions);
        }
        this.headDim = headDim;
        this.maxPositions = maxPositions;
        this.inverseFrequencies = inverseFrequencies(headDim, theta, scaling, maxPositions);
        this.attentionFactor = scaling == null ? 1 : scaling.attentionFactor();
    }

    /**
     * The rotary embedding a Llama-family config describes.
     *
     * @param config the config
     * @return the embedding over the config's whole context window
     */
    public static RotaryEmbedding of(LlamaConfig config) {
        return new RotaryEmbedding(
                config.headDim(),
                config.maxPositionEmbeddings(),
                config.ropeTheta(),
                config.ropeScaling());
    }

    /**
     * The rotation frequencies of the D/2 pairs, for a scaling that does not depend on the context
     * window (not {@link RopeScaling.Type#LONGROPE}).
     *
     * @param headDim the head width D (even)
     * @param theta the rotary base
     * @param scaling the frequency scaling, or {@code null}
     * @return {@code inv_freq}, D/2 values
     */
    public static double[] inverseFrequencies(int headDim, double theta, RopeScaling scaling) {
        if (scaling != null && scaling.type() == RopeScaling.Type.LONGROPE) {
            throw new IllegalArgumentException("longrope frequencies depend on the context window; give it");
        }
        return inverseFrequencies(headDim, theta, scaling, 0);
    }

    /**
     * The rotation frequencies of the D/2 pairs for a model used with a given context window.
     *
     * @param headDim the head width D (even)
     * @param theta the rotary base
     * @param scaling the frequency scaling, or {@code null}
     * @param contextWindow the positions the model is used with (picks LongRoPE's factor set)
     * @return {@code inv_freq}, D/2 values
     */
    public static double[] inverseFrequencies(
            int headDim, double theta, RopeScaling scaling, int contextWindow) {
        int half = headDim / 2;
        double[] inv = new double[half];
        for (int i = 0; i < half; i++) {
            inv[i] = 1.0 / Math.pow(theta, (2.0 * i) / headDim);
        }
        if (scaling == null) {
            return inv;
        }
        return switch (scaling.type()) {
            case LINEAR -> linear(inv, scaling.factor());
            case LLAMA3 -> llama3(inv, scaling);
            case LONGROPE -> divided(inv, scaling.longRopeFactors(contextWindow));
        };
    }

    /** LongRoPE: {@code inv_freq[i] / ext_factor[i]}. */
    private static double[] divided(double[] inv, List<Double> factors) {
        if (factors.size() != inv.length) {
            throw new IllegalArgumentException(
                    "longrope needs " + inv.length + " factors (head_dim / 2), got " + factors.size());
        }
        double[] out = new double[inv.length];
        for (int i = 0; i < inv.length; i++) {
            out[i] = inv[i] / factors.get(i);
        }
        return out;
    }

    /** Linear scaling (position interpolation): every frequency divided by {@code factor}. */
    private static double[] linear(double[] inv, double factor) {
        double[] out = new double[inv.length];
        for (int i = 0; i < inv.length; i++) {
            out[i] = inv[i] / factor;
        }
        return out;
    }

    /**
     * Llama 3 scaling: wavelengths shorter than {@code original / high_freq_factor} are kept,
     * longer than {@code original / low_freq_factor} divided by {@code factor}, and the band
     * between is interpolated with {@code smooth = (original / wavelength - low) / (high - low)}.
     */
    private static double[] llama3(double[] inv, RopeScaling scaling) {
        double factor = scaling.factor();
        double low = scaling.lowFreqFactor();
        double high = scaling.highFreqFactor();
        double original = scaling.originalMaxPositionEmbeddings();
        double lowFreqWavelength = original / low;
        double highFreqWavelength = original / high;
        double[] out = new double[inv.length];
        for (int i = 0; i < inv.length; i++) {
            double wavelength = 2 * Math.PI / inv[i];
            if (wavelength < highFreqWavelength) {
                out[i] = inv[i];
            } else if (wavelength > lowFreqWavelength) {
                out[i] = inv[i] / factor;
            } else {
                double smooth = (original / wavelength - low) / (high - low);
                out[i] = (1 - smooth) * inv[i] / factor + smooth * inv[i];
            }
        }
        return out;
    }

    /** @return a copy of {@code inv_freq}, D/2 values */
    public double[] inverseFrequencies() {
        return inverseFrequencies.clone();
    }

    /** @return what cos and sin are multiplied by ({@code attention_factor}; 1 but for LongRoPE) */
    public double attentionFactor() {
        return attentionFactor;
    }

    /** @return the head width D */
    public int headDim() {
        return headDim;
    }

    /** @return the number of positions the tables cover */
    public int maxPositions() {
        return maxPositions;
    }

    /**
     * The cos and sin factors of the rotation at the given positions. The rows are gathered once
     * per {@code positionIds} array: the layers of one forward pass, which share it, share them.
     *
     * @param positionIds (B or 1, T) integer positions in {@code [0, maxPositions)}; the results
     *     are attached to its manager
     * @param owner the manager that owns the model's weights on the device the computation runs on;
     *     it owns the tables when they are first made
     * @param dataType the compute type
     * @return {@code cat(cos, cos)} and {@code cat(-sin, sin)}, each (B or 1, 1, T, D),
     *     broadcastable over heads; pass them to {@link #rotate}
     */
    public NDList cosSin(NDArray positionIds, NDManager owner, DataType dataType) {
        synchronized (this) {
            Gathered last = lastGathered;
            if (last != null && last.positionIds() == positionIds && last.dataType() == dataType
                    && !last.cosSin().get(0).isReleased()) {
                return last.cosSin();
            }
        }
        NDArray[] table = tables(owner, dataType);
        NDList cosSin = decodeRows(positionIds, table, dataType);
        if (cosSin != null) {
            synchronized (this) {
                lastGathered = new Gathered(positionIds, dataType, cosSin);
            }
            return cosSin;
        }
        NDArrayEx ex = positionIds.getNDArrayInternal();
        NDArray cos = ex.embedding(positionIds, table[0], SparseFormat.DENSE).singletonOrThrow();
        NDArray sin = ex.embedding(positionIds, table[1], SparseFormat.DENSE).singletonOrThrow();
        cosSin = new NDList(cos.expandDims(1), sin.expandDims(1)); // (B, 1, T, D)
        synchronized (this) {
            lastGathered = new Gathered(positionIds, dataType, cosSin);
        }
        return cosSin;
    }

    /**
     * A decode step's factors, (1, 1, 1, D) each, made from Java copies of the float32 tables' rows
     * on the CPU: two engine calls where the gather and its views take four, each several times its
     * arithmetic's cost at a step's start (docs/PERFORMANCE.md, "A decode step's serial calls"). The
     * rows are the tables' own values, so the factors equal the gathered ones bit for bit.
     *
     * @return the factors, or {@code null} where the positions are not one int64 position on the CPU
     *     or the type not float32 (the caller gathers)
     */
    private NDList decodeRows(NDArray positionIds, NDArray[] table, DataType dataType) {
        Shape shape = positionIds.getShape();
        if (dataType != DataType.FLOAT32 || shape.dimension() != 2 || shape.size() != 1
                || positionIds.getDataType() != DataType.INT64
                || "false".equals(System.getProperty(DECODE_ROWS_PROPERTY))
                || !Device.Type.CPU.equals(positionIds.getDevice().getDeviceType())) {
            return null;
        }
        long position = positionIds.toLongArray()[0];
        if (position < 0 || position >= maxPositions) {
            return null; // the gather names the bad position
        }
        Rows run = rows;
        if (run == null || run.cosTable() != table[0] || table[0].isReleased()
                || position < run.first() || position >= run.first() + run.count()) {
            int count = (int) Math.min(ROW_RUN, maxPositions - position);
            NDIndex span = new NDIndex("{}:{}", position, position + count);
            try (NDArray cos = table[0].get(span); NDArray sin = table[1].get(span)) {
                run = new Rows(table[0], position, count, cos.toFloatArray(), sin.toFloatArray());
            }
            rows = run;
        }
        int from = (int) (position - run.first()) * headDim;
        NDManager manager = positionIds.getManager();
        Shape factor = new Shape(1, 1, 1, headDim);
        return new NDList(
                manager.create(Arrays.copyOfRange(run.cos(), from, from + headDim), factor),
                manager.create(Arrays.copyOfRange(run.sin(), from, from + headDim), factor));
    }

    /**
     * Rotates query or key heads: {@code x * cos + rotate_half(x) * sin}, as {@code x * cos +
     * cat(x2, x1) * sin} with the sign of {@code rotate_half} folded into the sin factor (the same
     * floating-point result: only a negation moves).
     *
     * @param x heads (B, H, T, D); the result is attached to its manager
     * @param cosSin the output of {@link #cosSin} for the same positions
     * @return the rotated heads (B, H, T, D)
     */
    public static NDArray rotate(NDArray x, NDList cosSin) {
        NDList halves = x.split(2, 3); // 2 × (B, H, T, D/2)
        NDArray swapped = halves.get(1).concat(halves.get(0), 3); // cat(x2, x1), (B, H, T, D)
        return x.mul(cosSin.get(0)).addi(swapped.muli(cosSin.get(1)));
    }

    /**
     * The cos and sin tables for a device and type, made on first use.
     *
     * @param owner the manager that owns new tables
     * @param dataType the element type
     * @return {@code cat(cos, cos)} and {@code cat(-sin, sin)}, each (maxPositions, D)
     */
    synchronized NDArray[] tables(NDManager owner, DataType dataType) {
        TableKey key = new TableKey(owner.getDevice(), dataType);
        NDArray[] table = tables.get(key);
        if (table != null && !table[0].isReleased() && !table[1].isReleased()) {
            return table;
        }
        int half = headDim / 2;
        try (NDManager scratch = owner.newSubManager()) {
            NDArray inv = scratch.create(inverseFrequencies).reshape(1, half); // (1, D/2) float64
            NDArray positions =
                    scratch.arange(0, maxPositions, 1, DataType.FLOAT64)
                            .reshape(maxPositions, 1); // (P, 1)
            NDArray angles = positions.mul(inv); // (P, D/2)
            NDArray cosHalf = angles.cos().muli(attentionFactor);
            NDArray sinHalf = angles.sin().muli(attentionFactor);
            NDArray cos = cosHalf.concat(cosHalf, 1).toType(dataType, true); // (P, D)
            NDArray sin = sinHalf.neg().concat(sinHalf, 1).toType(dataType, true); // (P, D)
            cos.attach(owner);
            sin.attach(owner);
            table = new NDArray[] {cos, sin};
        }
        tables.put(key, table);
        return table;
    }
}
