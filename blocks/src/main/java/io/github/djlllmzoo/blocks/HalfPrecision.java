package io.github.djlllmzoo.blocks;

/**
 * Bit-level conversions between {@code float} and the 16-bit float formats IEEE 754 binary16
 * ({@code F16}) and bfloat16 ({@code BF16}), for Java 17, which has no {@code
 * Float.float16ToFloat}. Widening is exact for every input (subnormals, signed zeros, infinities,
 * NaN payloads); narrowing rounds to nearest, ties to even, and keeps NaNs NaN.
 */
public final class HalfPrecision {

    private HalfPrecision() {}

    /**
     * Widens a binary16 value to float; exact for all 65,536 bit patterns.
     *
     * @param bits the binary16 bit pattern
     * @return the same value as a float
     */
    public static float float16ToFloat(short bits) {
        int h = bits & 0xFFFF;
        int sign = (h & 0x8000) << 16;
        int exponent = (h >>> 10) & 0x1F;
        int mantissa = h & 0x3FF;
        if (exponent == 0x1F) {
            return Float.intBitsToFloat(sign | 0x7F800000 | (mantissa << 13));
        }
        if (exponent == 0) {
            // Zero or subnormal: mantissa * 2^-24, exact in float since mantissa < 2^10.
            float magnitude = mantissa * 0x1p-24f;
            return sign == 0 ? magnitude : -magnitude;
        }
        return Float.intBitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
    }

    /**
     * Narrows a float to binary16, rounding to nearest with ties to even. Values beyond the
     * binary16 range become infinity, values below half the smallest subnormal become signed zero,
     * and NaN stays a (quiet) NaN.
     *
     * @param value the float
     * @return the binary16 bit pattern
     */
    public static short floatToFloat16(float value) {
        int bits = Float.floatToRawIntBits(value);
        int sign = (bits >>> 16) & 0x8000;
        int exponent = (bits >>> 23) & 0xFF;
        int mantissa = bits & 0x7FFFFF;
        if (exponent == 0xFF) {
            return (short) (mantissa == 0 ? sign | 0x7C00 : sign | 0x7E00 | (mantissa >>> 13));
        }
        int halfExponent = exponent - 127 + 15;
        if (halfExponent >= 0x1F) {
            return (short) (sign | 0x7C00);
        }
        if (halfExponent <= 0) {
            if (halfExponent < -10) {
                return (short) sign;
            }
            // The result is subnormal: (1.mantissa) * 2^(halfExponent - 14) in units of 2^-24.
            int significand = mantissa | 0x800000;
            int shift = 14 - halfExponent;
            return (short) (sign | roundShift(significand, shift));
        }
        // Normal: a carry out of the mantissa correctly bumps the exponent (up to infinity).
        return (short) (sign | ((halfExponent << 10) + roundShift(mantissa, 13)));
    }

    /**
     * Widens a bfloat16 value to float; exact for all bit patterns.
     *
     * @param bits the bfloat16 bit pattern
     * @return the same value as a float
     */
    public static float bfloat16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /**
     * Narrows a float to bfloat16, rounding to nearest with ties to even; NaN stays a (quiet) NaN.
     *
     * @param value the float
     * @return the bfloat16 bit pattern
     */
    public static short floatToBfloat16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7FFFFFFF) > 0x7F800000) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        int lsb = (bits >>> 16) & 1;
        return (short) ((bits + 0x7FFF + lsb) >>> 16);
    }

    /** Shifts {@code value} right by {@code shift} bits, rounding to nearest, ties to even. */
    private static int roundShift(int value, int shift) {
        int result = value >>> shift;
        int remainder = value & ((1 << shift) - 1);
        int half = 1 << (shift - 1);
        if (remainder > half || (remainder == half && (result & 1) == 1)) {
            result++;
        }
        return result;
    }
}
