package io.github.djlllmzoo.langchain4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.Capability;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.chat.request.ToolChoice;
import dev.langchain4j.model.chat.request.json.JsonObjectSchema;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.CompleteToolCall;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.openai.OpenAiChatModel;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.service.AiServices;
import io.github.djlllmzoo.benchmarks.RandomGpt2Checkpoint;
import io.github.djlllmzoo.chat.TemplateCheckpoints;
import io.github.djlllmzoo.server.OpenAiServer;
import io.github.djlllmzoo.server.ServerOptions;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * LangChain4j in process on a random GPT-2 wearing Qwen2.5's chat template: AiServices calls a
 * {@code @Tool} method and returns a record, required tool calls always parse, and the streaming
 * model gives the calls and text of the whole reply.
 */
class LlmZooChatModelTest {

    /** Cities the tool and the record know. */
    enum City {
        PARIS,
        OSLO,
        LIMA
    }

    /** What the assistant returns. */
    record Forecast(City city, boolean sunny) {}

    /** The service under test. */
    interface Forecaster {
        Forecast forecast(String question);
    }

    /** A tool that records its calls. */
    static final class WeatherTools {
        final List<City> calls = new ArrayList<>();

        @Tool("Tells whether it is sunny in a city")
        boolean sunny(@P(name = "city", value = "The city") City city) {
            calls.add(city);
            return city == City.LIMA;
        }
    }

    @TempDir static Path dir;

    private static LocalModel model;

    @BeforeAll
    static void load() throws Exception {
        String fixtures = System.getProperty("llmzoo.fixtures");
        Path tokenizer = fixtures == null ? null : Paths.get(fixtures, "gpt2-tokenizer");
        Assumptions.assumeTrue(
                tokenizer != null && Files.isRegularFile(tokenizer.resolve("tokenizer.json")),
                "no GPT-2 tokenizer fixture at " + tokenizer);
        Path gpt2 = dir.resolve("gpt2");
        RandomGpt2Checkpoint.write(gpt2, tokenizer, 32, 1, 4, 2048, 7);
        model =
                LocalModel.load(
                        TemplateCheckpoints.withTemplate(gpt2, "qwen2.5-instruct", dir.resolve("qwen")));
    }

    @AfterAll
    static void close() {
        if (model != null) {
            model.close();
        }
    }

    /**
     * A random model never chooses to call a tool, so this asks for a call (tool choice required)
     * until the conversation holds a tool's result, as a real model would decide by itself.
     */
    private static ChatModel callingToolsFirst(ChatModel inner) {
        return new ChatModel() {
            @Override
            public ChatResponse doChat(ChatRequest request) {
                boolean answered =
                        request.messages().stream().anyMatch(m -> m instanceof ToolExecutionResultMessage);
                if (answered || request.parameters().toolSpecifications().isEmpty()) {
                    return inner.chat(request);
                }
                ChatRequestParameters required =
                        request.parameters()
                                .overrideWith(
                                        ChatRequestParameters.builder()
                                                .toolChoice(ToolChoice.REQUIRED)
                                                .build());
                return inner.chat(
                        ChatRequest.builder().messages(request.messages()).parameters(required).build());
            }

            @Override
            public java.util.Set<Capability> supportedCapabilities() {
                return inner.supportedCapabilities();
            }
        };
    }

    @Test
    void anAiServiceCallsItsToolInProcessAndReturnsARecord() {
        try (LlmZooChatModel chat = new LlmZooChatModel(model, "random-qwen")) {
            WeatherTools tools = new WeatherTools();
            Forecaster forecaster =
                    AiServices.builder(Forecaster.class)
                            .chatModel(callingToolsFirst(chat))
                            .tools(tools)
                            .build();
            Forecast forecast = forecaster.forecast("Is it sunny in Lima?");
            assertEquals(1, tools.calls.size(), "the tool was called once");
            assertNotNull(forecast.city(), forecast.toString());
        }
    }

    @Test
    void theSameAiServiceCallsItsToolThroughOpenAiChatModelAgainstTheServer() throws Exception {
        try (OpenAiServer server =
                OpenAiServer.start(model, ServerOptions.DEFAULTS.withAddress("127.0.0.1", 0))) {
            ChatModel openAi =
                    OpenAiChatModel.builder()
                            .baseUrl(server.uri() + "/v1")
                            .apiKey("not-needed")
                            .modelName(server.modelId())
                            .supportedCapabilities(Capability.RESPONSE_FORMAT_JSON_SCHEMA)
                            .strictJsonSchema(true)
                            .timeout(Duration.ofMinutes(2))
                            .build();
            WeatherTools tools = new WeatherTools();
            Forecaster forecaster =
                    AiServices.builder(Forecaster.class)
                            .chatModel(callingToolsFirst(openAi))
                            .tools(tools)
                            .build();
            Forecast forecast = forecaster.forecast("Is it sunny in Lima?");
            assertEquals(1, tools.calls.size(), "the tool was called once");
            assertNotNull(forecast.city(), forecast.toString());
        }
    }

    private static ChatRequest requiredCall() {
        ToolSpecification spec =
                ToolSpecification.builder()
                        .name("sunny")
                        .description("Tells whether it is sunny in a city")
                        .parameters(
                                JsonObjectSchema.builder()
                                        .addEnumProperty("city", List.of("PARIS", "OSLO", "LIMA"))
                                        .required("city")
                                        .build())
                        .build();
        return ChatRequest.builder()
                .messages(UserMessage.from("Is it sunny in Oslo?"))
                .parameters(
                        ChatRequestParameters.builder()
                                .toolSpecifications(spec)
                                .toolChoice(ToolChoice.REQUIRED)
                                .temperature(1.0)
                                .maxOutputTokens(200)
                                .build())
                .build();
    }

    @Test
    void requiredToolCallsAlwaysParseAndTheStreamingModelGivesTheSameCalls() {
        try (LlmZooChatModel chat = new LlmZooChatModel(model, "random-qwen");
                LlmZooStreamingChatModel streaming = new LlmZooStreamingChatModel(model, "random-qwen")) {
            for (int sample = 0; sample < 4; sample++) {
                ChatResponse response = chat.chat(requiredCall());
                assertEquals(FinishReason.TOOL_EXECUTION, response.finishReason());
                List<ToolExecutionRequest> calls = response.aiMessage().toolExecutionRequests();
                assertFalse(calls.isEmpty());
                for (ToolExecutionRequest call : calls) {
                    assertEquals("sunny", call.name());
                    assertTrue(
                            call.arguments().matches("\\{\\s*\"city\"\\s*:\\s*\"(PARIS|OSLO|LIMA)\"\\s*}"),
                            call.arguments());
                }
            }
            List<CompleteToolCall> streamed = new ArrayList<>();
            ChatResponse[] complete = new ChatResponse[1];
            streaming.chat(
                    requiredCall(),
                    new StreamingChatResponseHandler() {
                        @Override
                        public void onCompleteToolCall(CompleteToolCall call) {
                            streamed.add(call);
                        }

                        @Override
                        public void onCompleteResponse(ChatResponse response) {
                            complete[0] = response;
                        }

                        @Override
                        public void onError(Throwable error) {
                            throw new AssertionError(error);
                        }
                    });
            List<ToolExecutionRequest> whole = complete[0].aiMessage().toolExecutionRequests();
            assertEquals(whole.size(), streamed.size());
            for (int i = 0; i < whole.size(); i++) {
                assertEquals(i, streamed.get(i).index());
                assertEquals(whole.get(i).name(), streamed.get(i).toolExecutionRequest().name());
                assertEquals(
                        whole.get(i).arguments(), streamed.get(i).toolExecutionRequest().arguments());
            }
        }
    }
}
