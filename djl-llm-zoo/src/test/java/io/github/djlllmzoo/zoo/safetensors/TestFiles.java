package io.github.djlllmzoo.zoo.safetensors;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Builds safetensors files byte by byte, including ones no correct writer would produce. */
final class TestFiles {

    private TestFiles() {}

    /** Writes an 8-byte little-endian {@code declaredLength}, then {@code rest}. */
    static Path withDeclaredLength(Path file, long declaredLength, byte[] rest) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(8 + rest.length).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putLong(declaredLength).put(rest);
        Files.write(file, buffer.array());
        return file;
    }

    /**
     * Writes a file whose header is exactly {@code headerJson}, followed by {@code dataBytes}
     * zeros.
     */
    static Path withHeader(Path file, String headerJson, int dataBytes) throws IOException {
        return withHeaderBytes(file, headerJson.getBytes(StandardCharsets.UTF_8), dataBytes);
    }

    /**
     * Writes a file whose header is exactly {@code header}, followed by {@code dataBytes} zeros.
     */
    static Path withHeaderBytes(Path file, byte[] header, int dataBytes) throws IOException {
        byte[] rest = new byte[header.length + dataBytes];
        System.arraycopy(header, 0, rest, 0, header.length);
        return withDeclaredLength(file, header.length, rest);
    }

    /** A little-endian buffer holding {@code values} as float32. */
    static ByteBuffer floats(float... values) {
        ByteBuffer buffer = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float value : values) {
            buffer.putFloat(value);
        }
        return buffer.flip();
    }

    /** A little-endian buffer holding {@code values} as 16-bit patterns. */
    static ByteBuffer shorts(int... values) {
        ByteBuffer buffer = ByteBuffer.allocate(values.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int value : values) {
            buffer.putShort((short) value);
        }
        return buffer.flip();
    }
}
