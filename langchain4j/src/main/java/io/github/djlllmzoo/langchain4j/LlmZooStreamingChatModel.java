package io.github.djlllmzoo.langchain4j;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import io.github.djlllmzoo.chat.ToolCall;
import io.github.djlllmzoo.chat.ToolCallParser;
import io.github.djlllmzoo.translators.GenerationListener;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.zoo.LocalModel;

/**
 * LangChain4j's {@link StreamingChatModel} over a model loaded in this process, as {@link
 * LlmZooChatModel} does it, with the text passed to {@code onPartialResponse} as it is generated
 * and each tool call to {@code onCompleteToolCall} as soon as its JSON closes. The handler is
 * called on the calling thread, which {@code chat} returns to when the reply is complete.
 */
public final class LlmZooStreamingChatModel extends LocalChatModel
        implements StreamingChatModel {

    /**
     * @param model the model, with its tokenizer and (for tools) a chat template that reads them
     * @param modelName the name responses carry
     */
    public LlmZooStreamingChatModel(LocalModel model, String modelName) {
        super(model, modelName);
    }

    @Override
    public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
        GenerationResult result;
        LocalChatEngine.Prepared prepared;
        try {
            prepared = engine.prepare(request);
            ToolCallParser parser =
                    prepared.toolCalls() == null ? null : prepared.toolCalls().parser();
            GenerationListener listener =
                    new GenerationListener() {
                        @Override
                        public void onText(int sequence, String piece) {
                            if (parser == null) {
                                handler.onPartialResponse(piece);
                            } else {
                                pass(parser.append(piece), handler);
                            }
                        }

                        @Override
                        public void onFinish(int sequence, io.github.djlllmzoo.translators.FinishReason reason) {
                            if (parser != null) {
                                pass(parser.finish(), handler);
                            }
                        }
                    };
            result = engine.generate(prepared, listener);
        } catch (RuntimeException e) {
            handler.onError(e);
            return;
        }
        handler.onCompleteResponse(engine.response(prepared, result));
    }

    private static void pass(ToolCallParser.Delta delta, StreamingChatResponseHandler handler) {
        if (!delta.content().isEmpty()) {
            handler.onPartialResponse(delta.content());
        }
        for (int i = 0; i < delta.calls().size(); i++) {
            ToolCall call = delta.calls().get(i);
            handler.onCompleteToolCall(
                    new CompleteToolCall(
                            delta.firstIndex() + i,
                            ToolExecutionRequest.builder()
                                    .id(call.id())
                                    .name(call.name())
                                    .arguments(call.arguments())
                                    .build()));
        }
    }
}
