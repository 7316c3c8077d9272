package io.github.djlllmzoo.langchain4j;

import ai.djl.inference.Predictor;
import ai.djl.translate.TranslateException;
import com.google.gson.Gson;
import com.google.gson.JsonObject;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.Content;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.TextContent;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.internal.JsonSchemaElementUtils;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.ResponseFormat;
import dev.langchain4j.model.chat.request.ResponseFormatType;
import dev.langchain4j.model.chat.request.ToolChoice;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;
import io.github.djlllmzoo.chat.ChatMessage;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.chat.ToolCall;
import io.github.djlllmzoo.chat.ToolCallSyntax;
import io.github.djlllmzoo.constrained.OutputConstraint;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.GenerationListener;
import io.github.djlllmzoo.translators.GenerationRequest;
import io.github.djlllmzoo.translators.GenerationResult;
import io.github.djlllmzoo.translators.LogitAdjustments;
import io.github.djlllmzoo.zoo.LocalModel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs LangChain4j chat requests on a loaded model, in process: messages (system, user, AI with
 * tool calls, tool results) rendered by the checkpoint's chat template with the tool
 * specifications in its {@code tools}, the request's sampling parameters mapped onto a {@link
 * GenerationConfig}, {@link ToolChoice#REQUIRED} and JSON-schema {@link ResponseFormat}s decoded
 * under the same constraints as the HTTP server's, and the reply's tool calls read in the family's
 * {@link ToolCallSyntax}. One request at a time (the predictor is not shared between threads).
 */
final class LocalChatEngine implements AutoCloseable {

    private static final Gson GSON = new Gson();

    private final LocalModel model;
    private final String modelName;
    private final ChatTemplate template;
    private final GenerationConfig defaults;
    private final Predictor<GenerationRequest, GenerationResult> predictor;

    LocalChatEngine(LocalModel model, String modelName) {
        this.model = model;
        this.modelName = modelName;
        try {
            this.template = ChatTemplate.forCheckpoint(model.dir());
            this.defaults = GenerationConfig.forCheckpoint(model.dir(), model.config()).build();
            this.predictor = model.newGenerationPredictor();
        } catch (InvalidCheckpointException e) {
            throw new IllegalArgumentException(e.getMessage(), e);
        }
    }

    /** A request ready to run: the prompt, how to generate, and how to read the reply. */
    record Prepared(long[] promptIds, GenerationConfig config, ToolCallSyntax toolCalls) {}

    Prepared prepare(ChatRequest request) {
        ChatRequestParameters p = request.parameters();
        List<JsonObject> tools = new ArrayList<>();
        Map<String, String> parameters = new LinkedHashMap<>();
        for (ToolSpecification tool : p.toolSpecifications()) {
            String schema =
                    tool.parameters() == null
                            ? ToolCallSyntax.NO_PARAMETERS
                            : GSON.toJson(JsonSchemaElementUtils.toMap(tool.parameters(), true));
            parameters.put(tool.name(), schema);
            JsonObject function = new JsonObject();
            function.addProperty("name", tool.name());
            if (tool.description() != null) {
                function.addProperty("description", tool.description());
            }
            function.add("parameters", GSON.fromJson(schema, JsonObject.class));
            JsonObject spec = new JsonObject();
            spec.addProperty("type", "function");
            spec.add("function", function);
            tools.add(spec);
        }
        ToolCallSyntax syntax =
                tools.isEmpty() ? null : ToolCallSyntax.forTemplate(template, model.config().modelType());
        OutputConstraint constraint = responseFormat(p.responseFormat());
        if (syntax != null && p.toolChoice() == ToolChoice.REQUIRED) {
            constraint = syntax.callConstraint(parameters, true);
        }
        String rendered =
                template.render(messages(request.messages()), tools, true, Map.of());
        long[] prompt = template.encode(rendered, model.tokenizer());
        GenerationConfig.Builder b = defaults.toBuilder().optConstraint(constraint);
        if (p.temperature() != null) {
            b.doSample(p.temperature() > 0).temperature(p.temperature().floatValue());
        }
        if (p.topP() != null) {
            b.topP(p.topP().floatValue());
        }
        if (p.topK() != null) {
            b.topK(p.topK());
        }
        b.maxNewTokens(
                p.maxOutputTokens() != null
                        ? p.maxOutputTokens()
                        : Math.max(1, model.config().maxPositions() - prompt.length));
        if (p.stopSequences() != null && !p.stopSequences().isEmpty()) {
            b.stopStrings(p.stopSequences());
        }
        if (p.presencePenalty() != null || p.frequencyPenalty() != null) {
            b.logitAdjustments(
                    new LogitAdjustments(
                            Map.of(),
                            p.presencePenalty() == null ? 0f : p.presencePenalty().floatValue(),
                            p.frequencyPenalty() == null ? 0f : p.frequencyPenalty().floatValue()));
        }
        boolean readCalls = syntax != null && p.toolChoice() != ToolChoice.NONE;
        return new Prepared(prompt, b.build(), readCalls ? syntax : null);
    }

    private static OutputConstraint responseFormat(ResponseFormat format) {
        if (format == null || format.type() != ResponseFormatType.JSON) {
            return null;
        }
        if (format.jsonSchema() == null) {
            return OutputConstraint.anyJsonObject();
        }
        return OutputConstraint.jsonSchema(
                GSON.toJson(JsonSchemaElementUtils.toMap(format.jsonSchema().rootElement(), true)));
    }

    private static List<ChatMessage> messages(List<dev.langchain4j.data.message.ChatMessage> in) {
        List<ChatMessage> out = new ArrayList<>();
        for (dev.langchain4j.data.message.ChatMessage message : in) {
            if (message instanceof SystemMessage system) {
                out.add(new ChatMessage("system", system.text()));
            } else if (message instanceof UserMessage user) {
                out.add(new ChatMessage("user", text(user)));
            } else if (message instanceof AiMessage ai && ai.hasToolExecutionRequests()) {
                List<ToolCall> calls = new ArrayList<>();
                for (ToolExecutionRequest call : ai.toolExecutionRequests()) {
                    calls.add(new ToolCall(call.id(), call.name(), call.arguments()));
                }
                out.add(ChatMessage.assistantCalling(ai.text(), calls));
            } else if (message instanceof AiMessage ai) {
                out.add(new ChatMessage("assistant", ai.text() == null ? "" : ai.text()));
            } else if (message instanceof ToolExecutionResultMessage result) {
                out.add(ChatMessage.toolResult(result.id(), result.text()));
            } else {
                throw new IllegalArgumentException(
                        "unsupported message type " + message.type() + ": only text is supported");
            }
        }
        return out;
    }

    private static String text(UserMessage user) {
        List<String> texts = new ArrayList<>();
        for (Content content : user.contents()) {
            if (!(content instanceof TextContent text)) {
                throw new IllegalArgumentException(
                        "unsupported content " + content.type() + ": only text is supported");
            }
            texts.add(text.text());
        }
        return String.join("\n", texts);
    }

    /** Generates for a prepared request, passing text to {@code listener} as it comes (or null). */
    synchronized GenerationResult generate(Prepared prepared, GenerationListener listener) {
        GenerationRequest request = GenerationRequest.ofIds(prepared.promptIds(), prepared.config());
        try {
            return predictor.predict(listener == null ? request : request.withListener(listener));
        } catch (TranslateException e) {
            throw new IllegalStateException("generation failed: " + e.getMessage(), e);
        }
    }

    /** The response of a whole reply: its text, or its tool calls. */
    ChatResponse response(Prepared prepared, GenerationResult result) {
        String text = result.text();
        io.github.djlllmzoo.translators.FinishReason reason = result.finishReason();
        FinishReason finish =
                reason == io.github.djlllmzoo.translators.FinishReason.LENGTH
                        ? FinishReason.LENGTH
                        : FinishReason.STOP;
        AiMessage message = AiMessage.from(text);
        if (prepared.toolCalls() != null) {
            ToolCallSyntax.ParsedReply reply = prepared.toolCalls().parse(text);
            if (!reply.calls().isEmpty()) {
                List<ToolExecutionRequest> requests = new ArrayList<>();
                for (ToolCall call : reply.calls()) {
                    requests.add(
                            ToolExecutionRequest.builder()
                                    .id(call.id())
                                    .name(call.name())
                                    .arguments(call.arguments())
                                    .build());
                }
                message = AiMessage.builder().text(reply.content()).toolExecutionRequests(requests).build();
                if (finish != FinishReason.LENGTH) {
                    finish = FinishReason.TOOL_EXECUTION;
                }
            }
        }
        return ChatResponse.builder()
                .aiMessage(message)
                .modelName(modelName)
                .finishReason(finish)
                .tokenUsage(
                        new TokenUsage(result.promptTokens(), result.tokenIds().length))
                .build();
    }

    @Override
    public void close() {
        predictor.close();
    }
}
