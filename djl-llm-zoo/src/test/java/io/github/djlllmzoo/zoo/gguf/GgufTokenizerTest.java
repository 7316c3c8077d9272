package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.translators.TextTokenizer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A SentencePiece ({@code llama}) vocabulary of a GGUF file tokenizes as llama.cpp's SPM tokenizer
 * does (written out below from its description: merge the adjacent pair making the piece of highest
 * score, leftmost first; unknown characters as UTF-8 byte pieces), with the file's BOS/EOS
 * settings and chat template; no llama.cpp build needed.
 */
class GgufTokenizerTest {

    private static final String SPACE = "\u2581";

    @TempDir Path tmp;

    /** A small vocabulary: control tokens, 256 byte pieces, then pieces with scores. */
    private static final String[] PIECES = {
        SPACE, "h", "e", "l", "o", "w", "r", "d", "a", "b", "ab", "ba", "aba", "bab",
        "he", "ll", "hel", "hell", "hello", SPACE + "h", SPACE + "hello", "or", "ld", "wor", SPACE + "w",
        SPACE + "wor", SPACE + "world", "world", SPACE + "a", SPACE + "ab", "é"
    };

    private static final float[] SCORES = {
        -1, -2, -3, -4, -5, -6, -7, -8, -9, -10, -20, -21, -30, -31,
        -11, -12, -40, -41, -42, -13, -50, -14, -15, -43, -16, -44, -51, -45, -17, -18, -60
    };

    private static GgufMetadata metadata(Path file, boolean addEos) throws Exception {
        List<String> tokens = new ArrayList<>(List.of("<unk>", "<s>", "</s>"));
        List<Float> scores = new ArrayList<>(List.of(0f, 0f, 0f));
        List<Integer> types = new ArrayList<>(List.of(2, 3, 3));
        for (int b = 0; b < 256; b++) {
            tokens.add(String.format("<0x%02X>", b));
            scores.add(0f);
            types.add(6);
        }
        for (int i = 0; i < PIECES.length; i++) {
            tokens.add(PIECES[i]);
            scores.add(SCORES[i]);
            types.add(1);
        }
        new GgufWriter()
                .put("general.architecture", "llama")
                .put("tokenizer.ggml.model", "llama")
                .put("tokenizer.ggml.tokens", tokens)
                .put("tokenizer.ggml.scores", scores)
                .put("tokenizer.ggml.token_type", new GgufWriter.I32Array(types.stream().mapToInt(Integer::intValue).toArray()))
                .put("tokenizer.ggml.bos_token_id", new GgufWriter.U32(1))
                .put("tokenizer.ggml.eos_token_id", new GgufWriter.U32(2))
                .put("tokenizer.ggml.unknown_token_id", new GgufWriter.U32(0))
                .put("tokenizer.ggml.add_eos_token", addEos)
                .put("tokenizer.chat_template", "{% for m in messages %}{{ m['content'] }}{% endfor %}")
                .write(file);
        try (GgufFile gguf = GgufFile.open(file)) {
            return gguf.metadata();
        }
    }

    /** llama.cpp's SPM tokenization of a text, as its tokenizer describes it. */
    private static List<Long> spm(GgufMetadata m, String text) throws Exception {
        List<String> tokens = m.optList("tokenizer.ggml.tokens", String.class);
        List<Double> scores = m.optNumbers("tokenizer.ggml.scores");
        Map<String, Integer> ids = new HashMap<>();
        for (int i = 0; i < tokens.size(); i++) {
            ids.putIfAbsent(tokens.get(i), i);
        }
        String normalized = SPACE + text.replace(" ", SPACE);
        List<String> symbols = new ArrayList<>();
        normalized.codePoints().forEach(cp -> symbols.add(new String(Character.toChars(cp))));
        while (true) {
            int best = -1;
            double bestScore = Double.NEGATIVE_INFINITY;
            for (int i = 0; i + 1 < symbols.size(); i++) {
                Integer id = ids.get(symbols.get(i) + symbols.get(i + 1));
                if (id != null && scores.get(id) > bestScore) {
                    best = i;
                    bestScore = scores.get(id);
                }
            }
            if (best < 0) {
                break;
            }
            symbols.set(best, symbols.get(best) + symbols.remove(best + 1));
        }
        List<Long> out = new ArrayList<>(List.of(1L));
        for (String s : symbols) {
            Integer id = ids.get(s);
            if (id != null) {
                out.add((long) id);
            } else {
                for (byte b : s.getBytes(StandardCharsets.UTF_8)) {
                    out.add((long) ids.get(String.format("<0x%02X>", b & 0xFF)));
                }
            }
        }
        return out;
    }

    private Path files(GgufMetadata m) throws Exception {
        GgufTokenizer.Files files = GgufTokenizer.of(m);
        Path dir = Files.createDirectories(tmp.resolve("files" + System.nanoTime()));
        Files.writeString(dir.resolve("tokenizer.json"), files.tokenizer().toString());
        Files.writeString(dir.resolve("tokenizer_config.json"), files.tokenizerConfig().toString());
        return dir;
    }

    @Test
    void sentencePieceIdsAreLlamaCppsWithByteFallback() throws Exception {
        GgufMetadata m = metadata(tmp.resolve("spm.gguf"), false);
        try (TextTokenizer tokenizer = TextTokenizer.load(files(m))) {
            for (String text : new String[] {"hello world", "hello  world", "abababa bab", "hell wor ld", "héllo 🌍 ab",
                "world", "aba"}) {
                long[] expected = spm(m, text).stream().mapToLong(Long::longValue).toArray();
                assertArrayEquals(expected, tokenizer.encode(text), text);
                assertEquals(text, tokenizer.decode(java.util.Arrays.copyOfRange(expected, 1, expected.length)), text);
            }
        }
    }

    @Test
    void eosIsAddedWhenTheFileSaysAndTheChatTemplateIsKept() throws Exception {
        GgufMetadata m = metadata(tmp.resolve("eos.gguf"), true);
        Path dir = files(m);
        try (TextTokenizer tokenizer = TextTokenizer.load(dir)) {
            long[] ids = tokenizer.encode("hello");
            assertEquals(1, ids[0]);
            assertEquals(2, ids[ids.length - 1]);
        }
        JsonObject config = JsonParser.parseString(Files.readString(dir.resolve("tokenizer_config.json"))).getAsJsonObject();
        assertEquals(m.requireString("tokenizer.chat_template"), config.get("chat_template").getAsString());
        assertEquals("<s>", config.get("bos_token").getAsString());
    }
}
