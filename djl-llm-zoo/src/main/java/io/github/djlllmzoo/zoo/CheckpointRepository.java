package io.github.djlllmzoo.zoo;

import ai.djl.Application;
import ai.djl.repository.AbstractRepository;
import ai.djl.repository.Artifact;
import ai.djl.repository.MRL;
import ai.djl.repository.Metadata;
import ai.djl.repository.zoo.ModelNotFoundException;
import ai.djl.util.Progress;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.blocks.config.Configs;
import io.github.djlllmzoo.translators.GenerationTranslatorFactory;
import io.github.djlllmzoo.zoo.hub.HubClient;
import java.io.IOException;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

/**
 * One checkpoint as a DJL {@link ai.djl.repository.Repository}: a local Hugging Face-layout
 * directory, or a registry name or hub id that {@link #prepare} downloads into the Hugging Face
 * cache. Its single artifact tells DJL's model loader to build the block with {@link
 * CheckpointBlockFactory} on the PyTorch engine and to translate with {@link
 * GenerationTranslatorFactory}; the URL's query arguments ({@code dtype}, {@code revision}, {@code
 * HF_*}, generation settings) are the artifact's arguments.
 */
final class CheckpointRepository extends AbstractRepository {

    private final Path dir;
    private final String reference;
    private final String artifactId;
    private final Artifact artifact;
    private volatile Path snapshot;

    private CheckpointRepository(String name, URI uri, Path dir, String reference, String artifactId) {
        super(name, uri);
        this.dir = dir;
        this.reference = reference;
        this.artifactId = artifactId;
        this.artifact = artifact(artifactId, arguments);
    }

    /** A repository of a local checkpoint directory (see {@link #isCheckpoint}). */
    static CheckpointRepository ofDirectory(String name, URI uri, Path dir) {
        Path absolute = dir.toAbsolutePath().normalize();
        return new CheckpointRepository(name, uri, absolute, null, absolute.getFileName().toString());
    }

    /** A repository of a registry name or Hugging Face id, downloaded when prepared. */
    static CheckpointRepository ofHub(String name, URI uri, String reference) {
        return new CheckpointRepository(name, uri, null, reference, reference);
    }

    /**
     * Whether DJL should load a directory through this project: a {@code config.json} of a family
     * the project implements (an invalid field in it still counts, so the load names the field),
     * and neither a TorchScript {@code .pt} file nor a {@code serving.properties}, which belong to
     * DJL's own loading.
     */
    static boolean isCheckpoint(Path dir) {
        if (!Files.isDirectory(dir) || Files.exists(dir.resolve("serving.properties"))) {
            return false;
        }
        try (Stream<Path> files = Files.list(dir)) {
            if (files.anyMatch(f -> f.getFileName().toString().endsWith(".pt"))) {
                return false;
            }
        } catch (IOException e) {
            return false;
        }
        try {
            Configs.read(dir);
            return true;
        } catch (InvalidCheckpointException e) {
            // No config.json, not JSON, or a model_type of another family: not ours.
            return e.getField() != null && !"model_type".equals(e.getField());
        }
    }

    private static Artifact artifact(String artifactId, Map<String, String> query) {
        Artifact artifact = new Artifact();
        artifact.setName(artifactId.substring(artifactId.lastIndexOf('/') + 1));
        Map<String, Object> arguments = new HashMap<>(query);
        arguments.put("engine", CheckpointBlockFactory.ENGINE);
        arguments.put("blockFactory", new CheckpointBlockFactory());
        arguments.put("translatorFactory", GenerationTranslatorFactory.class.getName());
        artifact.setArguments(arguments);
        // The block factory has given the block its weights: DJL must not look for a .params file.
        artifact.setOptions(Map.of("hasParameter", "false"));
        artifact.setFiles(Map.of());
        Metadata metadata = new Metadata.MatchAllMetadata();
        metadata.setGroupId(LlmModelZoo.GROUP_ID);
        metadata.setArtifactId(artifactId);
        metadata.setRepositoryUri(URI.create(""));
        metadata.setArtifacts(List.of(artifact));
        artifact.setMetadata(metadata);
        return artifact;
    }

    @Override
    public boolean isRemote() {
        return dir == null;
    }

    @Override
    public Metadata locate(MRL mrl) {
        return artifact.getMetadata();
    }

    @Override
    public Artifact resolve(MRL mrl, Map<String, String> filter) {
        return artifact;
    }

    /** Downloads a hub model into the Hugging Face cache (or finds it there); nothing for a directory. */
    @Override
    public void prepare(Artifact artifact, Progress progress) throws IOException {
        if (dir == null && snapshot == null) {
            snapshot = snapshot(false);
        }
    }

    @Override
    public Path getResourceDirectory(Artifact artifact) throws IOException {
        if (dir != null) {
            return dir;
        }
        if (snapshot != null) {
            return snapshot;
        }
        try {
            return snapshot(true);
        } catch (IOException e) {
            // Not in the cache: where the revision's snapshot would be, so DJL sees it as not
            // downloaded (the exact place for a commit hash; a branch's commit is not known yet).
            try {
                return hub(true).cache().snapshotDir(hubId(), revision());
            } catch (IllegalArgumentException invalid) {
                throw new IOException(invalid.getMessage(), e);
            }
        }
    }

    @Override
    public Path getCacheDirectory() {
        return dir != null ? dir : hub(true).config().cacheDir();
    }

    @Override
    public List<MRL> getResources() {
        return List.of(model(Application.NLP.TEXT_GENERATION, LlmModelZoo.GROUP_ID, artifactId, null, null));
    }

    private Path snapshot(boolean offline) throws IOException {
        try {
            return ModelReference.resolve(reference, revision(), hub(offline));
        } catch (ModelNotFoundException e) {
            // DJL's Repository.prepare may only throw IOException; the message says what is missing.
            throw new IOException(
                    e.getMessage() + " A local checkpoint directory loads with optModelPath(Paths.get(dir)).", e);
        }
    }

    private HubClient hub(boolean offline) {
        return ZooArguments.hub(arguments, offline);
    }

    private String hubId() {
        return KnownModel.find(reference).map(KnownModel::hubId).orElse(reference);
    }

    private String revision() {
        String revision = arguments.get("revision");
        return revision == null ? HubClient.DEFAULT_REVISION : revision;
    }
}
