package io.github.djlllmzoo.cpu;

/** CPU kernels made with some kernels switched off, as {@code -Dllmzoo.cpu.off} makes them. */
final class SwitchedKernels {

    private SwitchedKernels() {}

    /**
     * @param names the kernels to switch off, as {@code -Dllmzoo.cpu.off} lists them
     * @return CPU kernels made with those off (the property cleared again after)
     */
    static CpuKernels without(String names) {
        System.setProperty(KernelSwitches.PROPERTY, names);
        try {
            return new CpuKernels(true, true);
        } finally {
            System.clearProperty(KernelSwitches.PROPERTY);
        }
    }
}
