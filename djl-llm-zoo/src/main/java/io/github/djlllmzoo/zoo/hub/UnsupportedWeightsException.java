package io.github.djlllmzoo.zoo.hub;

import ai.djl.repository.zoo.ModelNotFoundException;
import java.util.List;

/**
 * The repository has no safetensors weights ({@code model.safetensors} or {@code
 * model.safetensors.index.json}); only safetensors checkpoints are supported.
 */
public class UnsupportedWeightsException extends ModelNotFoundException {

    private static final long serialVersionUID = 1L;

    private final String repoId;
    private final List<String> weightFiles;

    /**
     * Creates an exception for a repository without safetensors weights.
     *
     * @param repoId the repository
     * @param revision the revision looked at
     * @param weightFiles the weight files the repository does have, e.g. {@code
     *     pytorch_model.bin}
     */
    public UnsupportedWeightsException(String repoId, String revision, List<String> weightFiles) {
        super(
                "Model '"
                        + repoId
                        + "' (revision '"
                        + revision
                        + "') has no safetensors weights ("
                        + (weightFiles.isEmpty()
                                ? "no weight files at all"
                                : "found only " + String.join(", ", weightFiles))
                        + "). Only model.safetensors or model.safetensors.index.json checkpoints"
                        + " are supported: pick a revision that has them, or convert the model"
                        + " with transformers' save_pretrained(..., safe_serialization=True).");
        this.repoId = repoId;
        this.weightFiles = List.copyOf(weightFiles);
    }

    /** @return the repository id */
    public String getRepoId() {
        return repoId;
    }

    /** @return the non-safetensors weight files the repository has */
    public List<String> getWeightFiles() {
        return weightFiles;
    }
}
