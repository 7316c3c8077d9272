package io.github.djlllmzoo.zoo.safetensors;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

class SafeTensorsWriterAtomicityTest {

    private static NDManager manager;

    @TempDir Path dir;

    @BeforeAll
    static void createManager() {
        manager = NDManager.newBaseManager("PyTorch");
    }

    @AfterAll
    static void closeManager() {
        manager.close();
    }

    private List<String> directoryListing() throws IOException {
        try (Stream<Path> files = Files.list(dir)) {
            return files.map(p -> p.getFileName().toString()).sorted().toList();
        }
    }

    @Test
    void unsupportedDtypeInSecondTensorLeavesNoTargetAndNoTempFile() throws IOException {
        Map<String, NDArray> tensors = new LinkedHashMap<>();
        tensors.put("ok", manager.ones(new ai.djl.ndarray.types.Shape(4)));
        tensors.put("text", manager.create("not a tensor the format can hold"));
        Path file = dir.resolve("model.safetensors");
        IllegalArgumentException e =
                assertThrows(
                        IllegalArgumentException.class,
                        () -> SafeTensorsWriter.write(file, tensors, Map.of()));
        assertTrue(e.getMessage().contains("'text'"), e.getMessage());
        assertEquals(List.of(), directoryListing());
    }

    @Test
    void failureWhileStreamingDataLeavesNoTargetAndNoTempFile() throws IOException {
        NDArray released = manager.ones(new ai.djl.ndarray.types.Shape(1024));
        released.getShape();
        released.close(); // shape and dtype stay known; reading the data fails mid-write
        Map<String, NDArray> tensors = new LinkedHashMap<>();
        tensors.put("first", manager.ones(new ai.djl.ndarray.types.Shape(4096)));
        tensors.put("second", released);
        Path file = dir.resolve("model.safetensors");
        assertThrows(
                IllegalStateException.class,
                () -> SafeTensorsWriter.write(file, tensors, Map.of()));
        assertEquals(List.of(), directoryListing());
    }

    @Test
    void failedRewriteLeavesThePreviousFileIntact() throws Exception {
        Path file = dir.resolve("model.safetensors");
        SafeTensorsWriter.write(
                file,
                List.of(
                        new SafeTensorsWriter.RawTensor(
                                "w",
                                SafeTensorsDtype.F32,
                                new long[] {2},
                                TestFiles.floats(1f, 2f))),
                Map.of("version", "1"));
        byte[] before = Files.readAllBytes(file);
        NDArray released = manager.ones(new ai.djl.ndarray.types.Shape(8));
        released.getShape();
        released.close();
        Map<String, NDArray> tensors = new LinkedHashMap<>();
        tensors.put("w", manager.zeros(new ai.djl.ndarray.types.Shape(2)));
        tensors.put("broken", released);
        assertThrows(
                IllegalStateException.class,
                () -> SafeTensorsWriter.write(file, tensors, Map.of("version", "2")));
        assertArrayEquals(before, Files.readAllBytes(file));
        assertEquals(List.of("model.safetensors"), directoryListing());
    }

    @Test
    void successfulRewriteReplacesTheFileAndLeavesNoTempFile() throws Exception {
        Path file = dir.resolve("model.safetensors");
        Files.writeString(file, "old contents");
        SafeTensorsWriter.write(
                file,
                List.of(
                        new SafeTensorsWriter.RawTensor(
                                "w",
                                SafeTensorsDtype.F32,
                                new long[] {2},
                                TestFiles.floats(1f, 2f))),
                Map.of());
        assertEquals(List.of("model.safetensors"), directoryListing());
        try (SafeTensorsReader reader = SafeTensorsReader.open(file)) {
            assertArrayEquals(new float[] {1f, 2f}, reader.toFloatArray("w"));
        }
    }

    @Test
    void invalidRawTensorsAreRejectedBeforeAnyFileIsCreated() throws IOException {
        Path file = dir.resolve("model.safetensors");
        SafeTensorsWriter.RawTensor wrongSize =
                new SafeTensorsWriter.RawTensor(
                        "w", SafeTensorsDtype.F32, new long[] {3}, TestFiles.floats(1f, 2f));
        assertThrows(
                IllegalArgumentException.class,
                () -> SafeTensorsWriter.write(file, List.of(wrongSize), Map.of()));
        SafeTensorsWriter.RawTensor a =
                new SafeTensorsWriter.RawTensor(
                        "w", SafeTensorsDtype.F32, new long[] {1}, TestFiles.floats(1f));
        assertThrows(
                IllegalArgumentException.class,
                () -> SafeTensorsWriter.write(file, List.of(a, a), Map.of()));
        SafeTensorsWriter.RawTensor reserved =
                new SafeTensorsWriter.RawTensor(
                        "__metadata__", SafeTensorsDtype.F32, new long[] {1}, TestFiles.floats(1f));
        assertThrows(
                IllegalArgumentException.class,
                () -> SafeTensorsWriter.write(file, List.of(reserved), Map.of()));
        assertFalse(Files.exists(file));
        assertEquals(List.of(), directoryListing());
    }
}
