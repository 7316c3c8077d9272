package io.github.djlllmzoo.zoo.hub;

import java.net.URI;

/**
 * What the hub says about one file, read from a HEAD request on its resolve URL without following
 * redirects.
 *
 * @param commit the commit the revision resolved to ({@code X-Repo-Commit})
 * @param etag the normalized etag naming the blob: SHA-256 for LFS files ({@code X-Linked-Etag}),
 *     git blob SHA-1 for small files ({@code ETag}), without quotes or {@code W/}
 * @param size the size in bytes ({@code X-Linked-Size} or {@code Content-Length}), or -1 if unknown
 * @param location where the content is served: the redirect target for LFS files, else the
 *     resolve URL itself
 */
public record HubFileMetadata(String commit, String etag, long size, URI location) {}
