package io.github.djlllmzoo.chat;

/**
 * One call of a function that an assistant message makes, as OpenAI's {@code tool_calls[]} item
 * {@code {"id", "type": "function", "function": {"name", "arguments"}}} carries it.
 *
 * @param id the call's id, which the {@code tool} message answering it names in {@code
 *     tool_call_id}
 * @param name the function's name
 * @param arguments the arguments, a JSON object as text (as OpenAI's API carries them)
 */
public record ToolCall(String id, String name, String arguments) {

    /**
     * Checks that every part is given.
     *
     * @param id the call's id, which the {@code tool} message answering it names in {@code
     *     tool_call_id}
     * @param name the function's name
     * @param arguments the arguments, a JSON object as text (as OpenAI's API carries them)
     */
    public ToolCall {
        if (id == null || name == null || arguments == null) {
            throw new IllegalArgumentException("a tool call needs an id, a name and arguments");
        }
    }
}
