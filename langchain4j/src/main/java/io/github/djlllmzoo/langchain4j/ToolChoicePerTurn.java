package io.github.djlllmzoo.langchain4j;

import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.model.chat.Capability;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.DefaultChatRequestParameters;
import dev.langchain4j.model.chat.request.ResponseFormat;
import dev.langchain4j.model.chat.request.ToolChoice;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import java.util.List;
import java.util.Objects;
import java.util.Set;

/**
 * A tool choice per turn for any LangChain4j chat model ({@link LlmZooChatModel}, or {@code
 * OpenAiChatModel} against {@code bin/llmzoo serve}): a request that has tools and names no tool
 * choice gets {@code afterUserMessage} when it answers the user and {@code afterToolResults} when
 * its last message is a tool result. {@code REQUIRED} then {@code NONE} makes a small model call
 * a tool when asked (a call valid by construction) and then answer from the results; a
 * required turn's request drops its response format, which is for the answer (a reply cannot be
 * both a call and that JSON). {@code AiServices} takes the wrapped model as any other.
 *
 * @param afterUserMessage the tool choice of a turn that answers the user
 * @param afterToolResults the tool choice of a turn that answers tool results
 */
public record ToolChoicePerTurn(ToolChoice afterUserMessage, ToolChoice afterToolResults) {

    /**
     * Checks both choices are given.
     *
     * @param afterUserMessage the tool choice of a turn that answers the user
     * @param afterToolResults the tool choice of a turn that answers tool results
     */
    public ToolChoicePerTurn {
        Objects.requireNonNull(afterUserMessage, "afterUserMessage");
        Objects.requireNonNull(afterToolResults, "afterToolResults");
    }

    /**
     * A tool call when the user asks, the answer when the results are in.
     *
     * @return {@code REQUIRED} then {@code NONE}
     */
    public static ToolChoicePerTurn callThenAnswer() {
        return new ToolChoicePerTurn(ToolChoice.REQUIRED, ToolChoice.NONE);
    }

    /**
     * @param request a request
     * @return the request with this turn's tool choice, when it has tools and names none
     */
    public ChatRequest apply(ChatRequest request) {
        ChatRequestParameters parameters = request.parameters();
        if (parameters.toolChoice() != null
                || parameters.toolSpecifications() == null
                || parameters.toolSpecifications().isEmpty()) {
            return request;
        }
        List<ChatMessage> messages = request.messages();
        ToolChoice choice =
                !messages.isEmpty()
                                && messages.get(messages.size() - 1)
                                        instanceof ToolExecutionResultMessage
                        ? afterToolResults
                        : afterUserMessage;
        DefaultChatRequestParameters.Builder<?> b = ChatRequestParameters.builder().toolChoice(choice);
        if (choice == ToolChoice.REQUIRED) {
            b.responseFormat(ResponseFormat.TEXT);
        }
        return ChatRequest.builder()
                .messages(messages)
                .parameters(parameters.overrideWith(b.build()))
                .build();
    }

    /**
     * @param model a chat model
     * @return the model choosing tools per turn
     */
    public ChatModel wrap(ChatModel model) {
        return new ChatModel() {
            @Override
            public ChatResponse chat(ChatRequest request) {
                return model.chat(apply(request));
            }

            @Override
            public ChatRequestParameters defaultRequestParameters() {
                return model.defaultRequestParameters();
            }

            @Override
            public Set<Capability> supportedCapabilities() {
                return model.supportedCapabilities();
            }
        };
    }

    /**
     * @param model a streaming chat model
     * @return the model choosing tools per turn
     */
    public StreamingChatModel wrap(StreamingChatModel model) {
        return new StreamingChatModel() {
            @Override
            public void chat(ChatRequest request, StreamingChatResponseHandler handler) {
                model.chat(apply(request), handler);
            }

            @Override
            public ChatRequestParameters defaultRequestParameters() {
                return model.defaultRequestParameters();
            }

            @Override
            public Set<Capability> supportedCapabilities() {
                return model.supportedCapabilities();
            }
        };
    }
}
