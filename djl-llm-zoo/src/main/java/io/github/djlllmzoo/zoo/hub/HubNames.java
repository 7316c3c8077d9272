package io.github.djlllmzoo.zoo.hub;

import java.nio.charset.StandardCharsets;
import java.util.regex.Pattern;

/** Validation of repository ids, revisions, file names and cache path components. */
final class HubNames {

    private static final Pattern REPO_PART = Pattern.compile("[A-Za-z0-9][A-Za-z0-9._-]*");
    private static final Pattern COMMIT = Pattern.compile("[0-9a-f]{40}");
    private static final Pattern SAFE_COMPONENT = Pattern.compile("[A-Za-z0-9._+=-]{1,200}");
    private static final int MAX_REPO_ID = 96;
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private HubNames() {}

    /**
     * Checks a repository id: {@code name} or {@code org/name}, made of letters, digits, {@code
     * - _ .}, without {@code --} or {@code ..}, as the hub itself requires.
     */
    static String checkRepoId(String repoId) {
        if (repoId == null || repoId.isEmpty() || repoId.length() > MAX_REPO_ID) {
            throw new IllegalArgumentException(
                    "Invalid repo id '" + repoId + "': expected 'name' or 'org/name'");
        }
        String[] parts = repoId.split("/", -1);
        if (parts.length > 2) {
            throw new IllegalArgumentException(
                    "Invalid repo id '" + repoId + "': expected 'name' or 'org/name'");
        }
        for (String part : parts) {
            if (!REPO_PART.matcher(part).matches()
                    || part.endsWith(".")
                    || part.endsWith("-")
                    || part.contains("--")
                    || part.contains("..")) {
                throw new IllegalArgumentException(
                        "Invalid repo id '"
                                + repoId
                                + "': each part must be letters, digits, '-', '_' or '.', not"
                                + " start or end with '-' or '.', and not contain '--' or '..'");
            }
        }
        return repoId;
    }

    /** Checks a revision (branch, tag, or commit), which becomes a path under {@code refs/}. */
    static String checkRevision(String revision) {
        if (revision == null || !isSafeRelativePath(revision)) {
            throw new IllegalArgumentException(
                    "Invalid revision '"
                            + revision
                            + "': must be a branch, tag or commit without '..', '\\' or a"
                            + " leading '/'");
        }
        return revision;
    }

    /** Checks a file name given by the caller. */
    static String checkFilename(String filename) {
        if (filename == null || !isSafeRelativePath(filename)) {
            throw new IllegalArgumentException(
                    "Invalid file name '"
                            + filename
                            + "': must be a relative path without '..', '.', '\\' or empty parts");
        }
        return filename;
    }

    /** Checks a file name that came from the hub (file list, index), which may be hostile. */
    static String checkServerFilename(String repoId, String filename, String source)
            throws HubException {
        if (filename == null || !isSafeRelativePath(filename)) {
            throw new HubException(
                    "Refusing unsafe file name '"
                            + filename
                            + "' in "
                            + source
                            + " of '"
                            + repoId
                            + "': file names must be relative paths without '..', '\\' or"
                            + " empty parts");
        }
        return filename;
    }

    /** Checks a commit hash or etag from a response header before it names a cache path. */
    static String checkServerComponent(String repoId, String filename, String what, String value)
            throws HubException {
        if (value == null
                || !SAFE_COMPONENT.matcher(value).matches()
                || value.equals(".")
                || value.equals("..")) {
            throw new HubException(
                    "The hub sent an unusable "
                            + what
                            + " '"
                            + value
                            + "' for '"
                            + filename
                            + "' of '"
                            + repoId
                            + "'");
        }
        return value;
    }

    /** @return whether {@code revision} is a full 40-hex git commit hash */
    static boolean isCommit(String revision) {
        return revision != null && COMMIT.matcher(revision).matches();
    }

    private static boolean isSafeRelativePath(String path) {
        if (path.isEmpty()
                || path.length() > 1024
                || path.indexOf('\\') >= 0
                || path.indexOf('\0') >= 0
                || path.startsWith("/")
                || (path.length() >= 2 && path.charAt(1) == ':')) {
            return false;
        }
        for (String part : path.split("/", -1)) {
            if (part.isEmpty() || part.equals(".") || part.equals("..")) {
                return false;
            }
        }
        return true;
    }

    /**
     * Percent-encodes {@code value} for a URL path, keeping {@code /} when {@code keepSlash}.
     * Letters, digits and {@code - . _ ~} are kept as they are.
     */
    static String encodePath(String value, boolean keepSlash) {
        StringBuilder sb = new StringBuilder(value.length());
        for (byte b : value.getBytes(StandardCharsets.UTF_8)) {
            char c = (char) (b & 0xFF);
            if ((c >= 'a' && c <= 'z')
                    || (c >= 'A' && c <= 'Z')
                    || (c >= '0' && c <= '9')
                    || c == '-'
                    || c == '.'
                    || c == '_'
                    || c == '~'
                    || (keepSlash && c == '/')) {
                sb.append(c);
            } else {
                sb.append('%').append(HEX[(c >> 4) & 0xF]).append(HEX[c & 0xF]);
            }
        }
        return sb.toString();
    }
}
