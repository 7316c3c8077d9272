package io.github.djlllmzoo.cpu;

/**
 * The C library's heap, where PyTorch's arrays and the compressed weights' direct buffers live:
 * {@link #trim()} gives the pages of its freed blocks back to the kernel ({@code
 * cpu-kernels/src/main/native/native_heap.c}). glibc keeps freed blocks for reuse, and {@code
 * bin/llmzoo} tells it to keep up to 1 GiB, so that a decode step's temporaries are not zeroed again
 * each step; a model's load frees tens of MB there (its fits' and the engine's temporaries) that no
 * step reuses, resident for the process's life unless trimmed once after it.
 */
public final class NativeHeap {

    private NativeHeap() {}

    /**
     * Gives the freed pages of every arena of the C library's heap back to the kernel (glibc's
     * {@code malloc_trim(0)}); blocks in use are untouched. Costs a walk over the free blocks: call
     * it after a phase that freed memory, not per step.
     *
     * @return whether memory was given back; {@code false} too where the native kernels are not
     *     loaded or the C library is not glibc
     */
    public static boolean trim() {
        return NativeKernels.loaded() && trim0();
    }

    private static native boolean trim0();
}
