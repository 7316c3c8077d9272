package io.github.djlllmzoo.cpu;

import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * The one switch that turns individual native kernels off: {@code -Dllmzoo.cpu.off=name,name}, for
 * measuring a kernel against the path it replaced (the benchmarks' {@code KernelSwitchSteps}) and for
 * tests that prove both paths equal. It replaces a boolean property per kernel ({@code
 * -Dllmzoo.cpu.off=decodeOps} is {@code -Dllmzoo.cpu.off=decodeOps}); which instruction set runs, or none,
 * is {@code -Dllmzoo.cpu.isa}'s ({@link CpuIsa}).
 */
final class KernelSwitches {

    /** The system property: a comma-separated list of {@link #NAMES}. */
    static final String PROPERTY = "llmzoo.cpu.off";

    /** Every name the list takes, each a kernel or a variant of one (docs/cpu-kernels.md says what each does). */
    static final List<String> NAMES = List.of(
            FewRowProduct.SWITCH,
            FewRowProduct.FOUR_ROWS_SWITCH,
            FewRowProduct.BY_ROWS_SWITCH,
            DecodeAttention.SWITCH,
            DecodeAttention.WRITE_SWITCH,
            PrefillAttention.SWITCH,
            CompressedProduct.SWITCH,
            CompressedProduct.DOT_SWITCH,
            CompressedProduct.VNNI_BLOCKS_SWITCH,
            CompressedProduct.PREPARED_SWITCH,
            CompressedGemm.SWITCH,
            DecodeOps.SWITCH,
            DecodeOps.LAYER_NORM_SWITCH,
            DecodeOps.COLUMNS_SWITCH,
            DecodeOps.ROTATE_IN_PLACE_SWITCH,
            DecodeOps.ROTATE_PAIR_SWITCH,
            DecodeOps.ARG_MAX_SWITCH,
            DecodeOps.NORMED_PRODUCTS_SWITCH,
            FusedProducts.GATED_SWITCH,
            FusedProducts.RESIDUAL_SWITCH,
            FusedProducts.RESIDUAL_BIAS_SWITCH,
            CoreWorkers.DYNAMIC_SPLIT_SWITCH,
            CpuKernels.PROJECT_ALL_SWITCH,
            LoraUpdate.SWITCH);

    private KernelSwitches() {}

    /**
     * The names {@code -Dllmzoo.cpu.off} lists.
     *
     * @return the names, possibly empty
     * @throws IllegalArgumentException naming the first entry that is not one of {@link #NAMES}
     */
    static Set<String> off() {
        Set<String> off = new LinkedHashSet<>();
        for (String name : System.getProperty(PROPERTY, "").split(",")) {
            String trimmed = name.trim();
            if (trimmed.isEmpty()) {
                continue;
            }
            if (!NAMES.contains(trimmed)) {
                throw new IllegalArgumentException("-D" + PROPERTY + ": unknown kernel '" + trimmed + "' (known: "
                        + String.join(", ", NAMES) + ")");
            }
            off.add(trimmed);
        }
        return off;
    }

    /**
     * @param name one of {@link #NAMES}
     * @return whether {@code -Dllmzoo.cpu.off} leaves it on (it then runs where a library is loaded)
     */
    static boolean on(String name) {
        return !off().contains(name);
    }

    /**
     * The list with these names in it, for a test or benchmark to set.
     *
     * @param names kernels to turn off
     * @return the property's value
     */
    static String list(String... names) {
        return String.join(",", Arrays.asList(names));
    }
}
