package io.github.djlllmzoo.zoo.safetensors;

import ai.djl.ndarray.types.Shape;

import java.util.Arrays;
import java.util.Objects;

/**
 * One tensor entry of a safetensors header.
 *
 * <p>The shape array is copied on construction and on every call to {@link #shape()}, so an
 * instance is immutable; {@link #equals}, {@link #hashCode} and {@link #toString} compare and print
 * the shape by content.
 *
 * @param name the tensor name
 * @param dtype the element type
 * @param shape the dimensions, row-major; empty for a scalar
 * @param begin the first byte of the tensor, relative to the start of the data section
 * @param end one past the last byte of the tensor, relative to the start of the data section
 */
public record TensorInfo(String name, SafeTensorsDtype dtype, long[] shape, long begin, long end) {

    /**
     * Creates an entry.
     *
     * @throws IllegalArgumentException if a dimension is negative or the offsets are not {@code 0
     *     <= begin <= end}
      *
      * @param name the tensor name
      * @param dtype the element type
      * @param shape the dimensions, row-major; empty for a scalar
      * @param begin the first byte of the tensor, relative to the start of the data section
      * @param end one past the last byte of the tensor, relative to the start of the data section
     */
    public TensorInfo {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(dtype, "dtype");
        shape = shape.clone();
        for (long dim : shape) {
            if (dim < 0) {
                throw new IllegalArgumentException(
                        "negative dimension in " + Arrays.toString(shape));
            }
        }
        if (begin < 0 || begin > end) {
            throw new IllegalArgumentException("invalid offsets [" + begin + ", " + end + "]");
        }
    }

    /**
     * @return a copy of the dimensions
     */
    @Override
    public long[] shape() {
        return shape.clone();
    }

    /**
     * @return the number of elements (1 for a scalar)
     * @throws ArithmeticException if the product of the dimensions overflows a long
     */
    public long numElements() {
        long count = 1;
        for (long dim : shape) {
            count = Math.multiplyExact(count, dim);
        }
        return count;
    }

    /**
     * @return the number of data bytes the shape and dtype call for
     * @throws ArithmeticException if the size overflows a long
     */
    public long byteSize() {
        return Math.multiplyExact(numElements(), dtype.byteSize());
    }

    /**
     * @return the shape as a DJL {@link Shape}
     */
    public Shape toShape() {
        return new Shape(shape);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorInfo other
                && name.equals(other.name)
                && dtype == other.dtype
                && Arrays.equals(shape, other.shape)
                && begin == other.begin
                && end == other.end;
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, dtype, Arrays.hashCode(shape), begin, end);
    }

    @Override
    public String toString() {
        return name + " " + dtype + " " + Arrays.toString(shape) + " [" + begin + ", " + end + ")";
    }
}
