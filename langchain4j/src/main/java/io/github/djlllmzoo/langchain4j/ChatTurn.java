package io.github.djlllmzoo.langchain4j;

import com.google.gson.JsonObject;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.ResponseFormat;
import dev.langchain4j.model.chat.request.ResponseFormatType;
import dev.langchain4j.model.chat.request.ToolChoice;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.chat.ToolCallSyntax;
import io.github.djlllmzoo.constrained.OutputConstraint;
import io.github.djlllmzoo.translators.GenerationConfig;
import io.github.djlllmzoo.translators.LogitAdjustments;
import io.github.djlllmzoo.zoo.LocalModel;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * One chat request made ready to generate: the conversation rendered through the checkpoint's
 * chat template with the tools in its context, the request's parameters as a {@link
 * GenerationConfig}, decoding constrained to the family's tool-call syntax ({@code ToolChoice}
 * required), to the response format's JSON schema (no tools, or {@code ToolChoice} none), or to
 * either ({@code ToolChoice} auto with a response format), and the syntax the reply's calls are
 * read in.
 *
 * @param promptIds the rendered conversation's token ids
 * @param config how to generate
 * @param toolCalls the syntax to read calls in, or null to read none (no tools, or {@code
 *     ToolChoice.NONE})
 * @param parallelToolCalls whether the reply may hold several calls
 */
record ChatTurn(
        long[] promptIds, GenerationConfig config, ToolCallSyntax toolCalls, boolean parallelToolCalls) {

    /**
     * @param model the model
     * @param template its chat template
     * @param defaults the checkpoint's generation defaults
     * @param settings the chat model's settings
     * @param request the request, the chat model's default parameters already applied
     * @return the turn
     * @throws IllegalArgumentException naming what cannot be served: a parameter out of range,
     *     another model's name, tools for a template without tool support, an unsupported schema
     */
    static ChatTurn prepare(
            LocalModel model,
            ChatTemplate template,
            GenerationConfig defaults,
            ChatSettings settings,
            ChatRequest request) {
        ChatRequestParameters parameters = request.parameters();
        if (parameters.modelName() != null && !parameters.modelName().equals(settings.modelName())) {
            throw new IllegalArgumentException(
                    "modelName '"
                            + parameters.modelName()
                            + "' is not this model; this chat model runs '"
                            + settings.modelName()
                            + "'");
        }
        List<ToolSpecification> tools =
                parameters.toolSpecifications() == null ? List.of() : parameters.toolSpecifications();
        OutputConstraint format = format(parameters.responseFormat());
        ToolChoice choice =
                parameters.toolChoice() == null ? ToolChoice.AUTO : parameters.toolChoice();
        ToolCallSyntax syntax = null;
        boolean parallel = false;
        OutputConstraint constraint = format;
        List<JsonObject> functions = new ArrayList<>();
        if (!tools.isEmpty()) {
            syntax = ToolCallSyntax.forTemplate(template, model.config().modelType());
            parallel = settings.parallelToolCalls() && syntax.allowsParallelCalls();
            Map<String, String> callable = new LinkedHashMap<>();
            for (ToolSpecification tool : tools) {
                functions.add(JsonSchemas.function(tool));
                if (callable.put(tool.name(), JsonSchemas.parameters(tool)) != null) {
                    throw new IllegalArgumentException(
                            "the tool '" + tool.name() + "' is given twice");
                }
            }
            if (choice == ToolChoice.NONE) {
                syntax = null;
            } else if (choice == ToolChoice.REQUIRED) {
                // the reply is the call; the response format is for the answer after it
                constraint = syntax.callConstraint(callable, parallel);
            } else if (format != null) {
                // AUTO: the model calls a tool or answers in the format, either valid
                constraint = OutputConstraint.anyOf(syntax.callConstraint(callable, parallel), format);
            }
        } else if (choice == ToolChoice.REQUIRED) {
            throw new IllegalArgumentException("toolChoice REQUIRED needs tool specifications");
        }
        String rendered =
                template.render(Messages.of(request.messages()), functions, true, Map.of());
        long[] prompt = template.encode(rendered, model.tokenizer());
        GenerationConfig config =
                config(model, defaults, settings, parameters, prompt.length, constraint);
        if (constraint != null) {
            // compiled now, so an unsupported keyword fails the request before it generates
            model.tokenizer().tokenVocabulary().compile(constraint);
        }
        return new ChatTurn(prompt, config, syntax, parallel);
    }

    /** {@code ResponseFormat}: null for text, any JSON object, or its schema. */
    private static OutputConstraint format(ResponseFormat format) {
        if (format == null || format.type() != ResponseFormatType.JSON) {
            return null;
        }
        if (format.jsonSchema() == null || format.jsonSchema().rootElement() == null) {
            return OutputConstraint.anyJsonObject();
        }
        return OutputConstraint.jsonSchema(
                JsonSchemas.of(format.jsonSchema().rootElement()).toString());
    }

    /**
     * The request's parameters over the checkpoint's generation defaults: what a request leaves
     * out is the checkpoint's ({@code generation_config.json}, read once by {@link LocalChat}),
     * the budget the rest of the context window.
     */
    private static GenerationConfig config(
            LocalModel model,
            GenerationConfig defaults,
            ChatSettings settings,
            ChatRequestParameters parameters,
            int promptLength,
            OutputConstraint constraint) {
        GenerationConfig.Builder b = defaults.toBuilder();
        b.maxNewTokens(
                parameters.maxOutputTokens() != null
                        ? parameters.maxOutputTokens()
                        : Math.max(1, model.config().maxPositions() - promptLength));
        if (parameters.temperature() != null) {
            double t = parameters.temperature();
            b.doSample(t > 0).temperature((float) t);
        }
        if (parameters.topP() != null) {
            b.topP(parameters.topP().floatValue());
        }
        if (parameters.topK() != null) {
            b.topK(parameters.topK());
        }
        if (parameters.stopSequences() != null) {
            b.stopStrings(parameters.stopSequences());
        }
        if (parameters.presencePenalty() != null || parameters.frequencyPenalty() != null) {
            b.logitAdjustments(
                    new LogitAdjustments(
                            Map.of(),
                            parameters.presencePenalty() == null
                                    ? 0f
                                    : parameters.presencePenalty().floatValue(),
                            parameters.frequencyPenalty() == null
                                    ? 0f
                                    : parameters.frequencyPenalty().floatValue()));
        }
        return b.seed(settings.seed()).numReturnSequences(1).optConstraint(constraint).build();
    }
}
