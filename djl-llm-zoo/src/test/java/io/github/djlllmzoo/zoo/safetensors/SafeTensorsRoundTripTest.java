package io.github.djlllmzoo.zoo.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;

import com.google.gson.JsonArray;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;

import io.github.djlllmzoo.blocks.HalfPrecision;
import io.github.djlllmzoo.blocks.InvalidCheckpointException;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

class SafeTensorsRoundTripTest {

    private static NDManager root;
    private NDManager manager;

    @TempDir Path dir;

    @BeforeAll
    static void createManager() {
        root = NDManager.newBaseManager("PyTorch");
    }

    @AfterAll
    static void closeManager() {
        root.close();
    }

    @BeforeEach
    void subManager() {
        manager = root.newSubManager();
    }

    @AfterEach
    void closeSubManager() {
        manager.close();
    }

    private static final float[] F16_VALUES = {
        1.0f,
        -2.5f,
        0x1p-24f,
        -0x1.ff8p-15f,
        65504.0f,
        -0.0f,
        Float.POSITIVE_INFINITY,
        Float.NEGATIVE_INFINITY
    };

    /** Writes F32, F16, I64, U8, BOOL and scalar arrays made with DJL, plus metadata. */
    private Path writeDjlFile() throws IOException {
        Map<String, NDArray> tensors = new LinkedHashMap<>();
        tensors.put("f32", manager.arange(6f).reshape(2, 3).sub(2.5f));
        tensors.put(
                "f16", manager.create(F16_VALUES, new Shape(2, 4)).toType(DataType.FLOAT16, false));
        tensors.put("i64", manager.create(new long[] {1L << 40, -1L, Long.MIN_VALUE}));
        tensors.put(
                "u8", manager.create(new byte[] {0, 7, (byte) 255}).toType(DataType.UINT8, false));
        tensors.put("mask", manager.create(new boolean[] {true, false, true, true}));
        tensors.put("scalar", manager.create(3.25f));
        tensors.put("transposed", manager.arange(6f).reshape(2, 3).transpose());
        Map<String, String> metadata = new LinkedHashMap<>();
        metadata.put("format", "pt");
        metadata.put("note", "ünïcode <tag> & \"quotes\"");
        Path file = dir.resolve("model.safetensors");
        SafeTensorsWriter.write(file, tensors, metadata);
        return file;
    }

    @Test
    void djlArraysRoundTripWithValuesShapesDtypesAndMetadata() throws Exception {
        Path file = writeDjlFile();
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            assertEquals(
                    List.of("f32", "f16", "i64", "u8", "mask", "scalar", "transposed"),
                    List.copyOf(reader.tensors().keySet()));
            assertEquals(
                    Map.of("format", "pt", "note", "ünïcode <tag> & \"quotes\""),
                    reader.metadata());
            assertEquals(SafeTensorsDtype.F16, reader.tensors().get("f16").dtype());
            assertArrayEquals(new long[] {2, 4}, reader.tensors().get("f16").shape());
            assertArrayEquals(new long[0], reader.tensors().get("scalar").shape());

            NDArray f32 = reader.load("f32", manager);
            assertEquals(new Shape(2, 3), f32.getShape());
            assertEquals(DataType.FLOAT32, f32.getDataType());
            assertArrayEquals(
                    new float[] {-2.5f, -1.5f, -0.5f, 0.5f, 1.5f, 2.5f}, f32.toFloatArray());

            NDArray f16 = reader.load("f16", manager);
            assertEquals(DataType.FLOAT16, f16.getDataType());
            assertArrayEquals(F16_VALUES, f16.toType(DataType.FLOAT32, false).toFloatArray());
            NDArray f16AsF32 = reader.load("f16", manager, DataType.FLOAT32);
            assertArrayEquals(F16_VALUES, f16AsF32.toFloatArray());
            assertEquals(
                    Float.floatToRawIntBits(-0.0f),
                    Float.floatToRawIntBits(f16AsF32.toFloatArray()[5]));

            assertArrayEquals(
                    new long[] {1L << 40, -1L, Long.MIN_VALUE},
                    reader.load("i64", manager).toLongArray());
            NDArray u8 = reader.load("u8", manager);
            assertEquals(DataType.UINT8, u8.getDataType());
            assertArrayEquals(new float[] {0, 7, 255}, reader.toFloatArray("u8"));
            assertArrayEquals(
                    new boolean[] {true, false, true, true},
                    reader.load("mask", manager).toBooleanArray());
            NDArray scalar = reader.load("scalar", manager);
            assertEquals(new Shape(), scalar.getShape());
            assertEquals(3.25f, scalar.getFloat());
            NDArray transposed = reader.load("transposed", manager);
            assertEquals(new Shape(3, 2), transposed.getShape());
            assertArrayEquals(new float[] {0, 3, 1, 4, 2, 5}, transposed.toFloatArray());
        }
    }

    /** Checks the bytes the way an independent reader would, without SafeTensorsReader. */
    @Test
    void writtenFileHasAlignedLittleEndianHeaderThatParsesIndependently() throws Exception {
        Path file = writeDjlFile();
        byte[] bytes = Files.readAllBytes(file);
        long n = 0;
        for (int i = 7; i >= 0; i--) {
            n = (n << 8) | (bytes[i] & 0xFF);
        }
        assertEquals(0, n % 8, "header length " + n);
        assertTrue(8 + n <= bytes.length);
        String header = new String(bytes, 8, (int) n, StandardCharsets.UTF_8);
        assertTrue(header.startsWith("{"), header);
        assertEquals(header.stripTrailing(), header.replaceAll(" +$", ""));
        assertTrue(header.stripTrailing().endsWith("}"), header);
        JsonObject json = JsonParser.parseString(header).getAsJsonObject();
        assertEquals("pt", json.getAsJsonObject("__metadata__").get("format").getAsString());
        JsonObject f16 = json.getAsJsonObject("f16");
        assertEquals("F16", f16.get("dtype").getAsString());
        assertEquals("[2,4]", f16.get("shape").toString());

        long expectedBegin = 0;
        for (String name : List.of("f32", "f16", "i64", "u8", "mask", "scalar", "transposed")) {
            JsonArray offsets = json.getAsJsonObject(name).getAsJsonArray("data_offsets");
            assertEquals(expectedBegin, offsets.get(0).getAsLong(), name);
            expectedBegin = offsets.get(1).getAsLong();
        }
        assertEquals(bytes.length - 8 - n, expectedBegin, "data is contiguous and ends the file");

        // f32 is the first tensor: its little-endian bytes start the data section.
        ByteBuffer data = ByteBuffer.wrap(bytes, (int) (8 + n), 24).order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(-2.5f, data.getFloat());
        assertEquals(-1.5f, data.getFloat());
        // f16 follows: 1.0 is 0x3C00.
        assertEquals(
                0x3C00,
                ByteBuffer.wrap(bytes, (int) (8 + n + 24), 2)
                        .order(ByteOrder.LITTLE_ENDIAN)
                        .getShort());
    }

    @Test
    void rawBf16AndI16TensorsRoundTripAndLoadAsFloat32OnPyTorch() throws Exception {
        Path file = dir.resolve("bf16.safetensors");
        float[] values = {
            1.0f, -0.0f, 0.333984375f, 0x1p-133f, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY
        };
        int[] bits = new int[values.length];
        for (int i = 0; i < values.length; i++) {
            bits[i] = HalfPrecision.floatToBfloat16(values[i]);
        }
        SafeTensorsWriter.write(
                file,
                List.of(
                        new SafeTensorsWriter.RawTensor(
                                "bf16",
                                SafeTensorsDtype.BF16,
                                new long[] {3, 2},
                                TestFiles.shorts(bits)),
                        new SafeTensorsWriter.RawTensor(
                                "i16",
                                SafeTensorsDtype.I16,
                                new long[] {3},
                                TestFiles.shorts(-32768, 0, 32767))),
                null);
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            assertEquals(Map.of(), reader.metadata());
            NDArray bf16 = reader.load("bf16", manager);
            assertEquals(DataType.FLOAT32, bf16.getDataType());
            assertEquals(new Shape(3, 2), bf16.getShape());
            float[] loaded = bf16.toFloatArray();
            for (int i = 0; i < values.length; i++) {
                assertEquals(
                        Float.floatToRawIntBits(values[i]),
                        Float.floatToRawIntBits(loaded[i]),
                        "element " + i);
            }
            assertArrayEquals(
                    new double[] {
                        1.0,
                        -0.0,
                        0.333984375,
                        0x1p-133,
                        Double.POSITIVE_INFINITY,
                        Double.NEGATIVE_INFINITY
                    },
                    reader.load("bf16", manager, DataType.FLOAT64).toDoubleArray());
            NDArray i16 = reader.load("i16", manager);
            assertEquals(DataType.FLOAT32, i16.getDataType());
            assertArrayEquals(new float[] {-32768, 0, 32767}, i16.toFloatArray());
            assertArrayEquals(
                    new int[] {-32768, 0, 32767},
                    reader.load("i16", manager, DataType.INT32).toIntArray());

            ByteBuffer raw = reader.rawData("bf16");
            assertTrue(raw.isReadOnly());
            assertEquals(ByteOrder.LITTLE_ENDIAN, raw.order());
            assertEquals((short) 0x3F80, raw.getShort(0));
        }
    }

    /** DJL 0.35.1's PyTorch engine aborts the JVM on BFLOAT16/INT16 arrays; the reader refuses. */
    @Test
    void loadingAsBfloat16OnPyTorchIsRefusedInsteadOfCrashingTheJvm() throws Exception {
        Path file = dir.resolve("bf16.safetensors");
        SafeTensorsWriter.write(
                file,
                List.of(
                        new SafeTensorsWriter.RawTensor(
                                "w",
                                SafeTensorsDtype.BF16,
                                new long[] {1},
                                TestFiles.shorts(0x3F80))),
                Map.of());
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            IllegalArgumentException e =
                    assertThrows(
                            IllegalArgumentException.class,
                            () -> reader.load("w", manager, DataType.BFLOAT16));
            assertTrue(e.getMessage().contains("PyTorch"), e.getMessage());
            assertThrows(
                    IllegalArgumentException.class,
                    () -> reader.load("w", manager, DataType.INT16));
            assertThrows(
                    IllegalArgumentException.class,
                    () -> reader.load("w", manager, DataType.STRING));
        }
    }

    @Test
    void loadConvertsBetweenTypesThroughJavaOrTheEngine() throws Exception {
        Path file = dir.resolve("types.safetensors");
        ByteBuffer f64 =
                ByteBuffer.allocate(16)
                        .order(ByteOrder.LITTLE_ENDIAN)
                        .putDouble(0.1)
                        .putDouble(-1e300)
                        .flip();
        SafeTensorsWriter.write(
                file,
                List.of(
                        new SafeTensorsWriter.RawTensor(
                                "f64", SafeTensorsDtype.F64, new long[] {2}, f64),
                        new SafeTensorsWriter.RawTensor(
                                "f32",
                                SafeTensorsDtype.F32,
                                new long[] {2},
                                TestFiles.floats(1.5f, 65520f)),
                        new SafeTensorsWriter.RawTensor(
                                "bf16",
                                SafeTensorsDtype.BF16,
                                new long[] {1},
                                TestFiles.shorts(0x4040))),
                Map.of());
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            assertArrayEquals(
                    new float[] {0.1f, Float.NEGATIVE_INFINITY},
                    reader.load("f64", manager, DataType.FLOAT32).toFloatArray());
            NDArray half = reader.load("f32", manager, DataType.FLOAT16);
            assertEquals(DataType.FLOAT16, half.getDataType());
            assertArrayEquals(
                    new float[] {1.5f, Float.POSITIVE_INFINITY},
                    half.toType(DataType.FLOAT32, false).toFloatArray());
            NDArray bf16AsHalf = reader.load("bf16", manager, DataType.FLOAT16);
            assertEquals(DataType.FLOAT16, bf16AsHalf.getDataType());
            assertArrayEquals(
                    new float[] {3.0f}, bf16AsHalf.toType(DataType.FLOAT32, false).toFloatArray());
            assertArrayEquals(
                    new float[] {0.1f, Float.NEGATIVE_INFINITY}, reader.toFloatArray("f64"));
        }
    }

    @Test
    void zeroElementTensorsRoundTrip() throws Exception {
        Path file = dir.resolve("empty.safetensors");
        SafeTensorsWriter.write(file, Map.of("empty", manager.zeros(new Shape(0, 3))), Map.of());
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            TensorInfo info = reader.tensors().get("empty");
            assertEquals(0, info.byteSize());
            assertEquals(new Shape(0, 3), info.toShape());
            assertEquals(new Shape(0, 3), reader.load("empty", manager).getShape());
            assertEquals(0, reader.rawData("empty").remaining());
        }
    }

    @Test
    void unknownTensorNameIsAnInvalidCheckpointNamingIt() throws Exception {
        Path file = writeDjlFile();
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            assertTrue(reader.contains("f32"));
            assertTrue(!reader.contains("lm_head.weight"));
            InvalidCheckpointException e =
                    assertThrows(
                            InvalidCheckpointException.class,
                            () -> reader.load("lm_head.weight", manager));
            assertEquals("lm_head.weight", e.getField());
            assertTrue(e.getMessage().contains("model.safetensors"), e.getMessage());
            assertThrows(InvalidCheckpointException.class, () -> reader.toFloatArray("missing"));
        }
    }

    /** A sparse 3 GiB file: tensors past the 2 GiB mark map fine; a 3 GiB tensor is refused. */
    @Test
    void tensorsBeyondTwoGibibytesAreReadableAndOversizedTensorsAreRefused() throws Exception {
        long big = 3L << 30;
        String header =
                "{\"big\":{\"dtype\":\"U8\",\"shape\":["
                        + big
                        + "],\"data_offsets\":[0,"
                        + big
                        + "]},"
                        + "\"tail\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":["
                        + big
                        + ","
                        + (big + 8)
                        + "]}}";
        Path file = TestFiles.withHeader(dir.resolve("sparse.safetensors"), header, 0);
        long dataStart = Files.size(file);
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.seek(dataStart + big);
            raf.write(TestFiles.floats(7.5f, -1f).array());
        }
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            assertArrayEquals(new float[] {7.5f, -1f}, reader.toFloatArray("tail"));
            assertArrayEquals(new float[] {7.5f, -1f}, reader.load("tail", manager).toFloatArray());
            IOException e = assertThrows(IOException.class, () -> reader.rawData("big"));
            assertTrue(
                    e.getMessage().contains("'big'") && e.getMessage().contains("2 GiB"),
                    e.getMessage());
        }
    }

    @Test
    void closedReaderRefusesToMapData() throws Exception {
        Path file = writeDjlFile();
        SafeTensorsReader reader = SafeTensorsReader.open(file);
        ByteBuffer before = reader.rawData("f32");
        reader.close();
        assertEquals(-2.5f, before.getFloat(0));
        assertThrows(IOException.class, () -> reader.rawData("f32"));
    }
}
