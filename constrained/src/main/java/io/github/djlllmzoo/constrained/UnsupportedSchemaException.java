package io.github.djlllmzoo.constrained;

/**
 * A JSON Schema keyword (or a value of it) that constrained decoding does not support, with the
 * JSON path of the schema object that uses it.
 */
public final class UnsupportedSchemaException extends InvalidConstraintException {

    private static final long serialVersionUID = 1L;

    private final String keyword;

    /**
     * @param path the JSON path of the schema object, e.g. {@code $.properties.tags}
     * @param keyword the keyword, e.g. {@code uniqueItems}
     * @param why why it is refused
     */
    public UnsupportedSchemaException(String path, String keyword, String why) {
        super(path, "unsupported schema keyword '" + keyword + "': " + why);
        this.keyword = keyword;
    }

    /** @return the keyword refused */
    public String keyword() {
        return keyword;
    }
}
