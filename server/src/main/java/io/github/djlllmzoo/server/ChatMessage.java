package io.github.djlllmzoo.server;

/**
 * One message of a chat conversation.
 *
 * @param role who says it: {@code system}, {@code user}, {@code assistant} (templates may know
 *     others; the server reads OpenAI's {@code developer} as {@code system})
 * @param content what is said
 */
public record ChatMessage(String role, String content) {

    /**
     * Checks that both parts are given.
     *
     * @param role who says it: {@code system}, {@code user}, {@code assistant} (templates may know others; the server reads OpenAI's {@code developer} as {@code system})
     * @param content what is said
     */
    public ChatMessage {
        if (role == null || content == null) {
            throw new IllegalArgumentException("a chat message needs a role and a content");
        }
    }
}
