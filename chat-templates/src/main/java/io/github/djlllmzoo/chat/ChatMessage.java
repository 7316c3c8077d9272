package io.github.djlllmzoo.chat;

import java.util.List;

/**
 * One message of a chat conversation: a turn of text, an assistant turn that calls tools, or a
 * tool's answer to one of those calls.
 *
 * @param role who says it: {@code system}, {@code user}, {@code assistant}, {@code tool}
 *     (templates may know others; the server reads OpenAI's {@code developer} as {@code system})
 * @param content what is said; may be null only for an assistant message with tool calls
 * @param toolCalls the functions an assistant message calls (empty for every other message)
 * @param toolCallId for a {@code tool} message, the id of the call it answers; else null
 */
public record ChatMessage(
        String role, String content, List<ToolCall> toolCalls, String toolCallId) {

    /**
     * Checks that a message says something (text or tool calls) and who says it.
     *
     * @param role who says it: {@code system}, {@code user}, {@code assistant}, {@code tool}
     *     (templates may know others; the server reads OpenAI's {@code developer} as {@code system})
     * @param content what is said; may be null only for an assistant message with tool calls
     * @param toolCalls the functions an assistant message calls (empty for every other message)
     * @param toolCallId for a {@code tool} message, the id of the call it answers; else null
     */
    public ChatMessage {
        toolCalls = toolCalls == null ? List.of() : List.copyOf(toolCalls);
        if (role == null || (content == null && toolCalls.isEmpty())) {
            throw new IllegalArgumentException(
                    "a chat message needs a role and a content (or, from the assistant, tool calls)");
        }
        if (!toolCalls.isEmpty() && !"assistant".equals(role)) {
            throw new IllegalArgumentException("only assistant messages carry tool calls");
        }
        if ("tool".equals(role) && toolCallId == null) {
            throw new IllegalArgumentException("a tool message needs the tool_call_id it answers");
        }
    }

    /**
     * A message of text.
     *
     * @param role who says it
     * @param content what is said
     */
    public ChatMessage(String role, String content) {
        this(role, content, List.of(), null);
    }

    /**
     * An assistant message that calls tools.
     *
     * @param content text said beside the calls, or null
     * @param toolCalls the calls (at least one)
     * @return the message
     */
    public static ChatMessage assistantCalling(String content, List<ToolCall> toolCalls) {
        if (toolCalls.isEmpty()) {
            throw new IllegalArgumentException("an assistant message calling tools needs a call");
        }
        return new ChatMessage("assistant", content, toolCalls, null);
    }

    /**
     * A tool's answer to a call.
     *
     * @param toolCallId the id of the call answered
     * @param content the tool's result as text
     * @return the message
     */
    public static ChatMessage toolResult(String toolCallId, String content) {
        return new ChatMessage("tool", content, List.of(), toolCallId);
    }
}
