package io.github.djlllmzoo.zoo.gguf;

import io.github.djlllmzoo.blocks.HalfPrecision;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small GGUF version-3 writer for tests: metadata of every value type, tensors of F32, F16, BF16,
 * Q8_0 and Q4_0 (quantized as ggml's reference quantizers do) or raw blocks of any type.
 */
final class GgufWriter {

    private static final int ALIGNMENT = 32;

    /** A metadata value written as a u32 (llama.cpp's type of counts and ids). */
    record U32(long value) {}

    /** A metadata value written as an i32 array (token types). */
    record I32Array(int[] values) {}

    private record Tensor(String name, long[] dims, int typeId, byte[] data) {}

    private final Map<String, Object> metadata = new LinkedHashMap<>();
    private final List<Tensor> tensors = new ArrayList<>();

    /**
     * @param key the key
     * @param value a String, U32, Integer (i32), Long (u64), Float/Double (f32), Boolean, I32Array, or a
     *     List of String / Float / Double (f32)
     * @return this
     */
    GgufWriter put(String key, Object value) {
        metadata.put(key, value);
        return this;
    }

    /**
     * Adds a tensor of float values, encoded as {@code type}.
     *
     * @param name the tensor name
     * @param shape PyTorch order (the last dimension contiguous)
     * @param type F32, F16, BF16, Q8_0 or Q4_0
     * @param values row major
     * @return this
     */
    GgufWriter tensor(String name, long[] shape, GgufType type, float[] values) {
        return raw(name, shape, type.id(), encode(type, values));
    }

    /**
     * Adds a tensor of already encoded bytes.
     *
     * @param name the tensor name
     * @param shape PyTorch order
     * @param typeId ggml's type id
     * @param data the encoded data
     * @return this
     */
    GgufWriter raw(String name, long[] shape, int typeId, byte[] data) {
        long[] dims = new long[shape.length];
        for (int i = 0; i < shape.length; i++) {
            dims[i] = shape[shape.length - 1 - i];
        }
        tensors.add(new Tensor(name, dims, typeId, data));
        return this;
    }

    static byte[] encode(GgufType type, float[] values) {
        ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(type.bytes(values.length))).order(ByteOrder.LITTLE_ENDIAN);
        switch (type) {
            case F32:
                for (float v : values) {
                    out.putFloat(v);
                }
                break;
            case F16:
                for (float v : values) {
                    out.putShort(HalfPrecision.floatToFloat16(v));
                }
                break;
            case BF16:
                for (float v : values) {
                    out.putShort(HalfPrecision.floatToBfloat16(v));
                }
                break;
            case Q8_0:
                for (int b = 0; b < values.length; b += 32) {
                    float amax = 0;
                    for (int k = 0; k < 32; k++) {
                        amax = Math.max(amax, Math.abs(values[b + k]));
                    }
                    float d = amax / 127f;
                    float id = d != 0 ? 1 / d : 0;
                    out.putShort(HalfPrecision.floatToFloat16(d));
                    for (int k = 0; k < 32; k++) {
                        out.put((byte) roundAway(values[b + k] * id));
                    }
                }
                break;
            case Q4_0:
                for (int b = 0; b < values.length; b += 32) {
                    float amax = 0;
                    float max = 0;
                    for (int k = 0; k < 32; k++) {
                        if (Math.abs(values[b + k]) > amax) {
                            amax = Math.abs(values[b + k]);
                            max = values[b + k];
                        }
                    }
                    float d = max / -8;
                    float id = d != 0 ? 1 / d : 0;
                    out.putShort(HalfPrecision.floatToFloat16(d));
                    for (int k = 0; k < 16; k++) {
                        int lo = Math.min(15, (int) (values[b + k] * id + 8.5f));
                        int hi = Math.min(15, (int) (values[b + k + 16] * id + 8.5f));
                        out.put((byte) (lo | (hi << 4)));
                    }
                }
                break;
            default:
                throw new IllegalArgumentException("the test writer does not quantize " + type);
        }
        return out.array();
    }

    /** C's roundf: halves away from zero. */
    private static int roundAway(float v) {
        return (int) (v < 0 ? -Math.floor(-v + 0.5f) : Math.floor(v + 0.5f));
    }

    void write(Path file) throws IOException {
        ByteBuffer header = ByteBuffer.allocate(headerBytes()).order(ByteOrder.LITTLE_ENDIAN);
        header.put("GGUF".getBytes(StandardCharsets.US_ASCII));
        header.putInt(3);
        header.putLong(tensors.size());
        header.putLong(metadata.size());
        for (Map.Entry<String, Object> e : metadata.entrySet()) {
            string(header, e.getKey());
            value(header, e.getValue(), true);
        }
        long offset = 0;
        for (Tensor t : tensors) {
            string(header, t.name);
            header.putInt(t.dims.length);
            for (long d : t.dims) {
                header.putLong(d);
            }
            header.putInt(t.typeId);
            header.putLong(offset);
            offset = align(offset + t.data.length);
        }
        try (OutputStream out = Files.newOutputStream(file)) {
            out.write(header.array(), 0, header.position());
            out.write(new byte[(int) (align(header.position()) - header.position())]);
            for (Tensor t : tensors) {
                out.write(t.data);
                out.write(new byte[(int) (align(t.data.length) - t.data.length)]);
            }
        }
    }

    private int headerBytes() {
        long n = 1 << 16;
        for (Map.Entry<String, Object> e : metadata.entrySet()) {
            n += 64 + e.getKey().length() * 4L + size(e.getValue());
        }
        for (Tensor t : tensors) {
            n += 64 + t.name.length() * 4L;
        }
        return Math.toIntExact(n);
    }

    private static long size(Object v) {
        if (v instanceof String s) {
            return 8 + s.getBytes(StandardCharsets.UTF_8).length;
        }
        if (v instanceof List<?> list) {
            long n = 12;
            for (Object o : list) {
                n += size(o);
            }
            return n;
        }
        if (v instanceof I32Array a) {
            return 12 + 4L * a.values.length;
        }
        return 8;
    }

    private static long align(long n) {
        return (n + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    }

    private static void string(ByteBuffer out, String s) {
        byte[] bytes = s.getBytes(StandardCharsets.UTF_8);
        out.putLong(bytes.length);
        out.put(bytes);
    }

    private static int typeOf(Object v) {
        if (v instanceof U32) {
            return 4;
        } else if (v instanceof Integer) {
            return 5;
        } else if (v instanceof Float || v instanceof Double) {
            return 6;
        } else if (v instanceof Boolean) {
            return 7;
        } else if (v instanceof String) {
            return 8;
        } else if (v instanceof List || v instanceof I32Array) {
            return 9;
        } else if (v instanceof Long) {
            return 10;
        }
        throw new IllegalArgumentException("no GGUF type for " + v.getClass());
    }

    private static void value(ByteBuffer out, Object v, boolean typed) {
        if (typed) {
            out.putInt(typeOf(v));
        }
        if (v instanceof U32 u) {
            out.putInt((int) u.value);
        } else if (v instanceof Integer i) {
            out.putInt(i);
        } else if (v instanceof Number n && (v instanceof Float || v instanceof Double)) {
            out.putFloat(n.floatValue());
        } else if (v instanceof Boolean b) {
            out.put((byte) (b ? 1 : 0));
        } else if (v instanceof String s) {
            string(out, s);
        } else if (v instanceof Long l) {
            out.putLong(l);
        } else if (v instanceof I32Array a) {
            out.putInt(5);
            out.putLong(a.values.length);
            for (int x : a.values) {
                out.putInt(x);
            }
        } else {
            List<?> list = (List<?>) v;
            out.putInt(list.isEmpty() ? 8 : typeOf(list.get(0)));
            out.putLong(list.size());
            for (Object o : list) {
                value(out, o, false);
            }
        }
    }
}
