package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.Model;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import com.google.gson.stream.JsonReader;
import io.github.djlllmzoo.blocks.CausalLmBlock;
import io.github.djlllmzoo.constrained.InvalidConstraintException;
import io.github.djlllmzoo.constrained.OutputConstraint;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.StringReader;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Constrained generation through the batch generator: a random-weight GPT-2 with the real GPT-2
 * tokenizer, whose outputs under a JSON schema parse and hold the schema's fields whatever the
 * sampling controls, row by row in one batch.
 */
class ConstrainedGenerationTest {

    private static final String SCHEMA =
            "{\"type\":\"object\",\"properties\":{"
                    + "\"name\":{\"type\":\"string\",\"maxLength\":8},"
                    + "\"age\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":120},"
                    + "\"color\":{\"enum\":[\"red\",\"green\"]}},"
                    + "\"required\":[\"name\",\"age\",\"color\"],\"additionalProperties\":false}";

    private static Model model;
    private static TextTokenizer tokenizer;
    private static BatchGenerator generator;

    @BeforeAll
    static void load() throws Exception {
        tokenizer = TextTokenizer.load(TinyModels.gpt2TokenizerDir());
        model = TinyModels.gpt2(TinyModels.GPT2_VOCAB, 256, 11);
        generator = new BatchGenerator((CausalLmBlock) model.getBlock(), model.getNDManager(), tokenizer);
    }

    @AfterAll
    static void close() {
        // nothing was loaded where the tokenizer fixture is absent (the class is skipped)
        if (model != null) {
            model.close();
        }
        if (tokenizer != null) {
            tokenizer.close();
        }
    }

    private static GenerationConfig.Builder constrained() {
        return GenerationConfig.builder()
                .maxNewTokens(120)
                .eosTokenIds(List.of(TinyModels.GPT2_EOS))
                .optConstraint(OutputConstraint.jsonSchema(SCHEMA));
    }

    private static void assertValid(Completion c) {
        assertTrue(
                c.finishReason() == FinishReason.EOS || c.finishReason() == FinishReason.STOP,
                "a bounded schema ends within the budget: " + c.finishReason() + " " + c.text());
        JsonReader reader = new JsonReader(new StringReader(c.text()));
        reader.setStrictness(com.google.gson.Strictness.STRICT);
        JsonObject o = JsonParser.parseReader(reader).getAsJsonObject();
        assertEquals(Set.of("name", "age", "color"), o.keySet(), c.text());
        assertTrue(o.get("name").getAsString().codePointCount(0, o.get("name").getAsString().length()) <= 8);
        int age = o.get("age").getAsInt();
        assertTrue(age >= 0 && age <= 120, c.text());
        assertTrue(Set.of("red", "green").contains(o.get("color").getAsString()), c.text());
    }

    @Test
    void everySampledRowOfABatchIsValidUnderAnySamplingControls() {
        GenerationConfig hot = constrained().doSample(true).temperature(1.0f).topK(0).seed(3L).numReturnSequences(4).build();
        GenerationConfig penalized =
                constrained().doSample(true).temperature(1.5f).topP(0.9f).repetitionPenalty(1.5f).seed(4L).numReturnSequences(2).build();
        List<GenerationResult> results =
                generator.generate(
                        List.of(GenerationRequest.of("Describe a person as JSON:", hot),
                                GenerationRequest.of("x", penalized)),
                        null);
        for (GenerationResult r : results) {
            for (Completion c : r.completions()) {
                assertValid(c);
            }
        }
    }

    @Test
    void aRowWhoseOutputCanOnlyEndStopsWithoutAnotherStep() {
        GenerationConfig literal =
                GenerationConfig.builder().maxNewTokens(50).eosTokenIds(List.of(TinyModels.GPT2_EOS)).greedy()
                        .optConstraint(OutputConstraint.literal(" yes")).build();
        Completion c = generator.generate(List.of(GenerationRequest.of("Answer:", literal)), null).get(0).completions().get(0);
        assertEquals(" yes", c.text());
        assertEquals(FinishReason.STOP, c.finishReason());
        GenerationConfig noEos = literal.toBuilder().eosTokenIds(List.of()).optConstraint(OutputConstraint.literal("")).build();
        Completion empty = generator.generate(List.of(GenerationRequest.of("x", noEos)), null).get(0).completions().get(0);
        assertEquals(0, empty.tokenIds().length);
        assertEquals(FinishReason.STOP, empty.finishReason());
    }

    @Test
    void greedyDecodingIsValidToo() {
        GenerationConfig greedy = constrained().greedy().build();
        assertValid(generator.generate(List.of(GenerationRequest.of("Hello", greedy)), null).get(0).completions().get(0));
    }

    @Test
    void aConstraintNeedsATokenizerAndAValidSchema() throws Exception {
        GenerationConfig bad = constrained().optConstraint(OutputConstraint.jsonSchema("{\"type\":\"string\",\"format\":\"uri\"}")).build();
        assertThrows(InvalidConstraintException.class,
                () -> generator.generate(List.of(GenerationRequest.of("x", bad)), null));
        BatchGenerator idsOnly = new BatchGenerator((CausalLmBlock) model.getBlock(), model.getNDManager(), null);
        GenerationConfig ok = constrained().build();
        assertThrows(IllegalArgumentException.class,
                () -> idsOnly.generate(List.of(GenerationRequest.ofIds(new long[] {1, 2}, ok)), null));
    }

    @Test
    void criteriaArgumentsSetTheConstraintAndRefuseABadOne() throws Exception {
        GenerationTranslatorFactory factory = new GenerationTranslatorFactory();
        java.util.Map<String, Object> arguments = new java.util.HashMap<>();
        arguments.put(GenerationTranslatorFactory.MODEL_DIR, TinyModels.gpt2TokenizerDir().toString());
        arguments.put("json_schema", SCHEMA);
        arguments.put("max_new_tokens", 120);
        arguments.put("do_sample", true);
        arguments.put("seed", 5);
        try (ai.djl.inference.Predictor<String, String> predictor =
                model.newPredictor(factory.newInstance(String.class, String.class, model, arguments))) {
            String text = predictor.predict("Describe a person as JSON:");
            JsonObject o = JsonParser.parseString(text).getAsJsonObject();
            assertEquals(Set.of("name", "age", "color"), o.keySet(), text);
        }
        arguments.put("json_schema", "{\"type\":\"object\",\"minProperties\":1}");
        ai.djl.translate.TranslateException e =
                assertThrows(ai.djl.translate.TranslateException.class,
                        () -> factory.newInstance(String.class, String.class, model, arguments));
        assertTrue(e.getMessage().contains("minProperties"), e.getMessage());
        arguments.put("json_schema", SCHEMA);
        arguments.put("regex", "a+");
        assertThrows(ai.djl.translate.TranslateException.class,
                () -> factory.newInstance(String.class, String.class, model, arguments));
    }

    @Test
    void aConstrainedConfigSurvivesJavaSerialization() throws Exception {
        GenerationConfig config = constrained().seed(9L).build();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(config);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            assertEquals(config, in.readObject());
        }
    }

    @Test
    void theTokenVocabularyReadsTheTokenizersBytes() {
        byte[] the = tokenizer.tokenVocabulary().bytes(262);
        assertEquals(" the", new String(the, java.nio.charset.StandardCharsets.UTF_8));
    }
}
