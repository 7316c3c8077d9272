package io.github.djlllmzoo.langchain4j;

import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.gson.JsonParser;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.model.chat.request.json.JsonAnyOfSchema;
import dev.langchain4j.model.chat.request.json.JsonArraySchema;
import dev.langchain4j.model.chat.request.json.JsonIntegerSchema;
import dev.langchain4j.model.chat.request.json.JsonNullSchema;
import dev.langchain4j.model.chat.request.json.JsonObjectSchema;
import dev.langchain4j.model.chat.request.json.JsonRawSchema;
import dev.langchain4j.model.chat.request.json.JsonReferenceSchema;
import dev.langchain4j.model.chat.request.json.JsonStringSchema;
import io.github.djlllmzoo.constrained.OutputConstraint;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * LangChain4j's schema elements become the strict JSON Schema documents OpenAI's strict mode
 * reads, which the constrained decoder compiles: every element type, definitions and a recursive
 * reference, raw schemas as written.
 */
class JsonSchemasTest {

    @TempDir Path dir;

    @Test
    void everyElementTypeMapsToStrictJsonSchemaThatCompiles() throws Exception {
        JsonObjectSchema person =
                JsonObjectSchema.builder()
                        .addStringProperty("name", "the full name")
                        .addIntegerProperty("age")
                        .addNumberProperty("height")
                        .addBooleanProperty("member")
                        .addEnumProperty("role", List.of("OWNER", "GUEST"))
                        .addProperty(
                                "nickname",
                                JsonAnyOfSchema.builder()
                                        .anyOf(new JsonStringSchema(), new JsonNullSchema())
                                        .build())
                        .addProperty(
                                "children",
                                JsonArraySchema.builder()
                                        .items(JsonReferenceSchema.builder().reference("Person").build())
                                        .build())
                        .required("name")
                        .build();
        JsonObjectSchema root =
                JsonObjectSchema.builder()
                        .addProperty("owner", JsonReferenceSchema.builder().reference("Person").build())
                        .addProperty(
                                "code", JsonRawSchema.from("{\"type\": \"string\", \"maxLength\": 4}"))
                        .definitions(Map.of("Person", person))
                        .build();
        String expected =
                "{\"type\": \"object\", \"properties\": {\"owner\": {\"$ref\": \"#/$defs/Person\"},"
                        + " \"code\": {\"type\": \"string\", \"maxLength\": 4}}, \"required\":"
                        + " [\"owner\", \"code\"], \"additionalProperties\": false, \"$defs\":"
                        + " {\"Person\": {\"type\": \"object\", \"properties\": {\"name\": {\"type\":"
                        + " \"string\", \"description\": \"the full name\"}, \"age\": {\"type\":"
                        + " \"integer\"}, \"height\": {\"type\": \"number\"}, \"member\": {\"type\":"
                        + " \"boolean\"}, \"role\": {\"type\": \"string\", \"enum\": [\"OWNER\","
                        + " \"GUEST\"]}, \"nickname\": {\"anyOf\": [{\"type\": \"string\"}, {\"type\":"
                        + " \"null\"}]}, \"children\": {\"type\": \"array\", \"items\": {\"$ref\":"
                        + " \"#/$defs/Person\"}}}, \"required\": [\"name\", \"age\", \"height\","
                        + " \"member\", \"role\", \"nickname\", \"children\"],"
                        + " \"additionalProperties\": false}}}";
        String schema = JsonSchemas.of(root).toString();
        assertEquals(JsonParser.parseString(expected), JsonParser.parseString(schema));
        try (TextTokenizer tokenizer = TextTokenizer.load(ToolCallingCheckpoint.write(dir))) {
            tokenizer.tokenVocabulary().compile(OutputConstraint.jsonSchema(schema));
        }
    }

    @Test
    void aToolIsAnOpenAiFunctionAndOneWithoutParametersTakesNone() {
        ToolSpecification clock = ToolSpecification.builder().name("now").build();
        assertEquals(
                JsonParser.parseString(
                        "{\"type\": \"function\", \"function\": {\"name\": \"now\", \"parameters\":"
                                + " {\"type\": \"object\", \"properties\": {},"
                                + " \"additionalProperties\": false}}}"),
                JsonSchemas.function(clock));
        ToolSpecification weather =
                ToolSpecification.builder()
                        .name("weather")
                        .description("Looks up the weather")
                        .parameters(
                                JsonObjectSchema.builder()
                                        .addProperty("days", new JsonIntegerSchema())
                                        .build())
                        .build();
        assertEquals(
                JsonParser.parseString(
                        "{\"type\": \"object\", \"properties\": {\"days\": {\"type\": \"integer\"}},"
                                + " \"required\": [\"days\"], \"additionalProperties\": false}"),
                JsonParser.parseString(JsonSchemas.parameters(weather)));
    }
}
