package io.github.djlllmzoo.constrained;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.BitSet;
import java.util.List;
import java.util.SplittableRandom;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

class ConstraintStateTest {

    private static final int GPT2_EOS = 50256;

    /** A tiny byte-level vocabulary: every single byte, a few multi-byte tokens, atomic ones last. */
    private static TokenVocabulary tiny(String... atomic) {
        List<byte[]> tokens = new ArrayList<>();
        for (int b = 0; b < 256; b++) {
            tokens.add(new byte[] {(byte) b});
        }
        for (String t : List.of("{\"", "\":", "\"}", "ab", "\n{", "é")) {
            tokens.add(t.getBytes(StandardCharsets.UTF_8));
        }
        BitSet special = new BitSet();
        for (String t : atomic) {
            special.set(tokens.size());
            tokens.add(t.getBytes(StandardCharsets.UTF_8));
        }
        return TokenVocabulary.of(tokens, special);
    }

    private static String generate(TokenVocabulary v, CompiledConstraint c, int eos, long seed, int budget) {
        ConstraintState state = c.newState(List.of(eos));
        SplittableRandom random = new SplittableRandom(seed);
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        for (int i = 0; i < budget; i++) {
            int token = ValidByConstructionTest.drawAllowed(state.allowedTokens(), random, v.size());
            if (token == eos) {
                return out.toString(StandardCharsets.UTF_8);
            }
            state.accept(token);
            out.writeBytes(v.bytes(token));
        }
        return null;
    }

    @Test
    void maskLeavesExactlyTheAllowedTokensFiniteAndEosOnlyWhenComplete() {
        TokenVocabulary v = TestVocabularies.gpt2();
        CompiledConstraint c = v.compile(OutputConstraint.jsonSchema("{\"type\":\"boolean\"}"));
        ConstraintState state = c.newState(List.of(GPT2_EOS));
        float[] logits = new float[v.size() + 7]; // a model's padded rows past the vocabulary
        java.util.Arrays.fill(logits, 1f);
        state.mask(logits);
        BitSet allowed = state.allowedTokens();
        assertFalse(allowed.get(GPT2_EOS));
        for (int i = 0; i < logits.length; i++) {
            assertEquals(allowed.get(i), logits[i] == 1f, "token " + i);
        }
        for (byte b : "true".getBytes(StandardCharsets.UTF_8)) {
            assertFalse(state.isComplete());
            state.accept(b == 't' ? 83 : b == 'r' ? 81 : b == 'u' ? 84 : 68); // GPT-2's single letters
        }
        assertTrue(state.isComplete());
        assertTrue(state.isFinished());
        assertEquals(BitSet.valueOf(new long[0]).cardinality() + 1, state.allowedTokens().cardinality());
        assertTrue(state.isAllowed(GPT2_EOS));
    }

    @Test
    void aTokenOutsideTheMaskIsRefused() {
        TokenVocabulary v = TestVocabularies.gpt2();
        ConstraintState state = v.compile(OutputConstraint.jsonSchema("{\"type\":\"integer\"}")).newState(List.of(GPT2_EOS));
        assertThrows(IllegalArgumentException.class, () -> state.accept(64)); // "a"
        assertThrows(IllegalArgumentException.class, () -> state.accept(GPT2_EOS));
    }

    @Test
    void aRegexConstraintMatchesTheWholeOutput() {
        TokenVocabulary v = TestVocabularies.llama2();
        CompiledConstraint c = v.compile(OutputConstraint.regex("(yes|no|maybe [0-9]{1,2}%)"));
        Pattern p = Pattern.compile("yes|no|maybe [0-9]{1,2}%");
        for (long seed = 0; seed < 30; seed++) {
            String out = generate(v, c, 2, seed, 20);
            assertTrue(out != null && p.matcher(out).matches(), String.valueOf(out));
        }
    }

    @Test
    void anyOfGivesEitherChoiceAndNothingElse() {
        TokenVocabulary v = tiny("<eos>");
        int eos = v.size() - 1;
        CompiledConstraint c =
                v.compile(
                        OutputConstraint.anyOf(
                                OutputConstraint.sequence(
                                        OutputConstraint.literal("call:"),
                                        OutputConstraint.jsonSchema("{\"enum\": [\"a\", \"b\"]}")),
                                OutputConstraint.jsonSchema("{\"type\": \"boolean\"}")));
        // JSON values may have whitespace around them
        Pattern either = Pattern.compile("call:\\s*\"[ab]\"\\s*|\\s*(true|false)\\s*");
        java.util.Set<Boolean> branches = new java.util.HashSet<>();
        for (long seed = 0; seed < 40; seed++) {
            String out = generate(v, c, eos, seed, 40);
            assertTrue(out != null && either.matcher(out).matches(), String.valueOf(out));
            branches.add(out.startsWith("call:"));
        }
        assertEquals(2, branches.size(), "40 random outputs all took one branch");
        ConstraintState start = c.newState(List.of(eos));
        assertTrue(start.isAllowed('c') && start.isAllowed('t') && start.isAllowed('f'));
        assertFalse(start.isAllowed('x') || start.isAllowed(eos));
    }

    @Test
    void aLiteralMayBeSpelledByItsAtomicTokenButAtomicTokensNeverEnterAValue() {
        TokenVocabulary v = tiny("<tool_call>", "</tool_call>", "<eos>");
        int eos = v.size() - 1;
        int open = v.size() - 3;
        OutputConstraint call =
                OutputConstraint.sequence(
                        OutputConstraint.literal("<tool_call>\n"),
                        OutputConstraint.jsonSchema("{\"type\":\"string\",\"maxLength\":20}"),
                        OutputConstraint.literal("\n</tool_call>"));
        CompiledConstraint c = v.compile(call);
        ConstraintState state = c.newState(List.of(eos));
        // "<tool_call>\n" is one literal: the atomic "<tool_call>" token alone does not spell it.
        assertFalse(state.isAllowed(open));
        CompiledConstraint bare =
                v.compile(OutputConstraint.sequence(
                        OutputConstraint.literal("<tool_call>"), OutputConstraint.literal("\n"),
                        OutputConstraint.jsonSchema("{\"type\":\"string\",\"maxLength\":20}")));
        ConstraintState s2 = bare.newState(List.of(eos));
        assertTrue(s2.isAllowed(open));
        s2.accept(open);
        s2.accept('\n');
        s2.accept('"');
        BitSet inside = s2.allowedTokens();
        assertFalse(inside.get(open) || inside.get(open + 1) || inside.get(eos), "no atomic token inside a string");
        assertTrue(inside.get('<'), "the same text spelled byte by byte is fine inside a string");
    }

    @Test
    void qwenStyleToolCallsRepeatWithTheirSeparator() {
        TokenVocabulary v = TestVocabularies.qwen2();
        int eos = TestVocabularies.atomicId(v, "<|im_end|>");
        String args = "{\"type\":\"object\",\"properties\":{\"name\":{\"const\":\"get_weather\"},"
                + "\"arguments\":{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":8}},"
                + "\"required\":[\"city\"],\"additionalProperties\":false}},\"required\":[\"name\",\"arguments\"],"
                + "\"additionalProperties\":false}";
        OutputConstraint one =
                OutputConstraint.sequence(
                        OutputConstraint.literal("<tool_call>"), OutputConstraint.literal("\n"),
                        OutputConstraint.jsonSchema(args), OutputConstraint.literal("\n"),
                        OutputConstraint.literal("</tool_call>"));
        CompiledConstraint c = v.compile(OutputConstraint.repeat(one, "\n", 1, 3));
        Pattern shape = Pattern.compile("<tool_call>\n\\s*\\{.*?\\}\n</tool_call>(\n<tool_call>\n\\s*\\{.*?\\}\n</tool_call>){0,2}", Pattern.DOTALL);
        for (long seed = 0; seed < 10; seed++) {
            String out = generate(v, c, eos, seed, 400);
            assertTrue(out != null && shape.matcher(out).matches(), String.valueOf(out));
        }
    }

    @Test
    void whitespaceBetweenJsonTokensIsBounded() {
        TokenVocabulary v = tiny("<eos>");
        int eos = v.size() - 1;
        ConstraintState state = v.compile(OutputConstraint.jsonSchema("{\"type\":\"array\",\"items\":{\"type\":\"null\"}}"))
                .newState(List.of(eos));
        state.accept('[');
        state.accept('\n');
        for (int i = 0; i < JsonGrammar.MAX_INDENT; i++) {
            state.accept(' ');
        }
        assertFalse(state.isAllowed(' '));
        assertFalse(state.isAllowed('\n'));
        assertTrue(state.isAllowed('n'));
    }

    @Test
    void unsupportedKeywordsAreRefusedWithTheirPath() {
        TokenVocabulary v = tiny("<eos>");
        UnsupportedSchemaException e =
                assertThrows(
                        UnsupportedSchemaException.class,
                        () -> v.compile(OutputConstraint.jsonSchema(
                                "{\"type\":\"object\",\"properties\":{\"tags\":{\"type\":\"array\",\"uniqueItems\":true}}}")));
        assertEquals("uniqueItems", e.keyword());
        assertEquals("$.properties.tags", e.path());
        UnsupportedSchemaException format =
                assertThrows(UnsupportedSchemaException.class,
                        () -> v.compile(OutputConstraint.jsonSchema("{\"type\":\"string\",\"format\":\"uri\"}")));
        assertEquals("format", format.keyword());
        UnsupportedSchemaException bound =
                assertThrows(UnsupportedSchemaException.class,
                        () -> v.compile(OutputConstraint.jsonSchema("{\"type\":\"number\",\"maximum\":2.5}")));
        assertEquals("maximum", bound.keyword());
        InvalidConstraintException regex =
                assertThrows(InvalidConstraintException.class, () -> v.compile(OutputConstraint.regex("a(?=b)")));
        assertTrue(regex.getMessage().contains("position"), regex.getMessage());
        assertThrows(InvalidConstraintException.class, () -> v.compile(OutputConstraint.jsonSchema("{\"$ref\":\"#/$defs/x\"}")));
    }

    @Test
    void sentencePieceByteFallbackAndSpaceMarkerBecomeBytes() {
        TokenVocabulary v = TestVocabularies.llama2();
        // Llama 2: <0x0A> is id 13, "▁{" is a piece that reads " {".
        assertArrayEquals(new byte[] {'\n'}, v.bytes(13));
        assertTrue(v.isAtomic(2) && v.isAtomic(1) && !v.isAtomic(13));
        TokenVocabulary g = TestVocabularies.gpt2();
        assertArrayEquals(" the".getBytes(StandardCharsets.UTF_8), g.bytes(262));
    }

    @Test
    void constraintsSurviveJavaSerializationAsEqualValues() throws Exception {
        OutputConstraint c =
                OutputConstraint.repeat(
                        OutputConstraint.sequence(OutputConstraint.literal("[TOOL_CALLS]"), OutputConstraint.anyJsonObject(),
                                OutputConstraint.regex("\\d+"), OutputConstraint.jsonSchema("{\"type\":\"null\"}")),
                        ",", 1, 2);
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(c);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            assertEquals(c, in.readObject());
        }
    }

    @Test
    void threadsSharingOneCompiledConstraintAllStayValid() throws Exception {
        TokenVocabulary v = TestVocabularies.gpt2();
        String schema = "{\"type\":\"array\",\"maxItems\":4,\"items\":{\"type\":\"object\",\"properties\":{"
                + "\"k\":{\"enum\":[\"a\",\"b\"]},\"v\":{\"type\":\"integer\",\"minimum\":-50,\"maximum\":50}},"
                + "\"required\":[\"k\",\"v\"],\"additionalProperties\":false}}";
        CompiledConstraint fresh = CompiledConstraint.compile(OutputConstraint.jsonSchema(schema), v);
        java.util.concurrent.ExecutorService pool = java.util.concurrent.Executors.newFixedThreadPool(8);
        try {
            List<java.util.concurrent.Future<String>> outputs = new ArrayList<>();
            for (int t = 0; t < 32; t++) {
                long seed = t;
                outputs.add(pool.submit(() -> generate(v, fresh, GPT2_EOS, seed, 400)));
            }
            com.fasterxml.jackson.databind.ObjectMapper mapper = new com.fasterxml.jackson.databind.ObjectMapper();
            for (java.util.concurrent.Future<String> f : outputs) {
                String out = f.get();
                assertTrue(out != null, "a bounded schema ends");
                com.fasterxml.jackson.databind.JsonNode node = mapper.readTree(out);
                assertTrue(node.isArray() && node.size() <= 4, out);
                for (com.fasterxml.jackson.databind.JsonNode item : node) {
                    int value = item.get("v").asInt();
                    assertTrue(value >= -50 && value <= 50 && item.size() == 2, out);
                }
            }
        } finally {
            pool.shutdown();
        }
    }

    @Test
    void aRepeatedConstraintIsCompiledOnce() {
        TokenVocabulary v = tiny("<eos>");
        assertTrue(v.compile(OutputConstraint.regex("a+")) == v.compile(OutputConstraint.regex("a+")));
    }
}
