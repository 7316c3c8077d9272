package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.zoo.LocalModel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The reader's metadata and tensor infos, and its refusals, each naming the file and what is at fault. */
class GgufFileTest {

    @TempDir Path tmp;

    private Path llamaGguf() throws Exception {
        Path file = tmp.resolve("llama.gguf");
        GoldenGguf.write(Path.of(System.getProperty("llmzoo.testdata"), "golden", "llama-gqa"), file, GgufType.F32);
        return file;
    }

    @Test
    void readsEveryMetadataValueTypeAndArrays() throws Exception {
        Path file = tmp.resolve("kv.gguf");
        new GgufWriter()
                .put("u32", new GgufWriter.U32(4_000_000_000L))
                .put("i32", -5)
                .put("u64", 1L << 40)
                .put("f32", 0.5f)
                .put("bool", true)
                .put("string", "héllo 🌍")
                .put("strings", List.of("a", "b"))
                .put("floats", List.of(1.5f, -2f))
                .put("ints", new GgufWriter.I32Array(new int[] {1, 2, 3}))
                .tensor("t", new long[] {2, 32}, GgufType.F16, new float[64])
                .write(file);
        try (GgufFile gguf = GgufFile.open(file)) {
            GgufMetadata m = gguf.metadata();
            assertEquals(4_000_000_000L, m.requireLong("u32"));
            assertEquals(-5, m.requireLong("i32"));
            assertEquals(1L << 40, m.requireLong("u64"));
            assertEquals(0.5, m.optDouble("f32", 0));
            assertTrue(m.optBoolean("bool", false));
            assertEquals("héllo 🌍", m.requireString("string"));
            assertEquals(List.of("a", "b"), m.optList("strings", String.class));
            assertEquals(List.of(1.5, -2.0), m.optNumbers("floats"));
            assertEquals(List.of(1L, 2L, 3L), m.optList("ints", Long.class));
            GgufTensor t = gguf.require("t");
            assertEquals(GgufType.F16, t.type());
            assertTrue(Arrays.equals(new long[] {32, 2}, t.dims()));
            InvalidGgufException e = assertThrows(InvalidGgufException.class, () -> m.requireLong("string"));
            assertTrue(e.getMessage().contains("'string'") && e.getMessage().contains(file.toString()), e.getMessage());
        }
    }

    @Test
    void refusesATruncatedFileNamingIt() throws Exception {
        Path file = llamaGguf();
        byte[] bytes = Files.readAllBytes(file);
        Path header = Files.write(tmp.resolve("header.gguf"), Arrays.copyOf(bytes, 200));
        assertRefused(header, "truncated");
        Path data = Files.write(tmp.resolve("data.gguf"), Arrays.copyOf(bytes, bytes.length - 100));
        assertRefused(data, "past the end of the file");
        Path notGguf = Files.write(tmp.resolve("not.gguf"), "{\"model_type\": \"llama\"}".getBytes());
        assertRefused(notGguf, "not a GGUF file");
    }

    @Test
    void refusesAnUnsupportedTensorTypeNamingTensorAndType() throws Exception {
        Path file = tmp.resolve("q4_1.gguf");
        new GgufWriter().put("general.architecture", "llama").raw("blk.0.attn_q.weight", new long[] {1, 32}, 3, new byte[20])
                .write(file);
        InvalidGgufException e = assertRefused(file, "Q4_1");
        assertEquals("blk.0.attn_q.weight", e.getField());
    }

    @Test
    void refusesAnUnsupportedArchitectureNamingIt() throws Exception {
        Path file = tmp.resolve("falcon.gguf");
        new GgufWriter().put("general.architecture", "falcon")
                .tensor("token_embd.weight", new long[] {4, 32}, GgufType.F32, new float[128]).write(file);
        InvalidGgufException e = assertThrows(InvalidGgufException.class, () -> LocalModel.load(file));
        assertTrue(e.getMessage().contains("falcon") && e.getMessage().contains("general.architecture"), e.getMessage());
    }

    @Test
    void refusesAMissingHyperparameterNamingTheKey() throws Exception {
        Path file = tmp.resolve("nohead.gguf");
        new GgufWriter().put("general.architecture", "qwen2").put("qwen2.embedding_length", new GgufWriter.U32(64))
                .put("qwen2.block_count", new GgufWriter.U32(1))
                .tensor("token_embd.weight", new long[] {4, 64}, GgufType.F32, new float[256]).write(file);
        InvalidGgufException e = assertThrows(InvalidGgufException.class, () -> LocalModel.load(file));
        assertEquals("qwen2.attention.head_count", e.getField(), e.getMessage());
    }

    private static InvalidGgufException assertRefused(Path file, String why) {
        InvalidGgufException e = assertThrows(InvalidGgufException.class, () -> GgufFile.open(file).close());
        assertTrue(e.getMessage().contains(why) && e.getMessage().contains(file.toString()), e.getMessage());
        return e;
    }
}
