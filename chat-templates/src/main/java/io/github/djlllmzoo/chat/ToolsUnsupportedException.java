package io.github.djlllmzoo.chat;

/**
 * A model cannot be offered tools: its chat template has no place for them, or writes calls in a
 * syntax no {@link ToolCallSyntax} reads. The server answers 400 naming {@link #param()} ({@code
 * tools}) and, in the message, the model's family.
 */
public final class ToolsUnsupportedException extends ChatTemplateException {

    /** @param message what is missing, naming the model family */
    public ToolsUnsupportedException(String message) {
        super("tools", message);
    }
}
