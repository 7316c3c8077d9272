/*
 * What the compressed-weight kernels share (compressed_product.c for decode steps, compressed_gemm.c for
 * prefills): the formats' numbers (CompressedProduct's constants), int8's group of 32 and its float16
 * scale, int4's and int6's codes unpacked to int8, how a group of the input is quantized for the int8 dot products
 * (both kernels must round x the same way), and their refusal.
 */
#ifndef LLMZOO_COMPRESSED_FORMAT_H
#define LLMZOO_COMPRESSED_FORMAT_H

#include <jni.h>
#include <stdint.h>
#include <string.h>

/* Inputs sharing one int8 scale, a float16 (llama.cpp's Q8_0 block). */
#define GROUP 32

enum { BFLOAT16 = 0, FLOAT16 = 1, INT8 = 2, INT4 = 3, INT6 = 4 };

/* Whether a format keeps a float16 scale per group of 32 inputs (int8, int4, int6): those multiply as int8's. */
#define GROUPED(format) ((format) == INT8 || (format) == INT4 || (format) == INT6)

/* Bytes of one int4 group's packed codes (llama.cpp's Q4_0: two codes a byte). */
#define INT4_GROUP_BYTES (GROUP / 2)

/* 16 bytes as GCC's generic vector: SSE2's or NEON's registers, whatever the variant. */
typedef uint8_t int4_bytes __attribute__((vector_size(INT4_GROUP_BYTES)));

/*
 * One int4 group's 32 codes, packed as llama.cpp's Q4_0 packs them (element j in the low nibble of
 * byte j, element j + 16 in its high nibble, value (q - 8) * scale), as the signed int8 codes q - 8
 * in [-8, 7] into out: the int8 kernels then multiply them as they do int8's. One 16-byte vector
 * (a mask, a shift, two subtractions), stored whole so the kernel's loads of out are forwarded from
 * two stores rather than gathered from 32 byte stores.
 */
static inline __attribute__((always_inline)) void unpack_int4(const uint8_t *packed, int8_t *out) {
    int4_bytes bytes;
    memcpy(&bytes, packed, sizeof bytes);
    int4_bytes low = (bytes & 0x0F) - 8;
    int4_bytes high = (bytes >> 4) - 8;
    memcpy(out, &low, sizeof low);
    memcpy(out + INT4_GROUP_BYTES, &high, sizeof high);
}

/* Bytes of one int6 group's packed codes: the low 4 bits as int4's 16 bytes, the high 2 bits in 8 more. */
#define INT6_GROUP_BYTES (GROUP / 2 + GROUP / 4)

/* What an int6 code adds to its value q in [-32, 31]: the stored code u = q + 32 is unsigned, in [0, 63]. */
#define INT6_OFFSET 32

/* Two 64-bit words in a 16-byte vector: an int6 group's 8 bytes of high bits, shifted per word. */
typedef uint64_t int6_words __attribute__((vector_size(INT4_GROUP_BYTES)));

/*
 * One int6 group's 32 codes as the signed int8 codes q = u - 32 in [-32, 31] into out. The group is 24 bytes:
 * bytes 0-15 hold the low 4 bits of u as Q4_0 holds its nibbles (element j in the low nibble of byte j, element
 * j + 16 in its high nibble), and byte 16 + k holds the high 2 bits of elements k, k + 8, k + 16 and k + 24 in its
 * bits 0-1, 2-3, 4-5 and 6-7. So each 16-byte half of the result takes its high bits from the 8 bytes read as one
 * 64-bit word h, shifted per 8 lanes ({h << 4, h << 2} for elements 0-15, {h, h >> 2} for 16-31) and masked to
 * bits 4-5 (a 64-bit shift moves another byte's bits only into the bits the mask drops): a few vector operations
 * over unpack_int4's, stored whole as it stores.
 */
static inline __attribute__((always_inline)) void unpack_int6(const uint8_t *packed, int8_t *out) {
    int4_bytes bytes;
    uint64_t h;
    memcpy(&bytes, packed, sizeof bytes);
    memcpy(&h, packed + INT4_GROUP_BYTES, sizeof h);
    int6_words first = {h << 4, h << 2};
    int6_words second = {h, h >> 2};
    int4_bytes low = ((bytes & 0x0F) | ((int4_bytes)first & 0x30)) - INT6_OFFSET;
    int4_bytes high = ((bytes >> 4) | ((int4_bytes)second & 0x30)) - INT6_OFFSET;
    memcpy(out, &low, sizeof low);
    memcpy(out + INT4_GROUP_BYTES, &high, sizeof high);
}

#if defined(__AVX2__)
#include <immintrin.h>

/*
 * One int6 group's 32 codes as the unsigned u = q + 32 in [0, 63] (unpack_int6's order) in a register, for the
 * AVX-512 and AVX2 dot kernels: the nibbles split as int4's, and the 8 high-bit bytes broadcast as one 64-bit
 * word to the four 8-lane quarters, shifted right by 0, 2, 4, 6 (vpsrlvq), left by 4 and masked to bits 4-5.
 */
static inline __attribute__((always_inline)) __m256i unpack_int6_unsigned(const uint8_t *packed) {
    const __m128i nibble = _mm_set1_epi8(0x0F);
    __m128i bytes = _mm_loadu_si128((const __m128i *)packed);
    __m256i low = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_and_si128(bytes, nibble)),
            _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble), 1);
    long long h;
    memcpy(&h, packed + INT4_GROUP_BYTES, sizeof h);
    __m256i high = _mm256_srlv_epi64(_mm256_set1_epi64x(h), _mm256_set_epi64x(6, 4, 2, 0));
    return _mm256_or_si256(low, _mm256_and_si256(_mm256_slli_epi64(high, 4), _mm256_set1_epi8(0x30)));
}
#endif

/* Refuses a call's arguments: an IllegalArgumentException with the message, thrown when the native call returns. */
static inline void fail(JNIEnv *env, const char *message) {
    (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"), message);
}

#if defined(__AVX512F__)
#include <immintrin.h>

#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

/*
 * The 32 inputs from xs as int8 codes q in [-127, 127] (rounded to nearest even, clamped below at -127
 * as the weights are), with *scale = max |x| / 127, so x ~ q * scale.
 */
static inline __attribute__((always_inline)) VNNI_TARGET __m256i quantize_group(const float *xs, float *scale) {
    __m512 v0 = _mm512_loadu_ps(xs);
    __m512 v1 = _mm512_loadu_ps(xs + 16);
    float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_abs_ps(v0), _mm512_abs_ps(v1)));
    float d = amax / 127.0f;
    __m512 inverse = _mm512_set1_ps(d > 0.0f ? 1.0f / d : 0.0f);
    const __m512i low = _mm512_set1_epi32(-127);
    __m128i q0 = _mm512_cvtsepi32_epi8(_mm512_max_epi32(low, _mm512_cvtps_epi32(_mm512_mul_ps(v0, inverse))));
    __m128i q1 = _mm512_cvtsepi32_epi8(_mm512_max_epi32(low, _mm512_cvtps_epi32(_mm512_mul_ps(v1, inverse))));
    *scale = d;
    return _mm256_inserti128_si256(_mm256_castsi128_si256(q0), q1, 1);
}

/*
 * count (1 to 8) int8 group scales from s, held as IEEE half bits (llama.cpp's Q8_0 keeps them so),
 * widened exactly to float32 into lanes 0 to count - 1 and 0 in the others, by AVX-512F's vcvtph2ps (zmm).
 */
static inline __attribute__((always_inline)) __m512 widen_scales(const uint16_t *s, int count) {
    __m128i bits;
    if (count == 8) {
        bits = _mm_loadu_si128((const __m128i *)s);
    } else if (count == 2) {
        uint32_t pair;
        memcpy(&pair, s, sizeof pair);
        bits = _mm_cvtsi32_si128((int)pair);
    } else if (count == 1) {
        bits = _mm_cvtsi32_si128(*s);
    } else {
        uint16_t part[8] = {0};
        for (int i = 0; i < count; i++) {
            part[i] = s[i];
        }
        bits = _mm_loadu_si128((const __m128i *)part);
    }
    return _mm512_cvtph_ps(_mm256_zextsi128_si256(bits));
}

/* The int8 group scale at s widened to float32. */
static inline __attribute__((always_inline)) float scale_value(const uint16_t *s) {
    return _mm512_cvtss_f32(widen_scales(s, 1));
}

/* count int8 group scales from s widened to float32 into out, 8 a conversion. */
static inline __attribute__((always_inline)) void widen_scale_run(const uint16_t *s, int count, float *out) {
    int i = 0;
    for (; i + 8 <= count; i += 8) {
        _mm256_storeu_ps(out + i, _mm512_castps512_ps256(widen_scales(s + i, 8)));
    }
    for (; i < count; i++) {
        out[i] = scale_value(s + i);
    }
}

#else
/* The portable variants' vectors and their quantize_group32, lane for lane quantize_group above. */
#include "simd.h"
#endif

#endif
