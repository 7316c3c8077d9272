package io.github.djlllmzoo.zoo;

import ai.djl.repository.LocalRepository;
import ai.djl.repository.Metadata;
import ai.djl.repository.RemoteRepository;
import ai.djl.repository.Repository;
import ai.djl.repository.RepositoryFactory;
import ai.djl.repository.SimpleRepository;
import ai.djl.repository.MRL;
import ai.djl.repository.zoo.ModelLoader;
import ai.djl.repository.zoo.ModelZoo;
import ai.djl.util.JsonUtils;
import com.google.gson.JsonParseException;
import java.io.IOException;
import java.io.Reader;
import java.net.URI;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Lets DJL's standard model URLs name this project's checkpoints (registered through {@code
 * META-INF/services}, so it takes over DJL's {@code file} and {@code djl} schemes):
 *
 * <ul>
 *   <li>{@code Criteria.optModelPath(dir)} and {@code optModelUrls("file:///dir")}: a Hugging
 *       Face-layout checkpoint directory of a family this project implements (see {@link
 *       CheckpointRepository#isCheckpoint}) loads as a generation model;
 *   <li>{@code optModelUrls("djl://io.github.djlllmzoo/gpt2")}: a registry name, or a Hugging Face
 *       id {@code djl://io.github.djlllmzoo/org/name}, downloads into the Hugging Face cache
 *       ({@code ?revision=} and {@code ?HF_ENDPOINT=}-style query arguments apply to that load).
 * </ul>
 *
 * Every other {@code file} and {@code djl} URL gets the repository DJL 0.35.1's own factory makes
 * for it (the same classes, built the same way), so other models load as before.
 */
public final class CheckpointRepositoryFactory implements RepositoryFactory {

    static {
        EngineDefaults.apply();
    }

    /** DJL's {@code djl://group/artifact/version/name} form. */
    private static final Pattern DJL_VERSIONED = Pattern.compile("(.+)/([\\d.]+)(/(.*))?");

    @Override
    public Set<String> getSupportedScheme() {
        return Set.of("file", "djl");
    }

    @Override
    public Repository newInstance(String name, URI uri) {
        return "djl".equals(uri.getScheme()) ? djl(name, uri) : file(name, uri);
    }

    private static Repository file(String name, URI uri) {
        Path path = Paths.get(filePath(uri));
        if (CheckpointRepository.isCheckpoint(path)) {
            return CheckpointRepository.ofDirectory(name, uri, path);
        }
        if (Files.isDirectory(path) && hasLocalRepositoryMetadata(path)) {
            return new LocalRepository(name, path.toUri(), path) {};
        }
        return new SimpleRepository(name, uri, path) {};
    }

    private static Repository djl(String name, URI uri) {
        String groupId = uri.getHost();
        String artifactId = filePath(uri);
        if (artifactId.startsWith("/")) {
            artifactId = artifactId.substring(1);
        }
        if (groupId == null || artifactId.isEmpty()) {
            throw new IllegalArgumentException("Invalid djl URL: " + uri);
        }
        if (LlmModelZoo.GROUP_ID.equals(groupId)) {
            return CheckpointRepository.ofHub(name, uri, registryOrHubId(uri, artifactId));
        }
        return djlModelZoo(name, uri, groupId, artifactId);
    }

    private static String registryOrHubId(URI uri, String artifactId) {
        if (KnownModel.find(artifactId).isPresent() || ModelReference.isRepositoryId(artifactId)) {
            return artifactId;
        }
        throw new IllegalArgumentException(
                uri + ": '" + artifactId + "' is neither a registry model ("
                        + KnownModel.ALL.stream().map(KnownModel::name).collect(Collectors.joining(", "))
                        + ") nor a Hugging Face id org/name. A local checkpoint loads with"
                        + " optModelPath(Paths.get(dir)) or optModelUrls(\"file:///dir\").");
    }

    /** DJL's handling of a {@code djl://} URL of another zoo: the zoo's model on DJL's repository. */
    private static Repository djlModelZoo(String name, URI uri, String groupId, String artifactId) {
        String query = uri.getQuery();
        RemoteRepository repo =
                new RemoteRepository(
                        name, URI.create("https://mlrepo.djl.ai/" + (query != null ? "?" + query : "")));
        String version = null;
        String artifactName = null;
        Matcher m = DJL_VERSIONED.matcher(artifactId);
        if (m.matches()) {
            artifactId = m.group(1);
            version = m.group(2);
            artifactName = m.group(4);
        }
        ModelZoo zoo = ModelZoo.getModelZoo(groupId);
        if (zoo == null) {
            throw new IllegalArgumentException("ModelZoo not found in classpath: " + groupId);
        }
        ModelLoader loader = zoo.getModelLoader(artifactId);
        if (loader == null) {
            throw new IllegalArgumentException("Invalid djl URL: " + uri);
        }
        MRL mrl = repo.model(loader.getApplication(), groupId, artifactId, version, artifactName);
        repo.addResource(mrl);
        return repo;
    }

    /** DJL's test for a directory laid out as its local repository: a metadata.json below the root. */
    private static boolean hasLocalRepositoryMetadata(Path root) {
        try (Stream<Path> files = Files.walk(root)) {
            return files.anyMatch(f -> isRepositoryMetadata(root, f));
        } catch (IOException e) {
            return false;
        }
    }

    private static boolean isRepositoryMetadata(Path root, Path file) {
        if (!Files.isRegularFile(file)
                || root.equals(file.getParent())
                || !"metadata.json".equals(file.getFileName().toString())) {
            return false;
        }
        try (Reader reader = Files.newBufferedReader(file)) {
            Metadata metadata = JsonUtils.GSON.fromJson(reader, Metadata.class);
            return metadata.getMetadataVersion() != null && metadata.getArtifacts() != null;
        } catch (IOException | JsonParseException e) {
            return false;
        }
    }

    /** The file path of a {@code file:}, {@code djl:} or scheme-less URI, as DJL reads it. */
    private static String filePath(URI uri) {
        String path = uri.getPath();
        if (path == null) {
            path = uri.getSchemeSpecificPart();
        }
        if (path.startsWith("file:")) {
            path = path.substring(5);
        }
        if (path.startsWith("/") && System.getProperty("os.name").startsWith("Win")) {
            path = path.substring(1);
        }
        return path;
    }
}
