package io.github.djlllmzoo.defaultmodel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.huggingface.tokenizers.Encoding;
import ai.djl.huggingface.tokenizers.HuggingFaceTokenizer;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.blocks.config.CheckpointFiles;
import io.github.djlllmzoo.constrained.ByteLevelAlphabet;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ByteLevelBpeTrainerTest {

    /**
     * No truncation (DJL truncates to 512 by default), no padding, no BOS unless asked. DJL pitfall:
     * with "addSpecialTokens" false, {@code decode(ids)} also skips special tokens; {@code
     * decode(ids, false)} keeps them.
     */
    private static final Map<String, String> RAW =
            Map.of("truncation", "false", "padding", "false", "addSpecialTokens", "false");

    private static final int VOCAB = 1024;

    @TempDir static Path dir;

    private static String corpusText;
    private static Path corpusFile;
    private static TrainedTokenizer trained;
    private static ReferenceBpeEncoder reference;
    private static Path tokenizerDir;
    private static HuggingFaceTokenizer hf;

    @BeforeAll
    static void trainOnStories() throws IOException {
        corpusFile = dir.resolve("stories.txt");
        new StoryCorpus(99).write(corpusFile, 600); // about 400 KB
        corpusText = Files.readString(corpusFile);
        trained = ByteLevelBpeTrainer.train(corpusFile, VOCAB, ByteLevelBpeTrainer.DEFAULT_SPECIAL_TOKENS);
        reference = new ReferenceBpeEncoder(trained);
        tokenizerDir = dir.resolve("tokenizer");
        trained.save(tokenizerDir);
        hf = HuggingFaceTokenizer.newInstance(tokenizerDir.resolve(CheckpointFiles.TOKENIZER), RAW);
    }

    @AfterAll
    static void close() {
        if (hf != null) {
            hf.close();
        }
    }

    /** Ids without BOS. (Note: decode must be told not to skip special tokens, see RAW.) */
    private static long[] ids(String text) {
        return hf.encode(text, false, false).getIds();
    }

    @Test
    void savedTokenizerLoadsWithDjlWithAndWithoutItsConfig() throws IOException {
        assertTrue(Files.isRegularFile(tokenizerDir.resolve(CheckpointFiles.TOKENIZER_CONFIG)));
        assertTrue(Files.isRegularFile(tokenizerDir.resolve(CheckpointFiles.SPECIAL_TOKENS_MAP)));
        assertEquals(List.of("Once", "Ġupon", "Ġa", "Ġtime"), List.of(hf.encode("Once upon a time").getTokens()));
        // Loading the directory (which also reads tokenizer_config.json) gives the same ids.
        try (HuggingFaceTokenizer fromDir =
                HuggingFaceTokenizer.builder().optTokenizerPath(tokenizerDir).optTruncation(false).build()) {
            assertArrayEquals(ids(corpusText.substring(0, 3000)),
                    fromDir.encode(corpusText.substring(0, 3000), false, false).getIds());
        }
        // No file is left half written or as a temporary file.
        try (Stream<Path> files = Files.list(tokenizerDir)) {
            assertEquals(
                    Set.of("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"),
                    Set.copyOf(files.map(p -> p.getFileName().toString()).toList()));
        }
    }

    @Test
    void encodingThenDecodingRoundTripsArbitraryTextExactly() {
        List<String> texts = new ArrayList<>(List.of(
                "naïve café 日本語 🙂",
                "Once upon a time, there was a little girl named Lily.\nThe end.\n\nOne day",
                "  leading and trailing spaces  ",
                "tabs\tand\r\nwindows line ends\u000b\f and NUL \u0000 and DEL \u007f",
                "Ünïcödé: Ελληνικά, русский, עברית, العربية, हिन्दी, 한국어, ไทย",
                "emoji 👩‍👩‍👧‍👦 🇫🇷 and combining e\u0301 and zero\u200Bwidth and nbsp\u00A0!",
                "numbers 3.14159 1,000,000 and symbols <>&\"'{}[]()#@$%^*~`|\\/",
                "I'm, you're, we've, they'll, it's, he'd, DON'T",
                "<pad> is special, so is <|endoftext|>, but <|endof is not",
                ""));
        Random rnd = new Random(1);
        for (int i = 0; i < 30; i++) {
            StringBuilder sb = new StringBuilder();
            int len = 1 + rnd.nextInt(40);
            for (int j = 0; j < len; j++) {
                int cp;
                do {
                    cp = rnd.nextInt(4) == 0 ? rnd.nextInt(0x20000) : rnd.nextInt(0x250);
                } while (cp >= 0xD800 && cp <= 0xDFFF);
                sb.appendCodePoint(cp);
            }
            texts.add(sb.toString());
        }
        for (String t : texts) {
            long[] ids = ids(t);
            assertEquals(t, hf.decode(ids, false), () -> "round trip of " + t);
            for (long id : ids) {
                assertTrue(id >= 0 && id < VOCAB);
            }
            // The reference encoder agrees with the Hugging Face one.
            assertArrayEquals(ids, toLongs(reference.encode(t)), () -> "reference encoding of " + t);
        }
    }

    @Test
    void longTextIsNotTruncated() {
        String text = corpusText.substring(0, 20_000);
        long[] ids = ids(text);
        assertTrue(ids.length > 2000, "expected > 2000 tokens but got " + ids.length);
        assertEquals(text, hf.decode(ids, false));
        assertArrayEquals(toLongs(reference.encode(text)), ids);
    }

    @Test
    void vocabSizeEqualsRequestedSizeWithContiguousIds() throws IOException {
        assertEquals(VOCAB, trained.vocabSize());
        assertEquals(VOCAB - 2 - 256, trained.merges().size(), "one new token per merge");
        JsonObject model = tokenizerJson(tokenizerDir).getAsJsonObject("model");
        JsonObject vocab = model.getAsJsonObject("vocab");
        assertEquals(VOCAB, vocab.size());
        boolean[] seen = new boolean[VOCAB];
        for (Map.Entry<String, JsonElement> e : vocab.entrySet()) {
            seen[e.getValue().getAsInt()] = true;
        }
        for (int i = 0; i < VOCAB; i++) {
            assertTrue(seen[i], "id " + i + " missing");
        }
        assertEquals(trained.merges().size(), model.getAsJsonArray("merges").size());
    }

    @Test
    void specialTokenIdsAreAsDocumented() throws IOException {
        assertEquals(0, trained.tokenId("<|endoftext|>"));
        assertEquals(1, trained.tokenId("<pad>"));
        assertEquals(0, trained.bosTokenId());
        assertEquals(0, trained.eosTokenId());
        assertEquals(1, trained.padTokenId());
        assertEquals("<|endoftext|>", trained.bosToken());
        assertEquals("<|endoftext|>", trained.eosToken());
        assertEquals("<pad>", trained.padToken());

        // Special tokens in the text are kept whole; encoding with special tokens adds BOS in front.
        long[] withText = ids("The end.<|endoftext|>Once<pad>");
        assertEquals(0, withText[withText.length - 3]);
        assertEquals(1, withText[withText.length - 1]);
        Encoding withBos = hf.encode("Once upon a time", true, false);
        assertEquals(0, withBos.getIds()[0]);
        assertArrayEquals(ids("Once upon a time"), java.util.Arrays.copyOfRange(withBos.getIds(), 1, withBos.getIds().length));
        assertEquals("Once upon a time", hf.decode(withBos.getIds(), true));
        assertEquals("<|endoftext|>Once upon a time", hf.decode(withBos.getIds(), false));
        assertEquals("Once upon a time", hf.decode(withBos.getIds()), "DJL's decode(ids) skips specials here");

        JsonObject json = tokenizerJson(tokenizerDir);
        assertEquals(0, json.getAsJsonArray("added_tokens").get(0).getAsJsonObject().get("id").getAsInt());
        assertEquals(1, json.getAsJsonArray("added_tokens").get(1).getAsJsonObject().get("id").getAsInt());
        JsonObject config = JsonParser.parseString(
                Files.readString(tokenizerDir.resolve(CheckpointFiles.TOKENIZER_CONFIG))).getAsJsonObject();
        assertTrue(config.get("add_bos_token").getAsBoolean());
        assertEquals("<|endoftext|>", config.get("bos_token").getAsString());
        assertEquals("<|endoftext|>", config.get("eos_token").getAsString());
        assertEquals("<pad>", config.get("pad_token").getAsString());
        assertEquals(1024, config.get("model_max_length").getAsInt());
        JsonObject map = JsonParser.parseString(
                Files.readString(tokenizerDir.resolve(CheckpointFiles.SPECIAL_TOKENS_MAP))).getAsJsonObject();
        assertEquals("<pad>", map.getAsJsonObject("pad_token").get("content").getAsString());
    }

    @Test
    void everyByteIsATokenInGpt2Order() throws IOException {
        List<String> tokens = new ArrayList<>(trained.vocab().keySet());
        for (int b = 0; b < 256; b++) {
            int id = trained.tokenId(String.valueOf(ByteLevelAlphabet.charOf(b)));
            assertTrue(id >= 2 && id < 258, "byte " + b);
            // Every single byte on its own decodes back to that byte.
            assertEquals(String.valueOf(ByteLevelAlphabet.charOf(b)), tokens.get(id));
        }
        assertEquals("!", tokens.get(2));
        assertEquals("Ġ", tokens.get(2 + 220)); // the space byte
        Path gpt2 = fixtures().resolve("gpt2-tokenizer/tokenizer.json");
        Assumptions.assumeTrue(Files.isRegularFile(gpt2), "GPT-2 fixture absent");
        JsonObject gpt2Vocab = readJson(gpt2).getAsJsonObject("model").getAsJsonObject("vocab");
        for (int i = 0; i < 256; i++) {
            assertEquals(i, gpt2Vocab.get(tokens.get(2 + i)).getAsInt(), "byte token " + tokens.get(2 + i));
        }
    }

    @Test
    void frequentCorpusWordsBecomeSingleTokens() {
        for (String word : List.of(" the", " time", " upon", " was", " said", " friend", " named", " little")) {
            assertEquals(1, ids(word).length, () -> "'" + word + "' is not a single token");
        }
        assertEquals(List.of("Once", "Ġupon", "Ġa", "Ġtime", ",", "Ġthere", "Ġwas"),
                List.of(hf.encode("Once upon a time, there was").getTokens()));
        assertTrue(trained.merges().indexOf("Ġt he") < 20, "' the' is among the first merges");
        // The stories compress well: about 4 characters per token.
        double charsPerToken = corpusText.length() / (double) toLongs(reference.encode(corpusText)).length;
        assertTrue(charsPerToken > 3.3, "chars per token " + charsPerToken);
    }

    @Test
    void trainingIsDeterministic(@TempDir Path out) throws IOException {
        String text = new StoryCorpus(5).generate(150);
        TrainedTokenizer a = ByteLevelBpeTrainer.train(List.of(text), 700, ByteLevelBpeTrainer.DEFAULT_SPECIAL_TOKENS);
        TrainedTokenizer b = ByteLevelBpeTrainer.train(List.of(text), 700, ByteLevelBpeTrainer.DEFAULT_SPECIAL_TOKENS);
        a.save(out.resolve("a"));
        b.save(out.resolve("b"));
        for (String f : List.of("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json")) {
            assertArrayEquals(Files.readAllBytes(out.resolve("a").resolve(f)), Files.readAllBytes(out.resolve("b").resolve(f)), f);
        }
        // Saving over an existing tokenizer replaces it.
        b.save(out.resolve("a"));
        assertEquals(b.toTokenizerJson(), Files.readString(out.resolve("a/tokenizer.json"), StandardCharsets.UTF_8));
    }

    @Test
    void trainingOnAFileInChunksEqualsTrainingOnItsWholeText(@TempDir Path out) throws IOException {
        Path file = out.resolve("c.txt");
        String text = new StoryCorpus(8).generate(100) + "tail\n\n\n  spaces  \nlast";
        Files.writeString(file, text);
        ByteLevelBpeTrainer trainer = ByteLevelBpeTrainer.builder().vocabSize(600).build();
        String whole = trainer.train(List.of(text)).toTokenizerJson();
        assertEquals(whole, trainer.train(file, 1000).toTokenizerJson());
        assertEquals(whole, trainer.train(file).toTokenizerJson());
    }

    @Test
    void mergesAreLearntInFrequencyOrder() {
        // The Hugging Face course example: hug x10, pug x5, pun x12, bun x4, hugs x5 (one word per
        // document, so no leading spaces). Pair counts: u-g 20, p-u 17, u-n 16, h-u 15, g-s 5, b-u 4.
        // 1. "u g" (20). Now p-u is only in pun (12); u-n 16, h-ug 15, p-ug 5, ug-s 5, b-u 4.
        // 2. "u n" (16). Now h-ug 15, p-un 12, p-ug 5, ug-s 5, b-un 4.
        // 3. "h ug" (15). hugs is [hug, s]: hug-s 5.   4. "p un" (12).
        // 5./6. "p ug" and "hug s" tie at 5: p (a byte) has the smaller id.   7. "b un" (4).
        List<String> docs = new ArrayList<>();
        docs.addAll(Collections.nCopies(10, "hug"));
        docs.addAll(Collections.nCopies(5, "pug"));
        docs.addAll(Collections.nCopies(12, "pun"));
        docs.addAll(Collections.nCopies(4, "bun"));
        docs.addAll(Collections.nCopies(5, "hugs"));
        TrainedTokenizer t = ByteLevelBpeTrainer.builder().vocabSize(1000).specialTokens(List.of()).addBosToken(false)
                .minFrequency(1).build().train(docs);
        assertEquals(List.of("u g", "u n", "h ug", "p un", "p ug", "hug s", "b un"), t.merges());
        assertEquals(256 + 7, t.vocabSize(), "training stops when no pair is left");
        assertEquals(256, t.tokenId("ug"));
        // " pun" has a leading space, and no merge involves it.
        assertEquals(List.of("hugs", "Ġ", "pun"), new ReferenceBpeEncoder(t).tokenize("hugs pun"));
    }

    @Test
    void tiesGoToThePairWithSmallerIdsAndMinFrequencyStopsTraining() {
        // "aaab aab ab" -> words aaab, Ġaab, Ġab. Counts: (a,a) = 2 + 1 = 3, (a,b) = 3, (Ġ,a) = 2.
        // The tie goes to (a,a): same left id, smaller right id. Then [aa,a,b] [Ġ,aa,b] [Ġ,a,b]
        // leave (a,b) = 2 as the only pair seen twice; with minFrequency 2 training stops there.
        TrainedTokenizer t = ByteLevelBpeTrainer.builder().vocabSize(500).build().train(List.of("aaab aab ab"));
        assertEquals(List.of("a a", "a b"), t.merges());
        assertEquals(2 + 256 + 2, t.vocabSize());
        // With minFrequency 1 every pair counts: all are seen once, the smallest ids win:
        // (Ġ,aa) before (Ġ,ab) (Ġ is byte 32, id 220, below the merged tokens), then (aa,ab), (Ġaa,b).
        TrainedTokenizer all = ByteLevelBpeTrainer.builder().vocabSize(500).minFrequency(1).build()
                .train(List.of("aaab aab ab"));
        assertEquals(List.of("a a", "a b", "Ġ aa", "Ġ ab", "aa ab", "Ġaa b"), all.merges());
    }

    @Test
    void specialTokensInTheCorpusAreNotLearnt() {
        String text = String.join("<|endoftext|>", Collections.nCopies(200, "Once upon a time"));
        TrainedTokenizer t = ByteLevelBpeTrainer.train(List.of(text), 300, ByteLevelBpeTrainer.DEFAULT_SPECIAL_TOKENS);
        for (String token : t.vocab().keySet()) {
            // Only the special token itself holds "|" (besides the single byte "|").
            assertFalse(token.length() > 1 && token.contains("|") && !token.equals("<|endoftext|>"), token);
        }
        assertTrue(t.vocab().containsKey("Once"), "\"Once\" follows a special token, so it has no space");
    }

    @Test
    void withoutBosThePostProcessorIsGpt2s(@TempDir Path out) throws IOException {
        TrainedTokenizer t = ByteLevelBpeTrainer.builder().vocabSize(400).addBosToken(false).build()
                .train(List.of(new StoryCorpus(1).generate(20)));
        t.save(out);
        JsonObject json = tokenizerJson(out);
        assertEquals("ByteLevel", json.getAsJsonObject("post_processor").get("type").getAsString());
        try (HuggingFaceTokenizer tok = HuggingFaceTokenizer.newInstance(out.resolve("tokenizer.json"), RAW)) {
            long[] ids = tok.encode("Once upon a time", true, false).getIds();
            assertTrue(ids[0] != 0, "no BOS when add_bos_token is false");
        }
        assertFalse(JsonParser.parseString(t.toTokenizerConfigJson()).getAsJsonObject().get("add_bos_token").getAsBoolean());
    }

    @Test
    void jsonHasTheStructureOfGpt2sTokenizerJson(@TempDir Path out) throws IOException {
        Path gpt2 = fixtures().resolve("gpt2-tokenizer/tokenizer.json");
        Assumptions.assumeTrue(Files.isRegularFile(gpt2), "GPT-2 fixture absent");
        JsonObject expected = readJson(gpt2);
        TrainedTokenizer t = ByteLevelBpeTrainer.builder().vocabSize(300).addBosToken(false).build()
                .train(List.of("Once upon a time"));
        t.save(out);
        JsonObject ours = tokenizerJson(out);
        assertEquals(expected.keySet(), ours.keySet());
        for (String k : List.of("truncation", "padding", "normalizer", "pre_tokenizer", "post_processor", "decoder")) {
            assertEquals(expected.get(k), ours.get(k), k);
        }
        JsonObject em = expected.getAsJsonObject("model");
        JsonObject om = ours.getAsJsonObject("model");
        assertEquals(em.keySet(), om.keySet());
        for (String k : em.keySet()) {
            if (!k.equals("vocab") && !k.equals("merges")) {
                assertEquals(em.get(k), om.get(k), "model." + k);
            }
        }
        assertEquals(
                expected.getAsJsonArray("added_tokens").get(0).getAsJsonObject().keySet(),
                ours.getAsJsonArray("added_tokens").get(0).getAsJsonObject().keySet());
    }

    @Test
    void invalidOptionsAreRejected() {
        assertThrows(IllegalArgumentException.class,
                () -> ByteLevelBpeTrainer.train(List.of("x"), 257, ByteLevelBpeTrainer.DEFAULT_SPECIAL_TOKENS));
        assertThrows(IllegalArgumentException.class,
                () -> ByteLevelBpeTrainer.train(List.of("x"), 300, List.of("<a>", "<a>")));
        assertThrows(IllegalArgumentException.class,
                () -> ByteLevelBpeTrainer.builder().vocabSize(300).padToken("<none>").build());
        assertThrows(IllegalStateException.class, () -> ByteLevelBpeTrainer.builder().build());
        assertThrows(IllegalArgumentException.class,
                () -> ByteLevelBpeTrainer.builder().vocabSize(300).specialTokens(List.of()).build());
    }

    private static Path fixtures() {
        return Path.of(System.getProperty("llmzoo.fixtures", "../../shared/fixtures"));
    }

    private static JsonObject tokenizerJson(Path tokDir) throws IOException {
        return readJson(tokDir.resolve(CheckpointFiles.TOKENIZER));
    }

    private static JsonObject readJson(Path file) throws IOException {
        return JsonParser.parseString(Files.readString(file, StandardCharsets.UTF_8)).getAsJsonObject();
    }

    private static long[] toLongs(int[] ids) {
        long[] out = new long[ids.length];
        for (int i = 0; i < ids.length; i++) {
            out[i] = ids[i];
        }
        return out;
    }
}
