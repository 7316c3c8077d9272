package io.github.djlllmzoo.zoo.hub;

import java.util.List;

/**
 * A repository revision as listed by {@code GET /api/models/{repo}/revision/{revision}}.
 *
 * @param repoId the repository
 * @param commit the commit hash the revision resolved to ({@code sha})
 * @param siblings the repository's file names ({@code siblings[].rfilename}), all checked to be
 *     safe relative paths
 */
public record RepoInfo(String repoId, String commit, List<String> siblings) {

    /**
     * Copies {@code siblings} into an unmodifiable list.
     *
     * @param repoId the repository
     * @param commit the commit hash the revision resolved to ({@code sha})
     * @param siblings the repository's file names ({@code siblings[].rfilename}), all checked to be safe relative paths
     */
    public RepoInfo {
        siblings = List.copyOf(siblings);
    }
}
