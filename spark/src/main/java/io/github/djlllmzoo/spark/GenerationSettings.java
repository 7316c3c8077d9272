package io.github.djlllmzoo.spark;

import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationOverrides;
import java.io.Serializable;
import java.nio.charset.StandardCharsets;

/**
 * The generation controls an {@link LlmGenerator} sets, shipped to the executors, where they
 * override the checkpoint's {@code generation_config.json} defaults exactly as {@code bin/llmzoo
 * generate}'s options do ({@link GenerationOverrides}), and the job's seed, from which each row's
 * sampler seed derives.
 *
 * @param overrides the controls ({@code null} fields keep the checkpoint's values; no seed: it is
 *     per row)
 * @param seed the job's seed
 */
record GenerationSettings(GenerationOverrides overrides, long seed) implements Serializable {

    private static final long serialVersionUID = 1L;

    /**
     * Applies the settings to a checkpoint's defaults.
     *
     * @param defaults the checkpoint's defaults
     * @return the config of the job (the seed is per row: {@link #rowSeed})
     * @throws IllegalArgumentException naming the field whose value is out of range
     */
    GenerationConfig apply(GenerationConfig.Builder defaults) {
        return overrides.applyTo(defaults).build();
    }

    /**
     * A row's sampler seed: the job's seed mixed with a 64-bit FNV-1a hash of the row's key (its id,
     * or its prompt), so a retried or speculative task samples every row as the first attempt did,
     * whatever partition or batch the row lands in.
     *
     * @param key the row's id or prompt
     * @return the seed
     */
    long rowSeed(String key) {
        long hash = 0xcbf29ce484222325L;
        for (byte b : key.getBytes(StandardCharsets.UTF_8)) {
            hash = (hash ^ (b & 0xff)) * 0x100000001b3L;
        }
        return mix(seed ^ mix(hash));
    }

    /** SplitMix64's finalizer: nearby inputs give unrelated seeds. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }
}
