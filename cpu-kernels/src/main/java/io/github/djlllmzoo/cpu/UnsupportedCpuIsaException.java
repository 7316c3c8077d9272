package io.github.djlllmzoo.cpu;

/**
 * {@code -Dllmzoo.cpu.isa} names an instruction set this CPU lacks, one this build has no library
 * for, or no instruction set at all: refused when the kernels are first chosen (a model's load), so a
 * forced variant never silently falls back to another.
 */
public final class UnsupportedCpuIsaException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    /** @param message what was asked for and why it cannot run */
    public UnsupportedCpuIsaException(String message) {
        super(message);
    }
}
