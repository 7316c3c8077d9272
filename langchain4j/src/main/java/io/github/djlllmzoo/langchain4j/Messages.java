package io.github.djlllmzoo.langchain4j;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.Content;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.TextContent;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import io.github.djlllmzoo.chat.ToolCall;
import java.util.ArrayList;
import java.util.List;

/**
 * LangChain4j's messages as the chat templates' ({@link io.github.djlllmzoo.chat.ChatMessage}):
 * system and user text, an assistant's text or tool calls (its {@code ToolExecutionRequest}s,
 * their ids kept so that the tool results answer them), and tool results. Content other than
 * text (images, audio, PDF) is refused naming the message, as these models read only text.
 */
final class Messages {

    private Messages() {}

    static List<io.github.djlllmzoo.chat.ChatMessage> of(List<ChatMessage> messages) {
        List<io.github.djlllmzoo.chat.ChatMessage> out = new ArrayList<>(messages.size());
        for (int i = 0; i < messages.size(); i++) {
            out.add(of(messages.get(i), "messages[" + i + "]"));
        }
        return out;
    }

    private static io.github.djlllmzoo.chat.ChatMessage of(ChatMessage message, String at) {
        if (message instanceof SystemMessage system) {
            return new io.github.djlllmzoo.chat.ChatMessage("system", system.text());
        }
        if (message instanceof UserMessage user) {
            return new io.github.djlllmzoo.chat.ChatMessage("user", text(user.contents(), at));
        }
        if (message instanceof AiMessage ai) {
            if (ai.hasToolExecutionRequests()) {
                List<ToolCall> calls = new ArrayList<>();
                for (ToolExecutionRequest request : ai.toolExecutionRequests()) {
                    calls.add(
                            new ToolCall(
                                    request.id(),
                                    request.name(),
                                    request.arguments() == null ? "{}" : request.arguments()));
                }
                return io.github.djlllmzoo.chat.ChatMessage.assistantCalling(ai.text(), calls);
            }
            return new io.github.djlllmzoo.chat.ChatMessage(
                    "assistant", ai.text() == null ? "" : ai.text());
        }
        if (message instanceof ToolExecutionResultMessage result) {
            if (result.id() == null) {
                throw new IllegalArgumentException(
                        at + ": a tool result needs the id of the call it answers");
            }
            return io.github.djlllmzoo.chat.ChatMessage.toolResult(result.id(), result.text());
        }
        throw new IllegalArgumentException(
                at + ": a " + message.type() + " message cannot be rendered by a chat template");
    }

    private static String text(List<Content> contents, String at) {
        List<String> texts = new ArrayList<>();
        for (Content content : contents) {
            if (!(content instanceof TextContent text)) {
                throw new IllegalArgumentException(
                        at + ": only text content is supported, got " + content.type());
            }
            texts.add(text.text());
        }
        return String.join("\n", texts);
    }
}
