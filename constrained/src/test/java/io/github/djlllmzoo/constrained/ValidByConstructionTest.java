package io.github.djlllmzoo.constrained;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import com.fasterxml.jackson.databind.DeserializationFeature;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.networknt.schema.JsonSchema;
import com.networknt.schema.JsonSchemaFactory;
import com.networknt.schema.SchemaValidatorsConfig;
import com.networknt.schema.SpecVersion;
import com.networknt.schema.ValidationMessage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The "valid by construction" target: for every schema of {@code schemas.json} (every
 * supported keyword, nested, recursive, enums, anyOf, bounded arrays), 20 samples per vocabulary
 * (GPT-2, Llama 2, a Qwen2-sized one) parse and validate with an independent validator
 * (networknt's, format assertions on) whenever they end, and a schema whose values are all bounded
 * always ends within the longest text its grammar allows.
 *
 * <p>Sampling is at temperature 1 from random logits: with independent, identically distributed
 * logits every allowed token is equally likely to be drawn, so each step draws uniformly among the
 * tokens the mask allows (what a random-weight model's masked softmax amounts to, without computing
 * 151,936 exponentials a step).
 */
class ValidByConstructionTest {

    private static final int SAMPLES = 20;
    /** The token budget of a schema whose outputs are unbounded (they may not end in it). */
    private static final int UNBOUNDED_BUDGET = 200;
    private static final ObjectMapper MAPPER =
            new ObjectMapper().enable(DeserializationFeature.FAIL_ON_TRAILING_TOKENS);
    private static final JsonSchemaFactory FACTORY = JsonSchemaFactory.getInstance(SpecVersion.VersionFlag.V202012);
    private static final SchemaValidatorsConfig CONFIG =
            SchemaValidatorsConfig.builder().formatAssertionsEnabled(true).build();

    static Stream<Arguments> cases() throws IOException {
        JsonNode all;
        try (InputStream in = ValidByConstructionTest.class.getResourceAsStream("/schemas.json")) {
            all = MAPPER.readTree(in);
        }
        List<Arguments> out = new ArrayList<>();
        for (String vocabulary : List.of("gpt2", "llama2", "qwen2")) {
            for (JsonNode c : all) {
                out.add(Arguments.of(vocabulary, c.get("name").asText(), c.get("schema"), c.get("bounded").asBoolean()));
            }
        }
        return out.stream();
    }

    static TokenVocabulary vocabulary(String name) {
        switch (name) {
            case "gpt2":
                return TestVocabularies.gpt2();
            case "llama2":
                return TestVocabularies.llama2();
            default:
                return TestVocabularies.qwen2();
        }
    }

    static int eos(String name) {
        switch (name) {
            case "gpt2":
                return 50256;
            case "llama2":
                return 2;
            default:
                return TestVocabularies.atomicId(TestVocabularies.qwen2(), "<|im_end|>");
        }
    }

    @ParameterizedTest(name = "{0} {1}")
    @MethodSource("cases")
    void everyEndedSampleParsesAndValidatesAndBoundedSchemasEndWithinTheirBound(
            String vocabularyName, String name, JsonNode schemaNode, boolean bounded) throws Exception {
        TokenVocabulary vocabulary = vocabulary(vocabularyName);
        int eos = eos(vocabularyName);
        CompiledConstraint compiled = vocabulary.compile(OutputConstraint.jsonSchema(schemaNode.toString()));
        JsonSchema validator = FACTORY.getSchema(schemaNode, CONFIG);
        int budget = UNBOUNDED_BUDGET;
        if (bounded) {
            int longest = Longest.bytes(compiled.matcher());
            assertTrue(longest > 0, name + ": a bounded schema's grammar must have a longest output");
            budget = longest + 1; // every token is at least one byte; then EOS
        }
        SplittableRandom random = new SplittableRandom(name.hashCode() * 31L + vocabularyName.hashCode());
        int ended = 0;
        for (int s = 0; s < SAMPLES; s++) {
            ConstraintState state = compiled.newState(List.of(eos));
            ByteArrayOutputStream out = new ByteArrayOutputStream();
            boolean done = false;
            for (int step = 0; step < budget && !done; step++) {
                int token = drawAllowed(state.allowedTokens(), random, vocabulary.size());
                if (token == eos) {
                    done = true;
                } else {
                    state.accept(token);
                    out.writeBytes(vocabulary.bytes(token));
                }
            }
            if (!done) {
                assertTrue(!bounded, name + ": a bounded schema's sample did not end in " + budget + " tokens: " + out);
                continue;
            }
            ended++;
            String text = utf8(out.toByteArray(), name);
            JsonNode value;
            try {
                value = MAPPER.readTree(text);
            } catch (IOException e) {
                fail(name + " on " + vocabularyName + ": does not parse: " + text + " (" + e.getMessage() + ")");
                return;
            }
            Set<ValidationMessage> errors = validator.validate(value);
            assertEquals(Set.of(), errors, name + " on " + vocabularyName + ": " + text);
        }
        if (bounded) {
            assertEquals(SAMPLES, ended, name + ": every sample of a bounded schema ends");
        }
    }

    /** Uniform among the allowed tokens: by rejection when they are many, by rank when few. */
    static int drawAllowed(BitSet allowed, SplittableRandom random, int size) {
        int count = allowed.cardinality();
        assertTrue(count > 0, "some token is always allowed until the output ends");
        if (count * 8 > size) {
            while (true) {
                int id = random.nextInt(size);
                if (allowed.get(id)) {
                    return id;
                }
            }
        }
        int k = random.nextInt(count);
        int id = allowed.nextSetBit(0);
        for (int i = 0; i < k; i++) {
            id = allowed.nextSetBit(id + 1);
        }
        return id;
    }

    static String utf8(byte[] bytes, String name) {
        try {
            return StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(bytes))
                    .toString();
        } catch (CharacterCodingException e) {
            fail(name + ": the output is not valid UTF-8");
            return null;
        }
    }

    /** The longest text (in bytes) a grammar accepts, found over its states; -1 when it has a cycle. */
    static final class Longest {
        private final Matcher matcher;
        private final Map<MatcherState, Integer> memo = new HashMap<>();
        private final Set<MatcherState> onPath = new java.util.HashSet<>();

        private Longest(Matcher matcher) {
            this.matcher = matcher;
        }

        static int bytes(Matcher matcher) {
            return new Longest(matcher).from(matcher.start());
        }

        private int from(MatcherState s) {
            Integer known = memo.get(s);
            if (known != null) {
                return known;
            }
            if (!onPath.add(s)) {
                return Integer.MIN_VALUE / 2; // a cycle: unbounded
            }
            int best = s.accepting ? 0 : Integer.MIN_VALUE / 2;
            for (int b = 0; b < 256; b++) {
                MatcherState t = matcher.advance(s, b);
                if (t != Matcher.DEAD) {
                    int rest = from(t);
                    if (rest < 0) {
                        onPath.remove(s);
                        return Integer.MIN_VALUE / 2;
                    }
                    best = Math.max(best, 1 + rest);
                }
            }
            onPath.remove(s);
            memo.put(s, best);
            return best;
        }
    }
}
