package io.github.djlllmzoo.langchain4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.ResponseFormat;
import dev.langchain4j.model.chat.request.ToolChoice;
import dev.langchain4j.model.chat.request.json.JsonObjectSchema;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.output.FinishReason;
import io.github.djlllmzoo.chat.ChatMessage;
import io.github.djlllmzoo.chat.ChatTemplate;
import io.github.djlllmzoo.constrained.ConstraintState;
import io.github.djlllmzoo.translators.GenerationConfig;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * {@link LlmZooChatModel} and {@link LlmZooStreamingChatModel} on a random-weight model: required
 * tool calls in the Qwen2.5, Mistral v0.3 and Llama 3.2 templates' syntaxes, streamed as each
 * closes and equal to the whole response's; JSON response formats; the request's parameters
 * (output budget, stop sequences) and the token usage; refusals naming what is at fault.
 */
class LlmZooChatModelTest extends OnToolCallingModel {

    private static final List<String> FAMILIES =
            List.of("qwen2.5-instruct", "mistral-7b-instruct-v0.3", "llama3.2-instruct");

    private static final Set<String> CITIES = Set.of("Paris", "Oslo", "Lima");

    private static ToolSpecification weather() {
        return ToolSpecification.builder()
                .name("get_weather")
                .description("Looks up the weather")
                .parameters(
                        JsonObjectSchema.builder()
                                .addEnumProperty("city", List.copyOf(CITIES))
                                .addBooleanProperty("hourly")
                                .required("city", "hourly")
                                .build())
                .build();
    }

    private static ChatRequest.Builder ask(String question) {
        return ChatRequest.builder().messages(UserMessage.from(question));
    }

    /** What a streaming handler was told. */
    private static final class Recorder implements StreamingChatResponseHandler {
        final StringBuilder text = new StringBuilder();
        final List<CompleteToolCall> calls = new ArrayList<>();
        ChatResponse response;
        Throwable error;

        @Override
        public void onPartialResponse(String piece) {
            text.append(piece);
        }

        @Override
        public void onCompleteToolCall(CompleteToolCall call) {
            calls.add(call);
        }

        @Override
        public void onCompleteResponse(ChatResponse value) {
            response = value;
        }

        @Override
        public void onError(Throwable value) {
            error = value;
        }
    }

    @Test
    void requiredToolCallsParseInEveryFamilysSyntaxAndStreamAsTheWholeResponsesCalls()
            throws Exception {
        for (String family : FAMILIES) {
            ChatTemplate template = ToolCallingCheckpoint.template(family, dir);
            for (long seed = 1; seed <= 3; seed++) {
                LlmZooChatModel.Builder builder =
                        LlmZooChatModel.builder(model)
                                .chatTemplate(template)
                                .seed(seed)
                                .parallelToolCalls(false)
                                .defaultRequestParameters(
                                        ChatRequestParameters.builder().temperature(1.0).build());
                ChatRequest request =
                        ask("Weather in Oslo?")
                                .toolSpecifications(weather())
                                .toolChoice(ToolChoice.REQUIRED)
                                .build();
                Recorder streamed = new Recorder();
                builder.buildStreaming().chat(request, streamed);
                ChatResponse whole = builder.build().chat(request);
                String label = family + ", seed " + seed + ": " + whole;
                assertNull(streamed.error, label);
                assertEquals(FinishReason.TOOL_EXECUTION, whole.finishReason(), label);
                List<ToolExecutionRequest> calls = whole.aiMessage().toolExecutionRequests();
                assertEquals(1, calls.size(), label);
                JsonObject arguments =
                        JsonParser.parseString(calls.get(0).arguments()).getAsJsonObject();
                assertEquals("get_weather", calls.get(0).name(), label);
                assertEquals(Set.of("city", "hourly"), arguments.keySet(), label);
                assertTrue(CITIES.contains(arguments.get("city").getAsString()), label);
                assertTrue(arguments.get("hourly").getAsJsonPrimitive().isBoolean(), label);
                // the same seed, the same reply: streamed calls are the whole response's
                assertEquals(1, streamed.calls.size(), label);
                assertEquals(0, streamed.calls.get(0).index());
                ToolExecutionRequest first = streamed.calls.get(0).toolExecutionRequest();
                assertEquals(calls.get(0).name(), first.name(), label);
                assertEquals(calls.get(0).arguments(), first.arguments(), label);
                assertEquals(
                        streamed.response.aiMessage().toolExecutionRequests(),
                        List.of(first),
                        label);
            }
        }
    }

    @Test
    void withToolsAndASchemaAutoRepliesWithAValidCallOrAValidAnswer() throws Exception {
        ResponseFormat answer =
                ResponseFormat.builder()
                        .type(dev.langchain4j.model.chat.request.ResponseFormatType.JSON)
                        .jsonSchema(
                                dev.langchain4j.model.chat.request.json.JsonSchema.builder()
                                        .name("Verdict")
                                        .rootElement(
                                                JsonObjectSchema.builder()
                                                        .addEnumProperty("sky", List.of("CLEAR", "SNOW"))
                                                        .build())
                                        .build())
                        .build();
        ChatRequest.Builder request =
                ask("Weather in Oslo?")
                        .toolSpecifications(weather())
                        .toolChoice(ToolChoice.AUTO)
                        .responseFormat(answer);
        // the reply may start either way: a call's '<' and the answer's '{' are both allowed
        ChatTurn turn =
                ChatTurn.prepare(
                        model,
                        ChatTemplate.forCheckpoint(model.dir()),
                        GenerationConfig.forCheckpoint(model.dir(), model.config()).build(),
                        new ChatSettings("zoo", true, null),
                        request.build());
        ConstraintState start =
                model.tokenizer()
                        .tokenVocabulary()
                        .compile(turn.config().constraint())
                        .newState(model.eosTokenIds());
        for (String first : List.of("<", "{")) {
            assertTrue(start.isAllowed((int) model.tokenizer().encode(first)[0]), first);
        }
        for (long seed = 1; seed <= 12; seed++) {
            ChatResponse response =
                    LlmZooChatModel.builder(model)
                            .seed(seed)
                            .defaultRequestParameters(
                                    ChatRequestParameters.builder().temperature(1.0).build())
                            .build()
                            .chat(request.build());
            String label = "seed " + seed + ": " + response;
            if (response.finishReason() == FinishReason.TOOL_EXECUTION) {
                JsonObject arguments =
                        JsonParser.parseString(
                                        response.aiMessage().toolExecutionRequests().get(0).arguments())
                                .getAsJsonObject();
                assertTrue(CITIES.contains(arguments.get("city").getAsString()), label);
            } else {
                assertEquals(FinishReason.STOP, response.finishReason(), label);
                JsonObject verdict =
                        JsonParser.parseString(response.aiMessage().text()).getAsJsonObject();
                assertEquals(Set.of("sky"), verdict.keySet(), label);
                assertTrue(Set.of("CLEAR", "SNOW").contains(verdict.get("sky").getAsString()), label);
            }
        }
    }

    @Test
    void aJsonResponseFormatGivesAJsonObjectAndUsageCountsTheRenderedPrompt() throws Exception {
        LlmZooChatModel chat =
                LlmZooChatModel.builder(model)
                        .seed(5L)
                        .defaultRequestParameters(
                                ChatRequestParameters.builder().temperature(1.0).build())
                        .build();
        for (int i = 0; i < 3; i++) {
            ChatResponse response =
                    chat.chat(
                            ask("Reply in JSON")
                                    .responseFormat(ResponseFormat.JSON)
                                    .maxOutputTokens(400)
                                    .build());
            if (response.finishReason() == FinishReason.STOP) {
                assertTrue(
                        JsonParser.parseString(response.aiMessage().text()).isJsonObject(),
                        response.aiMessage().text());
            } else {
                assertEquals(FinishReason.LENGTH, response.finishReason());
                assertTrue(
                        response.aiMessage().text().strip().startsWith("{"),
                        response.aiMessage().text());
            }
            ChatTemplate template = ChatTemplate.forCheckpoint(model.dir());
            long[] prompt =
                    template.encode(
                            template.render(List.of(new ChatMessage("user", "Reply in JSON"))),
                            model.tokenizer());
            assertEquals(prompt.length, response.tokenUsage().inputTokenCount());
            int output = response.tokenUsage().outputTokenCount();
            assertTrue(output > 0 && output <= 400, response.tokenUsage().toString());
            assertEquals(prompt.length + output, response.tokenUsage().totalTokenCount());
        }
    }

    @Test
    void maxOutputTokensAndStopSequencesEndTheReply() {
        LlmZooChatModel chat = LlmZooChatModel.builder(model).build(); // greedy: no generation_config
        ChatResponse three = chat.chat(ask("Tell a story").maxOutputTokens(3).build());
        assertEquals(FinishReason.LENGTH, three.finishReason());
        assertEquals(3, three.tokenUsage().outputTokenCount());
        ChatResponse longer = chat.chat(ask("Tell a story").maxOutputTokens(12).build());
        String text = longer.aiMessage().text();
        assertTrue(text.startsWith(three.aiMessage().text()), text);
        String stop = text.substring(text.length() / 2, text.length() / 2 + 1);
        ChatResponse stopped =
                chat.chat(ask("Tell a story").maxOutputTokens(12).stopSequences(List.of(stop)).build());
        assertEquals(FinishReason.STOP, stopped.finishReason());
        assertEquals(text.substring(0, text.indexOf(stop)), stopped.aiMessage().text());
    }

    @Test
    void whatCannotBeServedIsRefusedNamingIt() throws Exception {
        LlmZooChatModel chat = LlmZooChatModel.builder(model).modelName("zoo").build();
        IllegalArgumentException otherModel =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> chat.chat(ask("x").modelName("gpt-4o").build()));
        assertTrue(otherModel.getMessage().contains("'gpt-4o'"), otherModel.getMessage());
        IllegalArgumentException noToolSupport =
                assertThrows(
                        IllegalArgumentException.class,
                        () ->
                                LlmZooChatModel.builder(model)
                                        .chatTemplate(ToolCallingCheckpoint.template("gemma-2-it", dir))
                                        .build()
                                        .chat(ask("x").toolSpecifications(weather()).build()));
        assertTrue(noToolSupport.getMessage().contains("no tool support"), noToolSupport.getMessage());
        IllegalArgumentException requiredWithoutTools =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> chat.chat(ask("x").toolChoice(ToolChoice.REQUIRED).build()));
        assertTrue(requiredWithoutTools.getMessage().contains("REQUIRED"));
        IllegalArgumentException penalty =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> chat.chat(ask("x").presencePenalty(3.0).build()));
        assertTrue(penalty.getMessage().contains("presence_penalty"), penalty.getMessage());
    }
}
