package io.github.djlllmzoo.langchain4j;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.chat.ToolCall;
import io.github.djlllmzoo.chat.ToolCallParser;
import io.github.djlllmzoo.translators.BatchGenerator;
import io.github.djlllmzoo.translators.Completion;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationListener;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.zoo.LocalModel;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;

/**
 * The chat both LangChain4j models run: a request made ready ({@link ChatTurn}), generated in
 * process, its reply read for tool calls in the family's syntax as it streams, and answered as a
 * {@link ChatResponse} with token usage and finish reason. Safe to use from many threads at once.
 */
final class LocalChat {

    private final LocalModel model;
    private final ChatTemplate template;
    private final ChatSettings settings;
    private final GenerationConfig defaults;
    private final BatchGenerator generator;

    /**
     * @throws InvalidCheckpointException if the checkpoint's {@code generation_config.json} is
     *     malformed, naming the field
     */
    LocalChat(LocalModel model, ChatTemplate template, ChatSettings settings)
            throws InvalidCheckpointException {
        this.model = model;
        this.template = template;
        this.settings = settings;
        this.defaults = GenerationConfig.forCheckpoint(model.dir(), model.config()).build();
        this.generator =
                new BatchGenerator(model.block(), model.model().getNDManager(), model.tokenizer());
    }

    /**
     * Generates the reply to a request.
     *
     * @param request the request, the default parameters applied
     * @param handler receives the reply as it is generated, or null
     * @return the whole reply
     */
    ChatResponse chat(ChatRequest request, StreamingChatResponseHandler handler) {
        ChatTurn turn = ChatTurn.prepare(model, template, defaults, settings, request);
        Reply reply = new Reply(turn, handler);
        GenerationRequest generation = GenerationRequest.ofIds(turn.promptIds(), turn.config());
        GenerationResult result =
                generator.generate(List.of(generation.withListener(reply)), null).get(0);
        Completion completion = result.completions().get(0);
        reply.finish();
        List<ToolExecutionRequest> calls = reply.calls;
        FinishReason finish =
                switch (completion.finishReason()) {
                    case LENGTH -> FinishReason.LENGTH;
                    case EOS, STOP -> calls.isEmpty() ? FinishReason.STOP : FinishReason.TOOL_EXECUTION;
                    case CANCELLED -> FinishReason.OTHER;
                };
        String text = reply.content.toString();
        if (!calls.isEmpty()) {
            text = text.isBlank() ? null : text.strip();
        }
        AiMessage message =
                calls.isEmpty() ? AiMessage.from(text) : AiMessage.from(text, List.copyOf(calls));
        return ChatResponse.builder()
                .aiMessage(message)
                .id("chatcmpl-" + UUID.randomUUID())
                .modelName(settings.modelName())
                .tokenUsage(new TokenUsage(result.promptTokens(), completion.tokenIds().length))
                .finishReason(finish)
                .build();
    }

    /**
     * Reads one reply as its text streams: content passed on as it is decided, each tool call as
     * soon as its JSON closes (only the first when the reply may hold one).
     */
    private static final class Reply implements GenerationListener {

        private final ToolCallParser parser;
        private final boolean parallel;
        private final StreamingChatResponseHandler handler;
        final StringBuilder content = new StringBuilder();
        final List<ToolExecutionRequest> calls = new ArrayList<>();

        Reply(ChatTurn turn, StreamingChatResponseHandler handler) {
            this.parser = turn.toolCalls() == null ? null : turn.toolCalls().parser();
            this.parallel = turn.parallelToolCalls();
            this.handler = handler;
        }

        @Override
        public void onText(int sequence, String piece) {
            if (parser == null) {
                content(piece);
            } else {
                read(parser.append(piece));
            }
        }

        void finish() {
            if (parser != null) {
                read(parser.finish());
            }
        }

        private void read(ToolCallParser.Delta delta) {
            content(delta.content());
            for (ToolCall call : delta.calls()) {
                if (!parallel && !calls.isEmpty()) {
                    return;
                }
                ToolExecutionRequest request =
                        ToolExecutionRequest.builder()
                                .id(call.id())
                                .name(call.name())
                                .arguments(call.arguments())
                                .build();
                if (handler != null) {
                    handler.onCompleteToolCall(new CompleteToolCall(calls.size(), request));
                }
                calls.add(request);
            }
        }

        private void content(String piece) {
            if (piece.isEmpty()) {
                return;
            }
            content.append(piece);
            if (handler != null) {
                handler.onPartialResponse(piece);
            }
        }
    }
}
