package io.github.djlllmzoo.zoo;

import ai.djl.repository.zoo.ModelZoo;
import ai.djl.repository.zoo.ZooProvider;

/** Registers {@link LlmModelZoo} with DJL (through {@code META-INF/services}). */
public final class LlmZooProvider implements ZooProvider {

    static {
        EngineDefaults.apply();
    }

    @Override
    public ModelZoo getModelZoo() {
        return new LlmModelZoo();
    }
}
