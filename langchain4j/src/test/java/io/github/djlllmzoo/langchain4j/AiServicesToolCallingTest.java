package io.github.djlllmzoo.langchain4j;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.model.chat.Capability;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequestParameters;
import dev.langchain4j.model.openai.OpenAiChatModel;
import dev.langchain4j.service.AiServices;
import io.github.djlllmzoo.server.OpenAiServer;
import io.github.djlllmzoo.server.ServerOptions;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * An {@code AiServices} service that calls a {@code @Tool} method and returns a record, on a
 * random-weight model with Qwen2.5's chat template: in process through {@link LlmZooChatModel},
 * and through LangChain4j's {@code OpenAiChatModel} against the OpenAI-compatible server on
 * loopback. {@link ToolChoicePerTurn#callThenAnswer()} makes the first turn a required call
 * (decoding constrained to a {@code <tool_call>} block with valid arguments) and the turn after
 * the tool's result the answer (constrained to the record's JSON schema), so that a model of
 * random choices, sampled at temperature 1, still gives a call that parses and a record.
 */
class AiServicesToolCallingTest extends OnToolCallingModel {

    // doc:service
    enum City { PARIS, OSLO, LIMA }

    enum Sky { CLEAR, CLOUDY, SNOW }

    record Forecast(City city, Sky sky, boolean windy) {}

    interface Forecaster {
        Forecast forecast(String question);
    }

    static class WeatherTools {
        final List<City> asked = new ArrayList<>();

        @Tool("Looks up today's weather in a city")
        String weather(@P(name = "city", value = "the city") City city) {
            asked.add(city);
            return "snow, -3 degrees, strong wind";
        }
    }
    // end

    /** Asks three times: each answer is a record, each after exactly one call of the tool. */
    private static void assertCallsTheToolAndReturnsARecord(ChatModel model) {
        for (int question = 0; question < 3; question++) {
            WeatherTools tools = new WeatherTools();
            // doc:ask
            Forecaster forecaster =
                    AiServices.builder(Forecaster.class)
                            .chatModel(ToolChoicePerTurn.callThenAnswer().wrap(model))
                            .tools(tools)
                            .build();
            Forecast forecast = forecaster.forecast("What is the weather in Oslo today?");
            // end
            assertEquals(1, tools.asked.size(), tools.asked.toString());
            assertNotNull(tools.asked.get(0));
            assertNotNull(forecast);
            assertNotNull(forecast.city(), forecast.toString());
            assertNotNull(forecast.sky(), forecast.toString());
        }
    }

    @Test
    void anAiServiceInProcessCallsTheToolAndReturnsARecord() {
        // doc:in-process
        ChatModel chatModel =
                LlmZooChatModel.builder(model)
                        .defaultRequestParameters(
                                ChatRequestParameters.builder().temperature(1.0).build())
                        .seed(11L)
                        .build();
        // end
        assertCallsTheToolAndReturnsARecord(chatModel);
    }

    @Test
    void theSameServiceThroughOpenAiChatModelAgainstTheServerCallsTheToolAndReturnsARecord()
            throws Exception {
        try (OpenAiServer server =
                OpenAiServer.start(
                        model,
                        ServerOptions.DEFAULTS
                                .withAddress("127.0.0.1", 0)
                                .withModelId("zoo")
                                .withScheduling(8, 4, Duration.ofMillis(1)))) {
            int port = server.port();
            // doc:http
            ChatModel chatModel =
                    OpenAiChatModel.builder()
                            .baseUrl("http://127.0.0.1:" + port + "/v1")
                            .apiKey("unused")
                            .modelName("zoo")
                            .temperature(1.0)
                            .seed(11)
                            .strictTools(true)
                            .strictJsonSchema(true)
                            .supportedCapabilities(Capability.RESPONSE_FORMAT_JSON_SCHEMA)
                            .build();
            // end
            assertCallsTheToolAndReturnsARecord(chatModel);
        }
    }
}
