package io.github.djlllmzoo.zoo.gguf;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A GGUF file's rows are read through one window, not mapped: reading every row of tensors larger
 * than the window maps nothing more of the file, and rows of two tensors read in turn (each read
 * refilling the window the other left) are the values written.
 */
class FileWindowTest {

    /** Rows of this many float32 values: two tensors of them span several windows. */
    private static final int IN = 1024;

    private static final int ROWS = FileWindow.BYTES / (IN * Float.BYTES) * 3 / 2;

    @TempDir Path tmp;

    private static float value(int tensor, int row, int column) {
        return tensor * 1e6f + row * IN + column;
    }

    private Path file() throws IOException {
        float[][] values = new float[2][ROWS * IN];
        for (int t = 0; t < 2; t++) {
            for (int r = 0; r < ROWS; r++) {
                for (int c = 0; c < IN; c++) {
                    values[t][r * IN + c] = value(t, r, c);
                }
            }
        }
        Path file = tmp.resolve("rows.gguf");
        new GgufWriter()
                .tensor("a", new long[] {ROWS, IN}, GgufType.F32, values[0])
                .tensor("b", new long[] {ROWS, IN}, GgufType.F32, values[1])
                .write(file);
        return file;
    }

    /** The lines of /proc/self/maps that map {@code file}. */
    private static long mappingsOf(Path file) throws IOException {
        String name = file.toRealPath().toString();
        return Files.readAllLines(Path.of("/proc/self/maps")).stream().filter(l -> l.endsWith(name)).count();
    }

    @Test
    void readingEveryRowMapsNothingOfTheFile() throws Exception {
        assumeTrue(Files.isReadable(Path.of("/proc/self/maps")), "Linux's /proc/self/maps");
        Path file = file();
        try (GgufFile gguf = GgufFile.open(file)) {
            long before = mappingsOf(file); // the header's, until it is collected
            float[] row = new float[IN];
            for (GgufTensor tensor : gguf.tensors().values()) {
                for (int r = 0; r < ROWS; r++) {
                    tensor.readRow(r, row, 0);
                }
            }
            assertTrue(mappingsOf(file) <= before, "mappings of the file before " + before + ", after " + mappingsOf(file));
        }
    }

    @Test
    void rowsOfTwoTensorsReadInTurnAreTheValuesWritten() throws Exception {
        try (GgufFile gguf = GgufFile.open(file())) {
            GgufTensor[] tensors = {gguf.require("a"), gguf.require("b")};
            float[] row = new float[IN];
            for (int r = ROWS - 1; r >= 0; r -= 7) { // backwards: every read before the window's start
                for (int t = 0; t < 2; t++) {
                    tensors[t].readRow(r, row, 0);
                    assertEquals(value(t, r, 0), row[0], "tensor " + t + " row " + r);
                    assertEquals(value(t, r, IN - 1), row[IN - 1], "tensor " + t + " row " + r);
                    ByteBuffer bytes = tensors[t].rowBytes(r);
                    assertEquals(IN * Float.BYTES, bytes.remaining());
                    assertEquals(value(t, r, 1), bytes.getFloat(bytes.position() + Float.BYTES));
                }
            }
        }
    }
}
