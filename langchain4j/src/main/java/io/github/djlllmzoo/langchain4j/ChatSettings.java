package io.github.djlllmzoo.langchain4j;

/**
 * What a chat model built over a local model holds besides the model: its name, whether a reply
 * may call several tools, the sampler's seed.
 *
 * @param modelName the name reported in responses (and the only {@code modelName} a request may
 *     name)
 * @param parallelToolCalls whether a reply may hold several calls (where the family can write
 *     them)
 * @param seed the sampler's seed, or null for a fresh one per request
 */
record ChatSettings(
        String modelName,
        boolean parallelToolCalls,
        Long seed) {}
