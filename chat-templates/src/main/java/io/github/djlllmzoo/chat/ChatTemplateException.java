package io.github.djlllmzoo.chat;

/**
 * A chat template refused a conversation ({@code raise_exception} in the template) or failed on
 * it. {@link #param()} names the part of the request at fault: {@code messages[0].role} when the
 * template refuses a leading system message (Gemma 2's {@code System role not supported}), else
 * {@code messages}.
 */
public class ChatTemplateException extends IllegalArgumentException {

    private final String param;

    /**
     * @param param the request field at fault, e.g. {@code messages[0].role}
     * @param message the template's own message
     */
    public ChatTemplateException(String param, String message) {
        super(message);
        this.param = param;
    }

    /** @return the request field at fault, e.g. {@code messages[0].role} or {@code messages} */
    public String param() {
        return param;
    }
}
