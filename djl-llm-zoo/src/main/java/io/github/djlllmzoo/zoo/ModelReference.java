package io.github.djlllmzoo.zoo;

import ai.djl.repository.zoo.ModelNotFoundException;
import io.github.djlllmzoo.zoo.gguf.GgufFile;
import io.github.djlllmzoo.zoo.gguf.GgufHubFiles;
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
 * URL of one; or a llama.cpp GGUF file: a local {@code *.gguf} path, a hub id with the file's name
 * ({@code gguf_file}, as transformers' {@code from_pretrained(..., gguf_file=...)}), or a hub id
 * with a quantization tag ({@code org/name:Q4_K_M}, as llama.cpp's {@code -hf} and Ollama take it).
 * {@link #resolve} turns any of them into a local directory or GGUF file, downloading into (or
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
        return resolve(reference, revision, null, hub);
    }

    /**
     * Resolves a model reference to a local checkpoint directory or GGUF file.
     *
     * @param reference a registry name, hub id (with an optional {@code :TAG} naming a GGUF
     *     quantization), directory or GGUF path, or {@code file://} URL
     * @param revision the hub revision (branch, tag or commit), {@code null} for "main"
     * @param ggufFile the name of a GGUF file of the hub repository to download instead of its
     *     safetensors checkpoint, or {@code null}
     * @param hub the hub client used for hub ids
     * @return the directory, or the GGUF file
     * @throws ModelNotFoundException if the reference names nothing that exists
     * @throws IOException if downloading fails
     */
    public static Path resolve(String reference, String revision, String ggufFile, HubClient hub)
            throws ModelNotFoundException, IOException {
        if (reference == null || reference.isBlank()) {
            throw new ModelNotFoundException("no model given: pass a registry name, hub id or directory");
        }
        int tag = reference.lastIndexOf(':');
        boolean tagged = tag > 0 && !reference.startsWith("file:") && HUB_ID.matcher(reference.substring(0, tag)).matches();
        if (ggufFile != null || tagged) {
            String repo = ggufFile != null ? reference : reference.substring(0, tag);
            String hubId = KnownModel.find(repo).map(KnownModel::hubId).orElse(repo);
            if (!HUB_ID.matcher(hubId).matches()) {
                throw new ModelNotFoundException("'" + repo + "' is not a Hugging Face id like org/name");
            }
            String rev = revision == null ? "main" : revision;
            return ggufFile != null
                    ? GgufHubFiles.download(hub, hubId, rev, ggufFile)
                    : GgufHubFiles.downloadTagged(hub, hubId, rev, reference.substring(tag + 1));
        }
        if (reference.startsWith("file:")) {
            Path dir = Paths.get(URI.create(reference));
            return requireDirectory(reference, dir);
        }
        Path local = Paths.get(reference);
        if (Files.isDirectory(local) || GgufFile.isGguf(local)) {
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
        if (GgufFile.isGguf(dir)) {
            return dir;
        }
        if (!Files.isDirectory(dir)) {
            throw new ModelNotFoundException("model directory not found: " + reference);
        }
        return dir;
    }
}
