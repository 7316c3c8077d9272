package io.github.djlllmzoo.zoo.safetensors;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.github.djlllmzoo.blocks.InvalidCheckpointException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;

/** Each test builds one malformed file and checks it is refused with a precise message. */
class SafeTensorsHostileFileTest {

    @TempDir Path dir;

    /** Opens {@code file}, expecting a rejection that names the file and {@code field}. */
    private static InvalidCheckpointException assertRejected(Path file, String field) {
        InvalidCheckpointException e =
                assertThrows(
                        InvalidCheckpointException.class,
                        () -> SafeTensorsReader.open(file).close());
        assertEquals(field, e.getField());
        assertEquals(file, e.getFile());
        assertTrue(e.getMessage().contains(file.getFileName().toString()), e.getMessage());
        assertTrue(e.getMessage().contains("'" + field + "'"), e.getMessage());
        return e;
    }

    private static String tensor(String name, String dtype, String shape, long begin, long end) {
        return "\""
                + name
                + "\":{\"dtype\":\""
                + dtype
                + "\",\"shape\":"
                + shape
                + ",\"data_offsets\":["
                + begin
                + ","
                + end
                + "]}";
    }

    @Test
    void fileShorterThanEightBytesIsRejected() throws IOException {
        Path file = Files.write(dir.resolve("short.safetensors"), new byte[] {1, 0, 0});
        InvalidCheckpointException e = assertRejected(file, "header");
        assertTrue(e.getMessage().contains("3 bytes"), e.getMessage());
    }

    @Test
    void headerLengthBeyondEndOfFileIsRejected() throws IOException {
        Path file =
                TestFiles.withDeclaredLength(
                        dir.resolve("truncated.safetensors"),
                        100,
                        "{}".getBytes(StandardCharsets.UTF_8));
        InvalidCheckpointException e = assertRejected(file, "header");
        assertTrue(e.getMessage().contains("header length 100"), e.getMessage());
    }

    @Test
    void absurdHeaderLengthsAreRejectedQuicklyWithoutAllocating() throws IOException {
        Path huge =
                TestFiles.withDeclaredLength(
                        dir.resolve("huge.safetensors"), 1L << 62, new byte[16]);
        Path unsigned =
                TestFiles.withDeclaredLength(
                        dir.resolve("unsigned.safetensors"), -1L, new byte[16]);
        assertTimeoutPreemptively(
                Duration.ofSeconds(2),
                () -> {
                    assertRejected(huge, "header");
                    InvalidCheckpointException e = assertRejected(unsigned, "header");
                    assertTrue(e.getMessage().contains("18446744073709551615"), e.getMessage());
                });
    }

    @Test
    void headerLengthAboveTheCapIsRejectedEvenWhenTheFileIsLargeEnough() throws IOException {
        Path file = dir.resolve("sparse.safetensors");
        long declared = SafeTensorsReader.MAX_HEADER_BYTES + 8;
        TestFiles.withDeclaredLength(file, declared, new byte[0]);
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(8 + declared + 64); // sparse: no disk blocks for the hole
        }
        InvalidCheckpointException e = assertRejected(file, "header");
        assertTrue(e.getMessage().contains("limit"), e.getMessage());
    }

    @Test
    void headerThatIsNotJsonIsRejected() throws IOException {
        Path file = TestFiles.withHeader(dir.resolve("garbage.safetensors"), "this is not json", 0);
        assertRejected(file, "header");
    }

    @Test
    void headerInLenientJsonIsRejected() throws IOException {
        Path file =
                TestFiles.withHeader(dir.resolve("lenient.safetensors"), "{'w':{dtype:F32}}", 0);
        assertRejected(file, "header");
    }

    @Test
    void headerThatIsInvalidUtf8IsRejected() throws IOException {
        byte[] header = {'{', '"', (byte) 0xC3, (byte) 0x28, '"', ':', '1', '}'};
        Path file = TestFiles.withHeaderBytes(dir.resolve("latin.safetensors"), header, 0);
        InvalidCheckpointException e = assertRejected(file, "header");
        assertTrue(e.getMessage().contains("UTF-8"), e.getMessage());
    }

    @Test
    void headerThatIsAJsonArrayIsRejected() throws IOException {
        Path file = TestFiles.withHeader(dir.resolve("array.safetensors"), "[1, 2, 3]", 0);
        InvalidCheckpointException e = assertRejected(file, "header");
        assertTrue(e.getMessage().contains("array"), e.getMessage());
    }

    @Test
    void headerWithASecondJsonValueIsRejected() throws IOException {
        Path file = TestFiles.withHeader(dir.resolve("two.safetensors"), "{} {}", 0);
        assertRejected(file, "header");
    }

    @Test
    void tensorEntryThatIsNotAnObjectIsRejected() throws IOException {
        Path file = TestFiles.withHeader(dir.resolve("entry.safetensors"), "{\"weight\":[1,2]}", 0);
        assertRejected(file, "weight");
    }

    @Test
    void duplicateTensorNameIsRejected() throws IOException {
        String header =
                "{"
                        + tensor("weight", "F32", "[1]", 0, 4)
                        + ","
                        + tensor("weight", "F32", "[1]", 4, 8)
                        + "}";
        Path file = TestFiles.withHeader(dir.resolve("dup.safetensors"), header, 8);
        assertRejected(file, "weight");
    }

    @Test
    void missingDataOffsetsAreRejected() throws IOException {
        Path file =
                TestFiles.withHeader(
                        dir.resolve("nooffsets.safetensors"),
                        "{\"bias\":{\"dtype\":\"F32\",\"shape\":[2]}}",
                        8);
        InvalidCheckpointException e = assertRejected(file, "bias");
        assertTrue(e.getMessage().contains("data_offsets"), e.getMessage());
    }

    @Test
    void missingDtypeIsRejected() throws IOException {
        Path file =
                TestFiles.withHeader(
                        dir.resolve("nodtype.safetensors"),
                        "{\"bias\":{\"shape\":[2],\"data_offsets\":[0,8]}}",
                        8);
        assertRejected(file, "bias");
    }

    @Test
    void fractionalDimensionIsRejected() throws IOException {
        Path file =
                TestFiles.withHeader(
                        dir.resolve("fraction.safetensors"),
                        "{" + tensor("bias", "F32", "[2.5]", 0, 10) + "}",
                        10);
        assertRejected(file, "bias");
    }

    @Test
    void dataOffsetsBeyondTheDataSectionAreRejected() throws IOException {
        String header =
                "{"
                        + tensor("ok", "F32", "[2]", 0, 8)
                        + ","
                        + tensor("wte.weight", "F32", "[4]", 8, 24)
                        + "}";
        Path file = TestFiles.withHeader(dir.resolve("outofrange.safetensors"), header, 16);
        InvalidCheckpointException e = assertRejected(file, "wte.weight");
        assertTrue(e.getMessage().contains("beyond the data section of 16 bytes"), e.getMessage());
    }

    @Test
    void beginAfterEndIsRejected() throws IOException {
        Path file =
                TestFiles.withHeader(
                        dir.resolve("reversed.safetensors"),
                        "{" + tensor("bias", "F32", "[2]", 8, 0) + "}",
                        16);
        assertRejected(file, "bias");
    }

    @Test
    void negativeDataOffsetIsRejected() throws IOException {
        Path file =
                TestFiles.withHeader(
                        dir.resolve("negoffset.safetensors"),
                        "{" + tensor("bias", "F32", "[2]", -8, 0) + "}",
                        16);
        assertRejected(file, "bias");
    }

    @Test
    void overlappingTensorsAreRejected() throws IOException {
        String header =
                "{"
                        + tensor("first", "F32", "[4]", 0, 16)
                        + ","
                        + tensor("second", "F32", "[4]", 8, 24)
                        + "}";
        Path file = TestFiles.withHeader(dir.resolve("overlap.safetensors"), header, 24);
        InvalidCheckpointException e = assertRejected(file, "second");
        assertTrue(e.getMessage().contains("'first'"), e.getMessage());
    }

    @Test
    void tensorNestedInsideAnotherIsRejected() throws IOException {
        String header =
                "{"
                        + tensor("inner", "F32", "[1]", 4, 8)
                        + ","
                        + tensor("outer", "F32", "[4]", 0, 16)
                        + "}";
        Path file = TestFiles.withHeader(dir.resolve("nested.safetensors"), header, 16);
        InvalidCheckpointException e = assertRejected(file, "inner");
        assertTrue(e.getMessage().contains("'outer'"), e.getMessage());
    }

    @ParameterizedTest
    @ValueSource(strings = {"F8_E4M3", "Q4", "f32", "U64"})
    void unsupportedDtypeIsRejectedByName(String dtype) throws IOException {
        Path file =
                TestFiles.withHeader(
                        dir.resolve("dtype.safetensors"),
                        "{" + tensor("lm_head.weight", dtype, "[4]", 0, 4) + "}",
                        4);
        InvalidCheckpointException e = assertRejected(file, "lm_head.weight");
        assertTrue(e.getMessage().contains("\"" + dtype + "\""), e.getMessage());
    }

    @Test
    void shapeByteSizeDisagreeingWithOffsetsIsRejected() throws IOException {
        Path file =
                TestFiles.withHeader(
                        dir.resolve("size.safetensors"),
                        "{" + tensor("c_attn.weight", "F16", "[2,3]", 0, 24) + "}",
                        24);
        InvalidCheckpointException e = assertRejected(file, "c_attn.weight");
        assertTrue(
                e.getMessage().contains("needs 12 bytes but data_offsets span 24"), e.getMessage());
    }

    @Test
    void negativeDimensionIsRejected() throws IOException {
        Path file =
                TestFiles.withHeader(
                        dir.resolve("negdim.safetensors"),
                        "{" + tensor("bias", "F32", "[-2,-2]", 0, 16) + "}",
                        16);
        assertRejected(file, "bias");
    }

    @Test
    void dimensionProductOverflowIsRejected() throws IOException {
        // 2^32 * 2^32 wraps to 0 in 64-bit arithmetic, which would match the empty offsets.
        Path file =
                TestFiles.withHeader(
                        dir.resolve("overflow.safetensors"),
                        "{" + tensor("bias", "U8", "[4294967296,4294967296]", 0, 0) + "}",
                        0);
        InvalidCheckpointException e = assertRejected(file, "bias");
        assertTrue(e.getMessage().contains("overflows"), e.getMessage());
    }

    @Test
    void dimensionBeyondLongRangeIsRejected() throws IOException {
        Path file =
                TestFiles.withHeader(
                        dir.resolve("bigdim.safetensors"),
                        "{" + tensor("bias", "U8", "[99999999999999999999]", 0, 0) + "}",
                        0);
        assertRejected(file, "bias");
    }

    @Test
    void metadataWithNonStringValueIsRejected() throws IOException {
        String header =
                "{\"__metadata__\":{\"format\":\"pt\",\"step\":1000},"
                        + tensor("bias", "F32", "[1]", 0, 4)
                        + "}";
        Path file = TestFiles.withHeader(dir.resolve("meta.safetensors"), header, 4);
        InvalidCheckpointException e = assertRejected(file, "__metadata__");
        assertTrue(e.getMessage().contains("'step'"), e.getMessage());
    }

    @Test
    void metadataThatIsNotAnObjectIsRejected() throws IOException {
        Path file =
                TestFiles.withHeader(
                        dir.resolve("metaarray.safetensors"), "{\"__metadata__\":[\"pt\"]}", 0);
        assertRejected(file, "__metadata__");
    }

    /**
     * The format forbids holes but some writers leave them; they are accepted, overlaps are not.
     */
    @Test
    void gapsBetweenTensorsAndTrailingBytesAreAccepted() throws Exception {
        String header =
                "{"
                        + tensor("b", "F32", "[1]", 8, 12)
                        + ","
                        + tensor("a", "F32", "[1]", 0, 4)
                        + ","
                        + tensor("empty", "F32", "[0]", 2, 2)
                        + "}";
        Path file = TestFiles.withHeader(dir.resolve("gaps.safetensors"), header, 32);
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            assertEquals(
                    java.util.List.of("b", "a", "empty"),
                    java.util.List.copyOf(reader.tensors().keySet()));
            assertEquals(0, reader.toFloatArray("empty").length);
        }
    }
}
