package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.gson.JsonArray;
import com.google.gson.JsonParser;
import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A split GGUF file ({@code NAME-00001-of-00003.gguf}) loads from its first part with the tensors of
 * every part and scores as the whole file (the same weights: the same values exactly), whether
 * llama.cpp's {@code llama-gguf-split} split it (skipped where the peer lacks it) or our writer did;
 * a missing part, or a part other than the first, is refused naming the file to fetch or pass.
 */
class GgufSplitTest {

    private static final Path GOLDEN = Path.of(System.getProperty("llmzoo.testdata"), "golden", "llama-gqa");

    @TempDir Path tmp;

    private static long[] prompt() throws Exception {
        JsonArray ids = JsonParser.parseString(Files.readString(GOLDEN.resolve("golden.json"), StandardCharsets.UTF_8))
                .getAsJsonObject().getAsJsonArray("prompt_ids");
        long[] prompt = new long[ids.size()];
        for (int i = 0; i < prompt.length; i++) {
            prompt[i] = ids.get(i).getAsLong();
        }
        return prompt;
    }

    private Path whole() throws Exception {
        Path file = tmp.resolve("llama-gqa-f32.gguf");
        GoldenGguf.write(GOLDEN, file, GgufType.F32, true);
        return file;
    }

    private static float[] score(Path file, long[] prompt) throws Exception {
        try (LocalModel model = LocalModel.load(file)) {
            return model.generator().scoreTokens(prompt);
        }
    }

    private static void assertLoadsAsTheWholeFile(Path whole, List<Path> parts) throws Exception {
        try (GgufFile all = GgufFile.open(whole); GgufFile split = GgufFile.open(parts.get(0))) {
            assertEquals(parts, split.files());
            assertEquals(all.tensors().keySet(), split.tensors().keySet());
            for (GgufTensor t : all.tensors().values()) {
                assertArrayEquals(t.toFloatArray(), split.require(t.name()).toFloatArray(), 0f, t.name());
            }
        }
        long[] prompt = prompt();
        assertArrayEquals(score(whole, prompt), score(parts.get(0), prompt), 0f);
    }

    @Test
    void aFileSplitByLlamaGgufSplitLoadsFromItsFirstPartAsTheWholeFile() throws Exception {
        LlamaCppPeer peer = LlamaCppPeer.require();
        Path whole = whole();
        List<Path> parts = peer.split(whole, tmp.resolve("peer").toString(), 10);
        assertTrue(parts.size() >= 3, "split in " + parts.size());
        assertLoadsAsTheWholeFile(whole, parts);
    }

    @Test
    void aFileSplitByOurWriterLoadsFromItsFirstPartAsTheWholeFile() throws Exception {
        Path whole = whole();
        assertLoadsAsTheWholeFile(whole, GoldenGguf.split(whole, tmp.resolve("ours").toString(), 3));
    }

    @Test
    void aMissingPartOrAPartOtherThanTheFirstIsRefusedNamingTheFileToUse() throws Exception {
        List<Path> parts = GoldenGguf.split(whole(), tmp.resolve("model").toString(), 3);
        InvalidGgufException notFirst = assertThrows(InvalidGgufException.class, () -> GgufFile.open(parts.get(1)));
        assertTrue(notFirst.getMessage().contains("part 2 of 3")
                && notFirst.getMessage().contains(parts.get(0).getFileName().toString()), notFirst.getMessage());
        Files.delete(parts.get(2));
        InvalidGgufException missing = assertThrows(InvalidGgufException.class, () -> LocalModel.load(parts.get(0)));
        assertTrue(missing.getMessage().contains("part 3 of 3 is missing")
                && missing.getMessage().contains(parts.get(2).toString()), missing.getMessage());
    }
}
