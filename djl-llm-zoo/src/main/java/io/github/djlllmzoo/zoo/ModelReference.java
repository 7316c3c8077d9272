package io.github.djlllmzoo.zoo;

import ai.djl.repository.zoo.ModelNotFoundException;
import io.github.djlllmzoo.zoo.hub.HubClient;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.regex.Pattern;

/**
 * What a user may pass as a model: a registry name ({@code gpt2}), a Hugging Face repository id
 * ({@code TinyLlama/TinyLlama-1.1B-Chat-v1.0}), a local checkpoint directory, or a {@code file://}
 * URL of one. {@link #resolve} turns any of them into a local directory, downloading into (or
 * reusing) the Hugging Face cache for hub ids.
 */
public final class ModelReference {

    private static final Pattern HUB_ID =
            Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)?");

    private ModelReference() {}

    /**
     * Resolves a model reference to a local checkpoint directory.
     *
     * @param reference a registry name, hub id, directory path or {@code file://} URL
     * @param revision the hub revision (branch, tag or commit), {@code null} for "main"
     * @param hub the hub client used for hub ids
     * @return the directory
     * @throws ModelNotFoundException if the reference names nothing that exists
     * @throws IOException if downloading fails
     */
    public static Path resolve(String reference, String revision, HubClient hub)
            throws ModelNotFoundException, IOException {
        if (reference == null || reference.isBlank()) {
            throw new ModelNotFoundException("no model given: pass a registry name, hub id or directory");
        }
        if (reference.startsWith("file:")) {
            Path dir = Paths.get(URI.create(reference));
            return requireDirectory(reference, dir);
        }
        Path local = Paths.get(reference);
        if (Files.isDirectory(local)) {
            return local;
        }
        if (looksLikePath(reference)) {
            return requireDirectory(reference, local);
        }
        String hubId = KnownModel.find(reference).map(KnownModel::hubId).orElse(reference);
        if (!HUB_ID.matcher(hubId).matches()) {
            throw new ModelNotFoundException(
                    "'" + reference + "' is neither a registry name (see llmzoo models), a Hugging Face"
                            + " id like org/name, nor an existing directory");
        }
        return hub.snapshot(hubId, revision == null ? "main" : revision);
    }

    /**
     * Whether a string has the form of a Hugging Face repository id with its owner, {@code
     * org/name}.
     */
    static boolean isRepositoryId(String reference) {
        return reference.indexOf('/') > 0 && HUB_ID.matcher(reference).matches();
    }

    private static boolean looksLikePath(String reference) {
        return reference.startsWith("/")
                || reference.startsWith("./")
                || reference.startsWith("../")
                || reference.startsWith("~")
                || reference.contains("\\")
                || reference.chars().filter(c -> c == '/').count() > 1;
    }

    private static Path requireDirectory(String reference, Path dir) throws ModelNotFoundException {
        if (!Files.isDirectory(dir)) {
            throw new ModelNotFoundException("model directory not found: " + reference);
        }
        return dir;
    }
}
