package io.github.djlllmzoo.zoo.hub;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * Incremental hash of a blob as the hub names it: SHA-256 of the content for LFS files (64-hex
 * etag), git blob SHA-1 ({@code sha1("blob " + size + "\0" + content)}) for small files (40-hex
 * etag).
 */
final class ContentHasher {

    private static final Pattern SHA256 = Pattern.compile("[0-9a-f]{64}");
    private static final Pattern SHA1 = Pattern.compile("[0-9a-f]{40}");

    private final MessageDigest digest;
    private final boolean gitBlob;
    private final long size;
    private long count;

    private ContentHasher(String algorithm, boolean gitBlob, long size) {
        try {
            this.digest = MessageDigest.getInstance(algorithm);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(algorithm + " is required by the Java platform", e);
        }
        this.gitBlob = gitBlob;
        this.size = size;
        reset();
    }

    /**
     * @param etag the normalized etag
     * @param size the content size, or -1 when unknown
     * @return a hasher checking {@code etag}, or {@code null} when the etag is no hash this
     *     client can check (or a git blob hash of unknown size)
     */
    static ContentHasher forEtag(String etag, long size) {
        if (SHA256.matcher(etag).matches()) {
            return new ContentHasher("SHA-256", false, size);
        }
        if (SHA1.matcher(etag).matches() && size >= 0) {
            return new ContentHasher("SHA-1", true, size);
        }
        return null;
    }

    /** @return the name of the hash, for messages */
    String kind() {
        return gitBlob ? "git blob SHA-1" : "SHA-256";
    }

    /** Starts over at byte 0. */
    void reset() {
        digest.reset();
        count = 0;
        if (gitBlob) {
            digest.update(("blob " + size + "\0").getBytes(StandardCharsets.US_ASCII));
        }
    }

    /** Makes the hash cover exactly the first {@code length} bytes of {@code file}. */
    void syncWith(Path file, long length) throws IOException {
        if (count == length) {
            return;
        }
        reset();
        if (length == 0) {
            return;
        }
        byte[] buf = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(file)) {
            long left = length;
            while (left > 0) {
                int n = in.read(buf, 0, (int) Math.min(buf.length, left));
                if (n < 0) {
                    throw new IOException("File shrank while hashing: " + file);
                }
                update(buf, 0, n);
                left -= n;
            }
        }
    }

    void update(byte[] buf, int off, int len) {
        digest.update(buf, off, len);
        count += len;
    }

    /** @return the number of content bytes hashed so far */
    long count() {
        return count;
    }

    /** @return the lowercase hex hash; the hasher must not be used afterwards */
    String hex() {
        return HexFormat.of().formatHex(digest.digest());
    }
}
