package io.github.djlllmzoo.translators;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** Streaming text out of the real GPT-2 byte-level tokenizer (skipped without the fixture). */
class IncrementalDetokenizerTest {

    private static TextTokenizer tokenizer;

    @BeforeAll
    static void load() throws Exception {
        tokenizer = TextTokenizer.load(TinyModels.gpt2TokenizerDir());
    }

    @AfterAll
    static void close() {
        if (tokenizer != null) {
            tokenizer.close();
        }
    }

    private static List<String> stream(long[] ids, IncrementalDetokenizer detokenizer) {
        List<String> pieces = new ArrayList<>();
        for (long id : ids) {
            pieces.add(detokenizer.accept(id));
            if (detokenizer.stopped()) {
                break;
            }
        }
        pieces.add(detokenizer.finish());
        return pieces;
    }

    @Test
    void charactersSplitAcrossTokensAreEmittedOnlyWhenComplete() {
        String text = "Llamas 🦙 and café € ok";
        long[] ids = tokenizer.encode(text);
        boolean splitSeen = false;
        for (int n = 1; n <= ids.length; n++) {
            splitSeen |= tokenizer.decode(Arrays.copyOf(ids, n)).endsWith("\uFFFD");
        }
        assertTrue(splitSeen, "the text has a character whose bytes span tokens");
        List<String> pieces = stream(ids, new IncrementalDetokenizer(tokenizer, new StopStrings(List.of())));
        for (String piece : pieces) {
            assertFalse(piece.contains("\uFFFD"), "piece " + piece);
        }
        assertEquals(text, String.join("", pieces));
        assertTrue(pieces.contains(" 🦙") || pieces.stream().anyMatch(p -> p.contains("🦙")));
    }

    @Test
    void streamedPiecesAddUpToTheWholeDecodeForGpt2AndLlama2Tokenizers() throws Exception {
        String text = "Once upon a time, 小さな猫が言った: «Ça va?» — Привет! 🦙🦙 naïve café 12.5% ok\n\tdone";
        try (TextTokenizer llama = TextTokenizer.load(TinyModels.llama2TokenizerDir())) {
            for (TextTokenizer t : List.of(tokenizer, llama)) {
                assertStreamsTheWholeDecode(t, t.encode(text));
                java.util.Random random = new java.util.Random(7);
                for (int trial = 0; trial < 200; trial++) {
                    // any ids: lone bytes of split characters, special tokens, words without their leading space
                    long[] ids = new long[1 + random.nextInt(40)];
                    for (int i = 0; i < ids.length; i++) {
                        ids[i] = random.nextInt(t.vocabularySize());
                    }
                    assertStreamsTheWholeDecode(t, ids);
                }
            }
        }
    }

    private static void assertStreamsTheWholeDecode(TextTokenizer t, long[] ids) {
        List<String> pieces = stream(ids, new IncrementalDetokenizer(t, new StopStrings(List.of())));
        assertEquals(t.decode(ids), String.join("", pieces), "ids " + Arrays.toString(ids));
        for (String piece : pieces.subList(0, pieces.size() - 1)) {
            assertFalse(piece.endsWith("\uFFFD"), "an incomplete character was handed out: ids " + Arrays.toString(ids));
        }
    }

    @Test
    void aLongAnswerDecodesAWindowNotEverythingEachToken() {
        long[] ids = tokenizer.encode("The quick brown fox jumps over the lazy dog. ".repeat(40));
        long[] decoded = {0};
        List<String> pieces = stream(ids, new IncrementalDetokenizer(window -> {
            decoded[0] += window.length;
            return tokenizer.decode(window);
        }, new StopStrings(List.of())));
        assertEquals(tokenizer.decode(ids), String.join("", pieces));
        // two windows of a few tokens each a token; decoding everything each token would be ids.length^2 / 2
        assertTrue(decoded[0] <= 8L * ids.length, decoded[0] + " ids decoded for " + ids.length + " tokens");
    }

    @Test
    void aStopStringEndsTheTextBeforeItEvenAcrossTokens() {
        long[] ids = tokenizer.encode("Hello world, and more");
        IncrementalDetokenizer detokenizer = new IncrementalDetokenizer(tokenizer, new StopStrings(List.of("lo wo")));
        List<String> pieces = stream(ids, detokenizer);
        assertTrue(detokenizer.stopped());
        assertEquals("Hel", detokenizer.text());
        assertEquals("Hel", String.join("", pieces));
    }

    @Test
    void textThatMightStartAStopStringIsHeldBackUntilItCannot() {
        long[] ids = tokenizer.encode("Hello world");
        IncrementalDetokenizer detokenizer = new IncrementalDetokenizer(tokenizer, new StopStrings(List.of("lo!")));
        assertEquals("Hel", detokenizer.accept(ids[0]), "\"lo\" could start \"lo!\"");
        assertEquals("lo world", detokenizer.accept(ids[1]));
        assertFalse(detokenizer.stopped());
        assertEquals("", detokenizer.finish());
    }

    @Test
    void heldBackTextIsReleasedWhenTheSequenceEnds() {
        long[] ids = tokenizer.encode("Hello");
        IncrementalDetokenizer detokenizer = new IncrementalDetokenizer(tokenizer, new StopStrings(List.of("lo!")));
        List<String> pieces = stream(ids, detokenizer);
        assertEquals(List.of("Hel", "lo"), pieces);
        assertEquals("Hello", detokenizer.text());
    }

    @Test
    void theEarliestOfSeveralStopStringsWins() {
        StopStrings stops = new StopStrings(List.of("world", "lo"));
        assertEquals(3, stops.find("Hello world", 0));
        assertEquals(6, stops.find("Hello world", 4));
        assertEquals(-1, stops.find("Hi", 0));
        assertEquals(1, new StopStrings(List.of("cx")).partialMatch("zzabc"));
        assertEquals(3, new StopStrings(List.of("cx", "abcd")).partialMatch("zzabc"));
        assertEquals(3, new StopStrings(List.of("abcd")).partialMatch("zzabc"));
        assertEquals(0, new StopStrings(List.of("abcd")).partialMatch("zzab c"));
    }
}
