package io.github.djlllmzoo.zoo.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import io.github.djlllmzoo.blocks.HalfPrecision;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Tensors load with positional reads: nothing of the file stays mapped (its pages would count as the
 * process's memory until a garbage collection unmapped them, as much again as a float32 model), and
 * reads that convert through a buffer smaller than the tensor give what a whole read does.
 */
class SafeTensorsPositionalReadTest {

    /** More elements than one staging buffer holds, and not a multiple of its size. */
    private static final int COUNT = 3 * SafeTensorsReader.STAGING_BYTES / 2 + 7;

    @TempDir Path dir;

    @Test
    void loadingTensorsLeavesNoPageOfTheFileMapped() throws Exception {
        Path maps = Paths.get("/proc/self/maps");
        assumeTrue(Files.isReadable(maps), "no /proc/self/maps to list the process's mappings");
        Path file = write();
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            for (String name : reader.tensors().keySet()) {
                reader.load(name, manager, DataType.FLOAT32);
                reader.load(name, manager);
            }
            String mapped = Files.readString(maps);
            assertFalse(mapped.contains(file.toString()), "a region of " + file + " is mapped:\n" + mapped);
        }
    }

    @Test
    void loadsThatConvertThroughTheStagingBufferEqualTheWholeTensor() throws Exception {
        Path file = write();
        try (NDManager manager = NDManager.newBaseManager("PyTorch");
                SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            for (String name : List.of("bf16", "f16", "f32")) {
                float[] whole = reader.toFloatArray(name);
                assertEquals(COUNT, whole.length);
                try (NDArray floats = reader.load(name, manager, DataType.FLOAT32);
                        NDArray doubles = reader.load(name, manager, DataType.FLOAT64)) {
                    assertArrayEquals(whole, floats.toFloatArray(), name);
                    double[] widened = new double[COUNT];
                    for (int i = 0; i < COUNT; i++) {
                        widened[i] = whole[i];
                    }
                    assertArrayEquals(widened, doubles.toDoubleArray(), name);
                }
            }
            try (NDArray same = reader.load("f16", manager, DataType.FLOAT16)) {
                assertEquals(DataType.FLOAT16, same.getDataType());
                assertArrayEquals(reader.toFloatArray("f16"), same.toType(DataType.FLOAT32, false).toFloatArray());
            }
        }
    }

    @Test
    void floatsReadThroughAStagingBufferOfAFewElementsEqualTheWholeTensor() throws Exception {
        Path file = write();
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            for (String name : List.of("bf16", "f16", "f32")) {
                float[] whole = reader.toFloatArray(name);
                int size = reader.tensors().get(name).dtype().byteSize();
                float[] part = new float[1001];
                reader.readFloats(name, 5, part, ByteBuffer.allocateDirect(3 * size + 1));
                assertArrayEquals(Arrays.copyOfRange(whole, 5, 5 + part.length), part, name);
                float[] all = new float[COUNT];
                reader.readFloats(name, 0, all);
                assertArrayEquals(whole, all, name);
            }
            assertThrows(
                    IllegalArgumentException.class,
                    () -> reader.readFloats("f32", 0, new float[4], ByteBuffer.allocate(3)));
        }
    }

    /** Three tensors of {@link #COUNT} random values: bfloat16, float16 and float32. */
    private Path write() throws Exception {
        Random random = new Random(21);
        ByteBuffer bf16 = ByteBuffer.allocate(2 * COUNT).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer f16 = ByteBuffer.allocate(2 * COUNT).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer f32 = ByteBuffer.allocate(4 * COUNT).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < COUNT; i++) {
            float v = (float) random.nextGaussian();
            bf16.putShort(HalfPrecision.floatToBfloat16(v));
            f16.putShort(HalfPrecision.floatToFloat16(v));
            f32.putFloat(v);
        }
        Path file = dir.resolve("model.safetensors");
        long[] shape = {COUNT};
        SafeTensorsWriter.write(
                file,
                List.of(
                        new SafeTensorsWriter.RawTensor("bf16", SafeTensorsDtype.BF16, shape, bf16.flip()),
                        new SafeTensorsWriter.RawTensor("f16", SafeTensorsDtype.F16, shape, f16.flip()),
                        new SafeTensorsWriter.RawTensor("f32", SafeTensorsDtype.F32, shape, f32.flip())),
                null);
        return file;
    }
}
