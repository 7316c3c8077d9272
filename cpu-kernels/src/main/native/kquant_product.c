/*
 * q4_k weights (llama.cpp's Q4_K super-blocks, io.github.djlllmzoo.blocks.Q4KBlock): the product of 1 to
 * 8 rows of x (a decode step) reading each packed weight once for all rows, and the widening of a
 * weight's rows to float32 for a prefill's product by the engine. Called by
 * io.github.djlllmzoo.cpu.KQuantProduct with direct buffers it has checked: x float32 (rows, in)
 * contiguous, in a multiple of 32, each weight row ceil(in / 256) super-blocks of 144 bytes
 *   d (float16), dmin (float16), scales[12] (8 six-bit scales and mins), qs[128] (4-bit codes: each 64
 *   weights share 32 bytes, the first 32 in the low nibbles, the next 32 in the high ones),
 * value d * sc_j * q - dmin * m_j for sub-block j (32 weights). A row's last super-block may be cut
 * short at in (its sub-blocks past in are not read).
 *
 * The product: each row of x is quantized per group of 32 to int8 (scale max|x| / 127, ties to even,
 * as the int8 kernels' quantize_group), so one sub-block's term is
 *   xd_g * (d * sc_j * sum(q * xq) - dmin * m_j * sum(xq)),
 * the first sum by the ISA's unsigned x signed int8 dot product on the 4-bit codes themselves (they lie
 * in [0, 15]: no offset needed), exact in int32, times a float32 scale into 8 float32 lanes per row of
 * x; the second from sum(xq) * xd_g kept per group of x. So the result is the product of the weight
 * widened exactly with x rounded to its int8 grid (llama.cpp's Q4_K x Q8_K, with x's scale per 32
 * inputs rather than per 256), up to the order of the float32 sums. The dot product of 32 codes:
 *   AVX2 (and the AVX-512 library on a CPU without AVX512_VNNI): vpmaddubsw (codes unsigned, x
 *     signed: pair sums at most 2 * 15 * 127, no saturation), vpmaddwd into int32;
 *   AVX-512 with AVX512_VNNI (checked at run time): one vpdpbusd on 256-bit registers;
 *   NEON with the dot-product extension: two sdot; NEON (ARMv8.0): smull/smlal, sadalp.
 * One source for every variant, compiled per target as the other kernels (build.sh).
 */
#include <jni.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compressed_format.h"

#if defined(__AVX2__)
#include <immintrin.h>
#elif defined(__aarch64__)
#include <arm_neon.h>
#endif

#define KQ_MAX_ROWS 8
#define KQ_WEIGHTS 256
#define KQ_BYTES 144
#define KQ_SUBS (KQ_WEIGHTS / GROUP)
/* Bytes ahead of the current super-block that the weight is prefetched. */
#define KQ_PREFETCH_BYTES 2048

typedef float kq_f8 __attribute__((vector_size(32)));
typedef int32_t kq_i8 __attribute__((vector_size(32)));

/* One super-block's float16 d and dmin, and its 8 six-bit scales and mins. */
typedef struct {
    float d, dmin;
    uint8_t sc[KQ_SUBS], m[KQ_SUBS];
} kq_scales;

static inline __attribute__((always_inline)) float kq_half(const uint8_t *p) {
    uint16_t bits;
    memcpy(&bits, p, sizeof bits);
#if defined(__AVX2__)
    return _cvtsh_ss(bits);
#else
    __fp16 h;
    memcpy(&h, &bits, sizeof h);
    return (float)h;
#endif
}

static inline __attribute__((always_inline)) void kq_unpack_scales(const uint8_t *block, kq_scales *s) {
    const uint8_t *q = block + 4;
    s->d = kq_half(block);
    s->dmin = kq_half(block + 2);
    for (int j = 0; j < 4; j++) {
        s->sc[j] = q[j] & 63;
        s->m[j] = q[j + 4] & 63;
        s->sc[j + 4] = (q[j + 8] & 0x0F) | ((q[j] >> 6) << 4);
        s->m[j + 4] = (q[j + 8] >> 4) | ((q[j + 4] >> 6) << 4);
    }
}

/* ---- the ISA's 32 codes (unsigned, [0, 15]) times 32 int8 inputs, 8 int32 lanes of partial sums ---- */

#if defined(__AVX2__)
/* 64 weights' codes: the low nibbles of 32 bytes (sub-block 2p) and their high nibbles (2p + 1). */
typedef struct {
    __m256i lo, hi;
} kq_nibbles;

static inline __attribute__((always_inline)) kq_nibbles kq_unpack(const uint8_t *qs) {
    const __m256i mask = _mm256_set1_epi8(0x0F);
    __m256i bytes = _mm256_loadu_si256((const __m256i *)qs);
    return (kq_nibbles){_mm256_and_si256(bytes, mask), _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask)};
}

static inline __attribute__((always_inline)) kq_i8 kq_dot(__m256i codes, const int8_t *x) {
    __m256i pairs = _mm256_maddubs_epi16(codes, _mm256_loadu_si256((const __m256i *)x));
    return (kq_i8)_mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
}
#define KQ_LO(n) ((n).lo)
#define KQ_HI(n) ((n).hi)
typedef __m256i kq_codes;

#if defined(__AVX512F__)
#define KQ_VNNI_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni")))
static inline KQ_VNNI_TARGET kq_i8 kq_dot_vnni(__m256i codes, const int8_t *x) {
    return (kq_i8)_mm256_dpbusd_epi32(_mm256_setzero_si256(), codes, _mm256_loadu_si256((const __m256i *)x));
}
#endif

#else /* NEON */
typedef struct {
    uint8x16_t a, b;
} kq_codes;

typedef struct {
    kq_codes lo, hi;
} kq_nibbles;

static inline __attribute__((always_inline)) kq_nibbles kq_unpack(const uint8_t *qs) {
    const uint8x16_t mask = vdupq_n_u8(0x0F);
    uint8x16_t b0 = vld1q_u8(qs), b1 = vld1q_u8(qs + 16);
    return (kq_nibbles){{vandq_u8(b0, mask), vandq_u8(b1, mask)}, {vshrq_n_u8(b0, 4), vshrq_n_u8(b1, 4)}};
}

static inline __attribute__((always_inline)) kq_i8 kq_dot(kq_codes codes, const int8_t *x) {
    int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
    int8x16_t w0 = vreinterpretq_s8_u8(codes.a), w1 = vreinterpretq_s8_u8(codes.b);
#if defined(__ARM_FEATURE_DOTPROD)
    int32x4_t lo = vdotq_s32(vdupq_n_s32(0), w0, x0);
    int32x4_t hi = vdotq_s32(vdupq_n_s32(0), w1, x1);
#else
    int32x4_t lo = vpaddlq_s16(vmlal_s8(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)), vget_high_s8(w0), vget_high_s8(x0)));
    int32x4_t hi = vpaddlq_s16(vmlal_s8(vmull_s8(vget_low_s8(w1), vget_low_s8(x1)), vget_high_s8(w1), vget_high_s8(x1)));
#endif
    kq_i8 out;
    memcpy(&out, &lo, sizeof lo);
    memcpy((char *)&out + sizeof lo, &hi, sizeof hi);
    return out;
}
#define KQ_LO(n) ((n).lo)
#define KQ_HI(n) ((n).hi)
#endif

/* ---- x quantized per group of 32 ---- */

/* x's rows as int8 codes per group of 32 (codes (rows, in), scales and scale * sum(codes) (rows, groups)). */
typedef struct {
    int8_t *codes;
    float *scales;
    float *sums;
} kq_input;

static int kq_quantize(const float *x, int rows, int in, kq_input *q) {
    int groups = in / GROUP;
    q->codes = malloc((size_t)rows * in);
    q->scales = malloc((size_t)rows * groups * sizeof(float));
    q->sums = malloc((size_t)rows * groups * sizeof(float));
    if (q->codes == NULL || q->scales == NULL || q->sums == NULL) {
        return 0;
    }
    for (int r = 0; r < rows; r++) {
        for (int g = 0; g < groups; g++) {
            const float *xs = x + (size_t)r * in + (size_t)g * GROUP;
            int8_t *codes = q->codes + (size_t)r * in + (size_t)g * GROUP;
            float amax = 0.0f;
            for (int l = 0; l < GROUP; l++) {
                float a = xs[l] < 0 ? -xs[l] : xs[l];
                amax = a > amax ? a : amax;
            }
            float d = amax / 127.0f;
            float inverse = d > 0.0f ? 1.0f / d : 0.0f;
            int sum = 0;
            for (int l = 0; l < GROUP; l++) {
                float v = __builtin_rintf(xs[l] * inverse); /* ties to even, as quantize_group */
                v = v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v;
                codes[l] = (int8_t)v;
                sum += codes[l];
            }
            q->scales[(size_t)r * groups + g] = d;
            q->sums[(size_t)r * groups + g] = d * (float)sum;
        }
    }
    return 1;
}

static void kq_release(kq_input *q) {
    free(q->codes);
    free(q->scales);
    free(q->sums);
}

static inline __attribute__((always_inline)) float kq_hsum(kq_f8 v) {
    float s = 0.0f;
    for (int l = 0; l < 8; l++) {
        s += v[l];
    }
    return s;
}

/*
 * Outputs [from, to) for ROWS rows of x, by the dot product DOT: each super-block's 64 weights a step
 * unpacked once, then multiplied with every row's inputs.
 */
#define KQ_COLUMNS_BODY(ROWS, DOT)                                                                          \
    do {                                                                                                    \
        const int groups = in / GROUP;                                                                      \
        const int blocks = (in + KQ_WEIGHTS - 1) / KQ_WEIGHTS;                                              \
        for (int n = from; n < to; n++) {                                                                   \
            kq_f8 acc[KQ_MAX_ROWS], acc_hi[KQ_MAX_ROWS]; /* two chains of fused multiply-adds a row */      \
            float mins[KQ_MAX_ROWS];                                                                        \
            for (int r = 0; r < (ROWS); r++) {                                                              \
                acc[r] = (kq_f8){0};                                                                        \
                acc_hi[r] = (kq_f8){0};                                                                     \
                mins[r] = 0.0f;                                                                             \
            }                                                                                               \
            const uint8_t *block = codes + (size_t)n * blocks * KQ_BYTES;                                   \
            for (int b = 0; b < blocks; b++, block += KQ_BYTES) {                                           \
                __builtin_prefetch(block + KQ_PREFETCH_BYTES);                                              \
                kq_scales s;                                                                                \
                kq_unpack_scales(block, &s);                                                                \
                int g0 = b * KQ_SUBS;                                                                       \
                int subs = groups - g0 < KQ_SUBS ? groups - g0 : KQ_SUBS;                                   \
                for (int p = 0; 2 * p < subs; p++) {                                                        \
                    kq_nibbles w = kq_unpack(block + 16 + 32 * p);                                          \
                    int g = g0 + 2 * p;                                                                     \
                    float lo_step = s.d * s.sc[2 * p];                                                      \
                    float hi_step = s.d * s.sc[2 * p + 1];                                                  \
                    int whole = 2 * p + 1 < subs;                                                           \
                    for (int r = 0; r < (ROWS); r++) {                                                      \
                        const int8_t *xr = q.codes + (size_t)r * in + (size_t)g * GROUP;                    \
                        const float *xd = q.scales + (size_t)r * groups + g;                                \
                        kq_f8 lo = __builtin_convertvector(DOT(KQ_LO(w), xr), kq_f8);                       \
                        acc[r] = lo * (lo_step * xd[0]) + acc[r];                                           \
                        if (whole) {                                                                        \
                            kq_f8 hi = __builtin_convertvector(DOT(KQ_HI(w), xr + GROUP), kq_f8);           \
                            acc_hi[r] = hi * (hi_step * xd[1]) + acc_hi[r];                                 \
                        }                                                                                   \
                    }                                                                                       \
                }                                                                                           \
                for (int r = 0; r < (ROWS); r++) {                                                          \
                    const float *xs = q.sums + (size_t)r * groups + g0;                                     \
                    float m = 0.0f;                                                                         \
                    for (int j = 0; j < subs; j++) {                                                        \
                        m += (float)s.m[j] * xs[j];                                                         \
                    }                                                                                       \
                    mins[r] += s.dmin * m;                                                                  \
                }                                                                                           \
            }                                                                                               \
            for (int r = 0; r < (ROWS); r++) {                                                              \
                out[(size_t)r * out_features + n] = kq_hsum(acc[r] + acc_hi[r]) - mins[r] + (bias ? bias[n] : 0.0f); \
            }                                                                                               \
        }                                                                                                   \
    } while (0)

#define KQ_ARGS                                                                                             \
    const kq_input q, const uint8_t *codes, const float *bias, float *out, int in, int out_features, int from, \
            int to

#define KQ_ROWS(NAME, ATTR, DOT, R) \
    static ATTR void NAME##_##R(KQ_ARGS) { KQ_COLUMNS_BODY(R, DOT); }

#define KQ_CASE(NAME, R)                                                                                    \
    case R:                                                                                                 \
        NAME##_##R(q, codes, bias, out, in, out_features, from, to);                                        \
        break;

/* NAME(rows, ...): the kernel with the row count fixed (1 to 8), so its loops over the rows unroll. */
#define KQ_DEFINE(NAME, ATTR, DOT)                                                                          \
    KQ_ROWS(NAME, ATTR, DOT, 1)                                                                             \
    KQ_ROWS(NAME, ATTR, DOT, 2)                                                                             \
    KQ_ROWS(NAME, ATTR, DOT, 3)                                                                             \
    KQ_ROWS(NAME, ATTR, DOT, 4)                                                                             \
    KQ_ROWS(NAME, ATTR, DOT, 5)                                                                             \
    KQ_ROWS(NAME, ATTR, DOT, 6)                                                                             \
    KQ_ROWS(NAME, ATTR, DOT, 7)                                                                             \
    KQ_ROWS(NAME, ATTR, DOT, 8)                                                                             \
    static ATTR void NAME(int rows, KQ_ARGS) {                                                              \
        switch (rows) {                                                                                     \
            KQ_CASE(NAME, 1)                                                                                \
            KQ_CASE(NAME, 2)                                                                                \
            KQ_CASE(NAME, 3)                                                                                \
            KQ_CASE(NAME, 4)                                                                                \
            KQ_CASE(NAME, 5)                                                                                \
            KQ_CASE(NAME, 6)                                                                                \
            KQ_CASE(NAME, 7)                                                                                \
            KQ_CASE(NAME, 8)                                                                                \
            default:                                                                                        \
                break;                                                                                      \
        }                                                                                                   \
    }

KQ_DEFINE(kq_columns, , kq_dot)
#if defined(__AVX512F__)
KQ_DEFINE(kq_columns_vnni, KQ_VNNI_TARGET __attribute__((flatten)), kq_dot_vnni)

static int kq_has_vnni(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw")
            && __builtin_cpu_supports("avx512vnni");
}
#endif

/* out[:, from:to] = x @ weight^T + bias for a q4_k weight (out_features, in). */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply(
        JNIEnv *env, jclass cls, jobject x_buffer, jobject codes_buffer, jobject bias_buffer, jobject out_buffer,
        jint rows, jint in, jint out_features, jint from, jint to) {
    (void)cls;
    const float *x = (const float *)(*env)->GetDirectBufferAddress(env, x_buffer);
    const uint8_t *codes = (const uint8_t *)(*env)->GetDirectBufferAddress(env, codes_buffer);
    const float *bias = bias_buffer == NULL ? NULL : (const float *)(*env)->GetDirectBufferAddress(env, bias_buffer);
    float *out = (float *)(*env)->GetDirectBufferAddress(env, out_buffer);
    if (x == NULL || codes == NULL || out == NULL || (bias_buffer != NULL && bias == NULL)) {
        fail(env, "q4_k product: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (rows < 1 || rows > KQ_MAX_ROWS || in % GROUP != 0) {
        fail(env, "q4_k product: rows must be 1 to 8 and in a multiple of 32");
        return;
    }
    kq_input q;
    if (!kq_quantize(x, rows, in, &q)) {
        kq_release(&q);
        fail(env, "q4_k product: no memory for the input's int8 form");
        return;
    }
#if defined(__AVX512F__)
    static int vnni = -1;
    if (vnni < 0) {
        vnni = kq_has_vnni();
    }
    if (vnni) {
        kq_columns_vnni(rows, q, codes, bias, out, in, out_features, from, to);
    } else {
        kq_columns(rows, q, codes, bias, out, in, out_features, from, to);
    }
#else
    kq_columns(rows, q, codes, bias, out, in, out_features, from, to);
#endif
    kq_release(&q);
}

/* Rows [from, to) of a q4_k weight widened to float32 into out (rows, in): (d * sc) * q - dmin * m. */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_widen(
        JNIEnv *env, jclass cls, jobject codes_buffer, jobject out_buffer, jint in, jint from, jint to) {
    (void)cls;
    const uint8_t *codes = (const uint8_t *)(*env)->GetDirectBufferAddress(env, codes_buffer);
    float *out = (float *)(*env)->GetDirectBufferAddress(env, out_buffer);
    if (codes == NULL || out == NULL) {
        fail(env, "q4_k widening: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (in % GROUP != 0) {
        fail(env, "q4_k widening: in must be a multiple of 32");
        return;
    }
    const int blocks = (in + KQ_WEIGHTS - 1) / KQ_WEIGHTS;
    for (int n = from; n < to; n++) {
        const uint8_t *block = codes + (size_t)n * blocks * KQ_BYTES;
        float *row = out + (size_t)n * in;
        for (int b = 0; b < blocks; b++, block += KQ_BYTES) {
            kq_scales s;
            kq_unpack_scales(block, &s);
            for (int j = 0; j < KQ_SUBS && b * KQ_WEIGHTS + j * GROUP < in; j++) {
                const uint8_t *qs = block + 16 + 32 * (j / 2);
                int shift = 4 * (j % 2);
                float step = s.d * s.sc[j];
                float min = s.dmin * s.m[j];
                float *to_row = row + b * KQ_WEIGHTS + j * GROUP;
                for (int l = 0; l < GROUP; l++) {
                    to_row[l] = step * (float)((qs[l] >> shift) & 0x0F) - min;
                }
            }
        }
    }
}
