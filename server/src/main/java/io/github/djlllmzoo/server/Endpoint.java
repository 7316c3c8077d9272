package io.github.djlllmzoo.server;

/** The two generation routes, with the OpenAI object names of their answers. */
public enum Endpoint {
    /** {@code POST /v1/completions}: a prompt continued. */
    COMPLETIONS("text_completion", "text_completion", "cmpl-"),
    /** {@code POST /v1/chat/completions}: a conversation answered. */
    CHAT("chat.completion", "chat.completion.chunk", "chatcmpl-");

    private final String object;
    private final String chunkObject;
    private final String idPrefix;

    Endpoint(String object, String chunkObject, String idPrefix) {
        this.object = object;
        this.chunkObject = chunkObject;
        this.idPrefix = idPrefix;
    }

    /** @return the {@code object} of a whole answer */
    public String object() {
        return object;
    }

    /** @return the {@code object} of a streamed chunk */
    public String chunkObject() {
        return chunkObject;
    }

    /** @return the prefix of answer ids */
    public String idPrefix() {
        return idPrefix;
    }
}
