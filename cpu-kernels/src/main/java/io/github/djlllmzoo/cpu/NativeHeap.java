package io.github.djlllmzoo.cpu;

import com.sun.jna.Function;
import com.sun.jna.NativeLibrary;
import com.sun.jna.Platform;

/**
 * The C library's heap, where PyTorch's arrays and the compressed weights' direct buffers live:
 * {@link #trim()} gives the pages of its freed blocks back to the kernel. glibc keeps freed blocks
 * for reuse, and {@code bin/llmzoo} tells it to keep up to 1 GiB, so that a decode step's temporaries
 * are not zeroed again each step; a model's load frees tens of MB there (its fits' and the engine's
 * temporaries) that no step reuses, resident for the process's life unless trimmed once after it,
 * and a server's threads leave freed ranges in their arenas request after request. The call goes
 * through JNA (which DJL ships), so it works whether or not the native kernels load.
 */
public final class NativeHeap {

    /** glibc's {@code malloc_trim}, or {@code null} where the C library has none (not Linux, or not glibc). */
    private static final Function MALLOC_TRIM = mallocTrim();

    private NativeHeap() {}

    private static Function mallocTrim() {
        if (!Platform.isLinux()) {
            return null;
        }
        try {
            return NativeLibrary.getInstance(Platform.C_LIBRARY_NAME).getFunction("malloc_trim");
        } catch (UnsatisfiedLinkError e) {
            return null; // musl and other C libraries have no malloc_trim
        }
    }

    /** @return whether {@link #trim()} can give memory back here (glibc) */
    public static boolean available() {
        return MALLOC_TRIM != null;
    }

    /**
     * Gives the freed pages of every arena of the C library's heap back to the kernel (glibc's
     * {@code malloc_trim(0)}); blocks in use are untouched. Costs a walk over the free blocks: call
     * it after a phase that freed memory, or every so often, not per step.
     *
     * @return whether memory was given back; {@code false} too where the C library is not glibc
     */
    public static boolean trim() {
        return MALLOC_TRIM != null && MALLOC_TRIM.invokeInt(new Object[] {0}) == 1;
    }
}
