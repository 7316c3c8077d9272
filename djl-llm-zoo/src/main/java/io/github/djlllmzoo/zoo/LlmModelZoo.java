package io.github.djlllmzoo.zoo;

import ai.djl.repository.zoo.ModelZoo;
import java.util.Set;

/**
 * The djl-llm-zoo model zoo (group id {@value #GROUP_ID}): one {@link LlmModelLoader} per
 * {@link KnownModel}, reachable through {@code Criteria.optArtifactId(name)}, plus a loader for any
 * other model named by the {@code "model"} argument (a Hugging Face id, a directory or a
 * {@code file://} URL): {@code Criteria.optGroupId(GROUP_ID).optArgument("model", "org/name")}.
 * DJL's model URLs reach the same models without a group id ({@code
 * optModelUrls("djl://io.github.djlllmzoo/gpt2")}, {@code optModelPath(dir)}): see {@link
 * CheckpointRepositoryFactory}.
 */
public final class LlmModelZoo extends ModelZoo {

    /** The group id of this zoo. */
    public static final String GROUP_ID = "io.github.djlllmzoo";

    /** The artifact id of the loader that takes any model through the {@code "model"} argument. */
    public static final String ANY_MODEL = "any";

    /** Creates the zoo with every known model. */
    public LlmModelZoo() {
        for (KnownModel model : KnownModel.ALL) {
            addModel(new LlmModelLoader(model.name(), model.name()));
        }
        addModel(new LlmModelLoader(ANY_MODEL, null));
    }

    @Override
    public String getGroupId() {
        return GROUP_ID;
    }

    @Override
    public Set<String> getSupportedEngines() {
        return Set.of("PyTorch");
    }
}
