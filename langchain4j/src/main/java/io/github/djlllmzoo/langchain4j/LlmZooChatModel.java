package io.github.djlllmzoo.langchain4j;

import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.listener.ChatModelListener;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.DefaultChatRequestParameters;
import dev.langchain4j.model.chat.response.ChatResponse;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.zoo.LocalModel;
import java.util.List;
import java.util.Objects;

/**
 * LangChain4j's {@link ChatModel} over a model loaded in this process (no HTTP), so that {@code
 * AiServices} with {@code @Tool} methods and record-returning methods run on it:
 *
 * <ul>
 *   <li>messages are rendered through the checkpoint's chat template, with the request's tool
 *       specifications in its context as OpenAI function specifications;
 *   <li>the reply's tool calls, in the family's syntax (Qwen {@code <tool_call>}, Llama 3 JSON,
 *       Mistral {@code [TOOL_CALLS]}), become the {@code AiMessage}'s tool execution requests,
 *       with finish reason {@code TOOL_EXECUTION};
 *   <li>{@code ToolChoice.REQUIRED} constrains decoding to that syntax with the tools' parameter
 *       schemas, and a JSON {@code ResponseFormat} (with or without a schema) to valid JSON, so
 *       the output parses by construction ({@code RESPONSE_FORMAT_JSON_SCHEMA}); with both tools
 *       and a response format, {@code AUTO} lets the reply be either a valid call or the answer
 *       in the format, {@code NONE} only the answer;
 *   <li>temperature, top-p, top-k, max output tokens, stop sequences and the frequency and
 *       presence penalties map onto the generation; what a request leaves out is the
 *       checkpoint's {@code generation_config.json} (greedy without one), the budget the rest of
 *       the context window;
 *   <li>the response reports token usage and finish reason.
 * </ul>
 *
 * A request that gives no tool choice is {@code AUTO}; {@link ToolChoicePerTurn} chooses per turn
 * (call a tool when the user asks, answer when the results are in), which makes a small model
 * that will not call tools by itself usable by {@code AiServices}. The model stays the caller's
 * to close.
 */
public final class LlmZooChatModel extends LocalChatModel implements ChatModel {

    private LlmZooChatModel(Builder builder) {
        super(builder.chat(), builder.defaults, builder.listeners);
    }

    /**
     * @param model the loaded model (with a tokenizer; a chat template to use tools)
     * @return a builder of a chat model over it
     */
    public static Builder builder(LocalModel model) {
        return new Builder(model);
    }

    @Override
    public ChatResponse doChat(ChatRequest request) {
        return chat.chat(request, null);
    }

    /** Builds a {@link LlmZooChatModel} or a {@link LlmZooStreamingChatModel}. */
    public static final class Builder {

        private final LocalModel model;
        private ChatTemplate template;
        private String modelName;
        private ChatRequestParameters defaults = DefaultChatRequestParameters.EMPTY;
        private List<ChatModelListener> listeners = List.of();
        private boolean parallelToolCalls = true;
        private Long seed;

        private Builder(LocalModel model) {
            this.model = Objects.requireNonNull(model, "model");
        }

        /**
         * @param value the template to render conversations with (default: the checkpoint's,
         *     from its {@code tokenizer_config.json})
         * @return this builder
         */
        public Builder chatTemplate(ChatTemplate value) {
            template = value;
            return this;
        }

        /**
         * @param value the name responses report (default: the checkpoint directory's name)
         * @return this builder
         */
        public Builder modelName(String value) {
            modelName = value;
            return this;
        }

        /**
         * @param value parameters every request starts from (its own override them)
         * @return this builder
         */
        public Builder defaultRequestParameters(ChatRequestParameters value) {
            defaults = Objects.requireNonNull(value, "defaultRequestParameters");
            return this;
        }

        /**
         * @param value listeners told of each request and response
         * @return this builder
         */
        public Builder listeners(List<ChatModelListener> value) {
            listeners = List.copyOf(value);
            return this;
        }

        /**
         * @param value whether a reply may call several tools where the family can write them
         *     (default true)
         * @return this builder
         */
        public Builder parallelToolCalls(boolean value) {
            parallelToolCalls = value;
            return this;
        }

        /**
         * @param value the sampler's seed (same request, same reply), or null for a fresh seed
         *     per request (the default)
         * @return this builder
         */
        public Builder seed(Long value) {
            seed = value;
            return this;
        }

        /**
         * @return the chat model
         * @throws IllegalArgumentException if the checkpoint's chat template or generation
         *     config is malformed, naming the file and field
         */
        public LlmZooChatModel build() {
            return new LlmZooChatModel(this);
        }

        /**
         * @return a streaming chat model with the same settings
         * @throws IllegalArgumentException if the checkpoint's chat template or generation
         *     config is malformed, naming the file and field
         */
        public LlmZooStreamingChatModel buildStreaming() {
            return new LlmZooStreamingChatModel(chat(), defaults, listeners);
        }

        private LocalChat chat() {
            String name =
                    modelName != null ? modelName : model.dir().getFileName().toString();
            ChatSettings settings = new ChatSettings(name, parallelToolCalls, seed);
            try {
                return new LocalChat(
                        model,
                        template != null ? template : ChatTemplate.forCheckpoint(model.dir()),
                        settings);
            } catch (InvalidCheckpointException e) {
                throw new IllegalArgumentException(e.getMessage(), e);
            }
        }
    }
}
