package io.github.djlllmzoo.langchain4j;

import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.listener.ChatModelListener;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import io.github.djlllmzoo.zoo.LocalModel;
import java.util.List;

/**
 * LangChain4j's {@link StreamingChatModel} over a model loaded in this process: what {@link
 * LlmZooChatModel} does, with the reply's text passed to {@code onPartialResponse} as it is
 * generated (whole characters; text that may still turn into a tool call held back until it is
 * decided) and each tool call to {@code onCompleteToolCall} as soon as its JSON closes. The
 * generation runs on the calling thread: {@code chat} returns after {@code onCompleteResponse} (or
 * {@code onError}) was called.
 */
public final class LlmZooStreamingChatModel extends LocalChatModel implements StreamingChatModel {

    LlmZooStreamingChatModel(
            LocalChat chat, ChatRequestParameters defaults, List<ChatModelListener> listeners) {
        super(chat, defaults, listeners);
    }

    /**
     * @param model the loaded model (with a tokenizer; a chat template to use tools)
     * @return a builder; {@link LlmZooChatModel.Builder#buildStreaming()} makes the streaming model
     */
    public static LlmZooChatModel.Builder builder(LocalModel model) {
        return LlmZooChatModel.builder(model);
    }

    @Override
    public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
        ChatResponse response;
        try {
            response = chat.chat(request, handler);
        } catch (RuntimeException e) {
            handler.onError(e);
            return;
        }
        handler.onCompleteResponse(response);
    }
}
