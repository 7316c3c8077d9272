package io.github.djlllmzoo.cpu;

import ai.djl.pytorch.jni.JniUtils;

/**
 * PyTorch's thread counts as the calling thread sees them. PyTorch keeps the intra-op count per
 * thread (OpenMP's and MKL's thread-local settings), and DJL sets it from {@link
 * #INTRA_OP_PROPERTY} only on the thread that starts the engine.
 */
public final class TorchThreads {

    /** DJL's system property for PyTorch's intra-op thread count. */
    public static final String INTRA_OP_PROPERTY = "ai.djl.pytorch.num_threads";

    /** DJL's system property for PyTorch's inter-op thread count. */
    public static final String INTER_OP_PROPERTY = "ai.djl.pytorch.num_interop_threads";

    private TorchThreads() {}

    /** @return the calling thread's intra-op thread count */
    public static int intraOp() {
        return JniUtils.getNumThreads();
    }

    /** @return PyTorch's inter-op thread count */
    public static int interOp() {
        return JniUtils.getNumInteropThreads();
    }

    /**
     * Sets the calling thread's intra-op thread count.
     *
     * @param threads the count
     */
    public static void setIntraOp(int threads) {
        JniUtils.setNumThreads(threads);
    }
}
