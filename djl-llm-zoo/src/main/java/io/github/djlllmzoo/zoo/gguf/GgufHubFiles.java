package io.github.djlllmzoo.zoo.gguf;

import ai.djl.repository.zoo.ModelNotFoundException;
import io.github.djlllmzoo.zoo.hub.HubClient;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * GGUF files of a Hugging Face repository, downloaded through the hub client and its cache: one
 * named by its file name, or the one a quantization tag names ({@code Q4_K_M} picks {@code
 * model-Q4_K_M.gguf}), as llama.cpp's {@code -hf org/name:TAG} does. A split file ({@code
 * model-Q4_K_M-00001-of-00003.gguf}, named by its first part or by the tag its parts carry) comes
 * down whole: every part into the same snapshot directory, where {@link GgufFile#open} finds them.
 */
public final class GgufHubFiles {

    private GgufHubFiles() {}

    /**
     * Downloads one GGUF file of a repository (or finds it in the cache).
     *
     * @param hub the hub client
     * @param repoId the repository
     * @param revision a branch, tag or commit
     * @param filename the file's path in the repository, ending in {@code .gguf}
     * @return the cached file
     * @throws IOException if the download fails
     * @throws ModelNotFoundException if the repository or file does not exist
     */
    public static Path download(HubClient hub, String repoId, String revision, String filename)
            throws IOException, ModelNotFoundException {
        if (!isGgufName(filename)) {
            throw new ModelNotFoundException("gguf file '" + filename + "' of " + repoId + " does not end in .gguf");
        }
        Matcher split = GgufFile.SPLIT_NAME.matcher(filename);
        if (!split.matches()) {
            return hub.file(repoId, revision, filename);
        }
        int count = Integer.parseInt(split.group(3));
        if (Integer.parseInt(split.group(2)) != 1) {
            throw new ModelNotFoundException("gguf file '" + filename + "' of " + repoId + " is not the first part of"
                    + " its split file; pass " + GgufFile.partName(split.group(1), 1, count));
        }
        Path first = hub.file(repoId, revision, filename);
        for (int i = 2; i <= count; i++) {
            hub.file(repoId, revision, GgufFile.partName(split.group(1), i, count));
        }
        return first;
    }

    /**
     * Downloads the GGUF file of a repository whose name carries a quantization tag.
     *
     * @param hub the hub client
     * @param repoId the repository
     * @param revision a branch, tag or commit
     * @param tag e.g. {@code Q4_K_M} (any case)
     * @return the cached file
     * @throws IOException if listing or downloading fails
     * @throws ModelNotFoundException if no single GGUF file of the repository carries the tag
     */
    public static Path downloadTagged(HubClient hub, String repoId, String revision, String tag)
            throws IOException, ModelNotFoundException {
        List<String> ggufs = new ArrayList<>();
        Set<String> tagged = new LinkedHashSet<>();
        Pattern word = Pattern.compile("(?i).*(^|[-_./])" + Pattern.quote(tag) + "([-_.].*)?\\.gguf");
        for (String name : hub.repoInfo(repoId, revision).siblings()) {
            if (isGgufName(name) && !name.toLowerCase(Locale.ROOT).contains("mmproj")) {
                ggufs.add(name);
                if (word.matcher(name).matches()) {
                    Matcher split = GgufFile.SPLIT_NAME.matcher(name);
                    // the parts of a split file are one file: its first part stands for them
                    tagged.add(split.matches()
                            ? GgufFile.partName(split.group(1), 1, Integer.parseInt(split.group(3))) : name);
                }
            }
        }
        if (tagged.size() != 1) {
            throw new ModelNotFoundException(repoId + ":" + tag + ": " + (tagged.isEmpty() ? "no" : tagged.size())
                    + " GGUF files carry the tag " + tag + (tagged.isEmpty() ? "" : " " + tagged) + "; its GGUF files: "
                    + ggufs + " (pass one with gguf_file / --gguf-file)");
        }
        return download(hub, repoId, revision, tagged.iterator().next());
    }


    private static boolean isGgufName(String name) {
        return name.toLowerCase(Locale.ROOT).endsWith(".gguf");
    }
}
