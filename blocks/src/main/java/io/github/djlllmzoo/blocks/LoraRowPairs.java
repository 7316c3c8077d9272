package io.github.djlllmzoo.blocks;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDArrays;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.util.Arrays;
import java.util.List;

/**
 * One projection's LoRA pairs for a batch whose rows each have an adapter of their own ({@link
 * LoraAdapter#selectRows}), as {@link Kernels#loraUpdate} takes them: the pairs of the adapters the
 * rows use, concatenated along the rank, {@code A = [A_1; ...; A_n]} (R, in) and {@code B^T = [B_1,
 * ..., B_n]^T} (R, out), both dense, and for each row of the batch the rank columns of its own
 * adapter ({@link #firstColumn}, {@link #rank}, none for a row whose adapter does not adapt the
 * projection) and that adapter's {@code alpha / r}.
 *
 * <p>The engine's form of the update also needs {@code A^T} (a view) and the row masks (B, 1, R),
 * each row's {@code alpha / r} on its own adapter's columns and zeros elsewhere; they are made with
 * the pairs, once per selection, not at every pass.
 */
public final class LoraRowPairs {

    private final NDArray a;
    private final NDArray aTransposed;
    private final NDArray bTransposed;
    private final NDArray mask;
    private final int[] firstColumns;
    private final int[] ranks;
    private final float[] scalings;

    /**
     * Concatenates the pairs of the adapters a batch's rows use.
     *
     * @param manager the manager that owns the concatenated arrays (they outlive the step that
     *     first asks)
     * @param as each adapter's A, (r_i, in)
     * @param bs each adapter's B, (out, r_i), in the same order
     * @param scalings each adapter's {@code alpha / r_i}, in the same order
     * @param adapterOfRow each row's index in those lists, or -1 for a row without an update
     * @return the pairs for the batch
     * @throws IllegalArgumentException if the lists are empty or of different lengths, or a row's
     *     index is out of range
     */
    public static LoraRowPairs concatenate(
            NDManager manager, List<NDArray> as, List<NDArray> bs, float[] scalings, int[] adapterOfRow) {
        if (as.isEmpty() || as.size() != bs.size() || as.size() != scalings.length) {
            throw new IllegalArgumentException("LoRA pairs: " + as.size() + " A matrices, " + bs.size()
                    + " B matrices and " + scalings.length + " scalings, expected as many of each, at least one");
        }
        int[] firstOfAdapter = new int[as.size()];
        int total = 0;
        for (int i = 0; i < as.size(); i++) {
            firstOfAdapter[i] = total;
            total += Math.toIntExact(as.get(i).getShape().get(0));
        }
        int rows = adapterOfRow.length;
        int[] first = new int[rows];
        int[] ranks = new int[rows];
        float[] rowScalings = new float[rows];
        float[] mask = new float[rows * total];
        for (int row = 0; row < rows; row++) {
            int adapter = adapterOfRow[row];
            if (adapter < -1 || adapter >= as.size()) {
                throw new IllegalArgumentException(
                        "LoRA pairs: row " + row + " names adapter " + adapter + " of " + as.size());
            }
            if (adapter >= 0) {
                first[row] = firstOfAdapter[adapter];
                ranks[row] = Math.toIntExact(as.get(adapter).getShape().get(0));
                rowScalings[row] = scalings[adapter];
                Arrays.fill(mask, row * total + first[row], row * total + first[row] + ranks[row], scalings[adapter]);
            }
        }
        NDArray a = as.size() == 1 ? as.get(0).duplicate() : NDArrays.concat(new NDList(as), 0); // (R, in)
        NDArray b = bs.size() == 1 ? bs.get(0) : NDArrays.concat(new NDList(bs), 1); // (out, R)
        NDArray view = b.transpose(); // (R, out), strided
        // reshape copies a view it cannot keep into a dense array (a clone would keep the strides)
        NDArray flat = view.reshape(-1); // (R out), dense
        NDArray bT = flat.reshape(total, b.getShape().get(0)); // (R, out)
        view.close();
        flat.close();
        if (b != bs.get(0)) {
            b.close();
        }
        a.attach(manager);
        bT.attach(manager);
        DataType type = a.getDataType();
        NDArray m = manager.create(mask, new Shape(rows, 1, total)); // (B, 1, R)
        return new LoraRowPairs(a, bT, m.getDataType() == type ? m : m.toType(type, false), first, ranks, rowScalings);
    }

    /**
     * @param a the adapters' A concatenated, (R, in), dense
     * @param bTransposed the adapters' B concatenated and transposed, (R, out), dense
     * @param mask the row masks, (B, 1, R), in the pairs' element type
     * @param firstColumns each row's first rank column
     * @param ranks each row's rank (0: no update)
     * @param scalings each row's {@code alpha / r}
     */
    LoraRowPairs(NDArray a, NDArray bTransposed, NDArray mask, int[] firstColumns, int[] ranks, float[] scalings) {
        this.a = a;
        this.aTransposed = a.transpose(); // a view, made once
        this.aTransposed.attach(a.getManager());
        this.bTransposed = bTransposed;
        this.mask = mask;
        this.firstColumns = firstColumns.clone();
        this.ranks = ranks.clone();
        this.scalings = scalings.clone();
    }

    /** @return the adapters' A concatenated, (R, in), dense */
    public NDArray a() {
        return a;
    }

    /** @return the adapters' B concatenated and transposed, (R, out), dense */
    public NDArray bTransposed() {
        return bTransposed;
    }

    /** @return the rows of the batch */
    public int rows() {
        return ranks.length;
    }

    /** @return R, the adapters' ranks summed */
    public int totalRank() {
        return Math.toIntExact(a.getShape().get(0));
    }

    /**
     * @param row a row of the batch
     * @return the first of its adapter's rank columns in {@link #a} and {@link #bTransposed}
     */
    public int firstColumn(int row) {
        return firstColumns[row];
    }

    /**
     * @param row a row of the batch
     * @return its adapter's rank, 0 where it adds no update to this projection
     */
    public int rank(int row) {
        return ranks[row];
    }

    /**
     * @param row a row of the batch
     * @return its adapter's {@code alpha / r}
     */
    public float scaling(int row) {
        return scalings[row];
    }

    /** @return {@code A^T}, (in, R), a view of {@link #a} */
    NDArray aTransposed() {
        return aTransposed;
    }

    /** @return the row masks, (B, 1, R) */
    NDArray mask() {
        return mask;
    }
}
