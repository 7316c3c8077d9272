package io.github.djlllmzoo.langchain4j;

import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import io.github.djlllmzoo.zoo.LocalModel;

/**
 * LangChain4j's {@link ChatModel} over a model loaded in this process: no HTTP. Tool
 * specifications are rendered through the checkpoint's chat template and the reply's calls read
 * in its family's syntax (Qwen, Llama 3.1+, Mistral v0.3); {@code ToolChoice.REQUIRED} and
 * JSON-schema response formats constrain decoding, so the calls and the JSON always parse. So
 * {@code AiServices} with {@code @Tool} methods and record-returning methods work on it.
 *
 * <p>The caller keeps ownership of the model; {@link #close()} frees this chat model's predictor.
 */
public final class LlmZooChatModel extends LocalChatModel implements ChatModel {

    /**
     * @param model the model, with its tokenizer and (for tools) a chat template that reads them
     * @param modelName the name responses carry
     */
    public LlmZooChatModel(LocalModel model, String modelName) {
        super(model, modelName);
    }

    @Override
    public ChatResponse doChat(ChatRequest request) {
        LocalChatEngine.Prepared prepared = engine.prepare(request);
        return engine.response(prepared, engine.generate(prepared, null));
    }
}
