package io.github.djlllmzoo.zoo.safetensors;

import ai.djl.ndarray.types.DataType;

/** The element types of the safetensors format that this package reads and writes. */
public enum SafeTensorsDtype {
    /** IEEE 754 binary64. */
    F64(8, DataType.FLOAT64, true),
    /** IEEE 754 binary32. */
    F32(4, DataType.FLOAT32, true),
    /** IEEE 754 binary16 (half precision). */
    F16(2, DataType.FLOAT16, true),
    /** bfloat16: the upper 16 bits of a binary32. */
    BF16(2, DataType.BFLOAT16, true),
    /** Signed 64-bit integer. */
    I64(8, DataType.INT64, false),
    /** Signed 32-bit integer. */
    I32(4, DataType.INT32, false),
    /** Signed 16-bit integer. */
    I16(2, DataType.INT16, false),
    /** Signed 8-bit integer. */
    I8(1, DataType.INT8, false),
    /** Unsigned 8-bit integer. */
    U8(1, DataType.UINT8, false),
    /** Boolean stored as one byte, 0 or 1. */
    BOOL(1, DataType.BOOLEAN, false);

    private final int byteSize;
    private final DataType dataType;
    private final boolean floatingPoint;

    SafeTensorsDtype(int byteSize, DataType dataType, boolean floatingPoint) {
        this.byteSize = byteSize;
        this.dataType = dataType;
        this.floatingPoint = floatingPoint;
    }

    /**
     * @return the number of bytes one element occupies in the file
     */
    public int byteSize() {
        return byteSize;
    }

    /**
     * @return whether this is one of the floating-point types F64, F32, F16, BF16
     */
    public boolean isFloatingPoint() {
        return floatingPoint;
    }

    /**
     * @return the DJL data type holding the same values
     */
    public DataType toDataType() {
        return dataType;
    }

    /**
     * Looks up a dtype by the name used in safetensors headers.
     *
     * @param name the header name, e.g. {@code "BF16"} (case-sensitive, as in the format)
     * @return the dtype, or {@code null} if the name is not one this package supports
     */
    public static SafeTensorsDtype fromName(String name) {
        if (name == null) {
            return null;
        }
        for (SafeTensorsDtype dtype : values()) {
            if (dtype.name().equals(name)) {
                return dtype;
            }
        }
        return null;
    }

    /**
     * Maps a DJL data type to its safetensors dtype.
     *
     * @param dataType the DJL data type
     * @return the dtype, or {@code null} if the format has no equivalent (e.g. STRING, UINT32)
     */
    public static SafeTensorsDtype fromDataType(DataType dataType) {
        for (SafeTensorsDtype dtype : values()) {
            if (dtype.dataType == dataType) {
                return dtype;
            }
        }
        return null;
    }
}
