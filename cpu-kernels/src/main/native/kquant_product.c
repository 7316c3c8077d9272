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
 * The product (llama.cpp's Q4_K x Q8_K): each row of x is quantized per super-block of 256 inputs to
 * int8 (scale xd = max|x| / 127, ties to even), so one super-block's term is
 *   xd * (d * sum_j sc_j * sum(q * xq) - dmin * sum_j m_j * sum_j(xq)),
 * both sums exact in int32: the first by the ISA's unsigned x signed int8 products of the 4-bit codes
 * themselves (they lie in [0, 15]: no offset needed), their 16-bit pair sums multiplied by the
 * sub-block's 6-bit scale as they are added into int32 lanes (at most 4 * 15 * 127 * 63 a lane and
 * sub-block); the second from the sums of x's codes per 32 kept with x. One conversion to float32 and
 * one fused multiply-add a super-block and row, so the result is the product of the weight widened
 * exactly with x rounded to its int8 grid per 256 inputs, up to float32 rounding of those few steps.
 * 32 codes times x, scaled:
 *   AVX2 (and the AVX-512 library on a CPU without AVX512_VNNI): vpmaddubsw (codes unsigned, x
 *     signed: pair sums at most 2 * 15 * 127, no saturation), vpmaddwd by the scale, vpaddd;
 *   AVX-512 with AVX512_VNNI (checked at run time): a pair of sub-blocks in one 512-bit vpmaddubsw and
 *     one vpdpwssd by the two scales;
 *   NEON with the dot-product extension: two sdot, two mla by the scale; NEON (ARMv8.0): smull/smlal,
 *   saddlp, mla.
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

/* acc + sc * (codes . x), the 32 products' sums in 8 int32 lanes. */
static inline __attribute__((always_inline)) kq_i8 kq_dot(kq_i8 acc, __m256i codes, const int8_t *x, int sc) {
    __m256i pairs = _mm256_maddubs_epi16(codes, _mm256_loadu_si256((const __m256i *)x));
    return acc + (kq_i8)_mm256_madd_epi16(pairs, _mm256_set1_epi16((short)sc));
}
#define KQ_LO(n) ((n).lo)
#define KQ_HI(n) ((n).hi)
typedef __m256i kq_codes;

#if defined(__AVX512F__)
#define KQ_VNNI_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni")))
/* A pair of sub-blocks at once (64 codes, 64 inputs; a missing second one read as zeros), scaled into 16
   int32 lanes. */
static inline KQ_VNNI_TARGET __m512i kq_pair_vnni(
        __m512i acc, kq_nibbles w, const int8_t *x, int sc_lo, int sc_hi, int whole) {
    __m512i codes = _mm512_inserti64x4(_mm512_castsi256_si512(w.lo), w.hi, 1);
    __m512i xs = _mm512_maskz_loadu_epi8(whole ? ~0ULL : 0xFFFFFFFFULL, x);
    __m512i scales = _mm512_inserti64x4(_mm512_set1_epi16((short)sc_lo), _mm256_set1_epi16((short)sc_hi), 1);
    return _mm512_dpwssd_epi32(acc, _mm512_maddubs_epi16(codes, xs), scales);
}

static inline KQ_VNNI_TARGET kq_i8 kq_fold_vnni(__m512i acc) {
    return (kq_i8)_mm256_add_epi32(_mm512_castsi512_si256(acc), _mm512_extracti64x4_epi64(acc, 1));
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

static inline __attribute__((always_inline)) kq_i8 kq_dot(kq_i8 acc, kq_codes codes, const int8_t *x, int sc) {
    int8x16_t x0 = vld1q_s8(x), x1 = vld1q_s8(x + 16);
    int8x16_t w0 = vreinterpretq_s8_u8(codes.a), w1 = vreinterpretq_s8_u8(codes.b);
#if defined(__ARM_FEATURE_DOTPROD)
    int32x4_t lo = vdotq_s32(vdupq_n_s32(0), w0, x0);
    int32x4_t hi = vdotq_s32(vdupq_n_s32(0), w1, x1);
#else
    int32x4_t lo = vpaddlq_s16(vmlal_s8(vmull_s8(vget_low_s8(w0), vget_low_s8(x0)), vget_high_s8(w0), vget_high_s8(x0)));
    int32x4_t hi = vpaddlq_s16(vmlal_s8(vmull_s8(vget_low_s8(w1), vget_low_s8(x1)), vget_high_s8(w1), vget_high_s8(x1)));
#endif
    int32x4_t acc_lo, acc_hi;
    memcpy(&acc_lo, &acc, sizeof acc_lo);
    memcpy(&acc_hi, (const char *)&acc + sizeof acc_lo, sizeof acc_hi);
    acc_lo = vmlaq_n_s32(acc_lo, lo, sc);
    acc_hi = vmlaq_n_s32(acc_hi, hi, sc);
    memcpy(&acc, &acc_lo, sizeof acc_lo);
    memcpy((char *)&acc + sizeof acc_lo, &acc_hi, sizeof acc_hi);
    return acc;
}
#define KQ_LO(n) ((n).lo)
#define KQ_HI(n) ((n).hi)
#endif

/* The pair of sub-blocks 2p (low nibbles) and 2p + 1 (high; absent where whole is 0) into acc. */
static inline __attribute__((always_inline)) kq_i8 kq_pair(
        kq_i8 acc, kq_nibbles w, const int8_t *x, int sc_lo, int sc_hi, int whole) {
    acc = kq_dot(acc, KQ_LO(w), x, sc_lo);
    return whole ? kq_dot(acc, KQ_HI(w), x + GROUP, sc_hi) : acc;
}

static inline __attribute__((always_inline)) kq_i8 kq_fold(kq_i8 acc) {
    return acc;
}

/* ---- x quantized per super-block of 256 ---- */

/* x's rows as int8 codes (rows, in), a scale per super-block (rows, blocks), the codes' sums per 32 (rows,
   groups). */
typedef struct {
    int8_t *codes;
    float *scales;
    int32_t *sums;
} kq_input;

static int kq_quantize(const float *x, int rows, int in, kq_input *q) {
    int groups = in / GROUP, blocks = (in + KQ_WEIGHTS - 1) / KQ_WEIGHTS;
    q->codes = malloc((size_t)rows * in);
    q->scales = malloc((size_t)rows * blocks * sizeof(float));
    q->sums = malloc((size_t)rows * groups * sizeof(int32_t));
    if (q->codes == NULL || q->scales == NULL || q->sums == NULL) {
        return 0;
    }
    for (int r = 0; r < rows; r++) {
        for (int b = 0; b < blocks; b++) {
            int start = b * KQ_WEIGHTS, count = in - start < KQ_WEIGHTS ? in - start : KQ_WEIGHTS;
            const float *xs = x + (size_t)r * in + start;
            int8_t *codes = q->codes + (size_t)r * in + start;
            float amax = 0.0f;
            for (int l = 0; l < count; l++) {
                float a = xs[l] < 0 ? -xs[l] : xs[l];
                amax = a > amax ? a : amax;
            }
            float d = amax / 127.0f;
            float inverse = d > 0.0f ? 1.0f / d : 0.0f;
            for (int l = 0; l < count; l++) {
                float v = __builtin_rintf(xs[l] * inverse); /* ties to even */
                codes[l] = (int8_t)(v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v);
            }
            q->scales[(size_t)r * blocks + b] = d;
            for (int g = 0; g < count / GROUP; g++) {
                int32_t sum = 0;
                for (int l = 0; l < GROUP; l++) {
                    sum += codes[g * GROUP + l];
                }
                q->sums[(size_t)r * groups + start / GROUP + g] = sum;
            }
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
#define KQ_COLUMNS_BODY(ROWS, PAIR, ACC, FOLD)                                                                      \
    do {                                                                                                            \
        const int groups = in / GROUP;                                                                              \
        const int blocks = (in + KQ_WEIGHTS - 1) / KQ_WEIGHTS;                                                      \
        for (int n = from; n < to; n++) {                                                                           \
            kq_f8 acc[KQ_MAX_ROWS];                                                                                 \
            float mins[KQ_MAX_ROWS];                                                                                \
            for (int r = 0; r < (ROWS); r++) {                                                                      \
                acc[r] = (kq_f8){0};                                                                                \
                mins[r] = 0.0f;                                                                                     \
            }                                                                                                       \
            const uint8_t *block = codes + (size_t)n * blocks * KQ_BYTES;                                           \
            for (int b = 0; b < blocks; b++, block += KQ_BYTES) {                                                   \
                __builtin_prefetch(block + KQ_PREFETCH_BYTES);                                                      \
                kq_scales s;                                                                                        \
                kq_unpack_scales(block, &s);                                                                        \
                int g0 = b * KQ_SUBS;                                                                               \
                int subs = groups - g0 < KQ_SUBS ? groups - g0 : KQ_SUBS;                                           \
                ACC sums[KQ_MAX_ROWS];                                                                              \
                for (int r = 0; r < (ROWS); r++) {                                                                  \
                    memset(&sums[r], 0, sizeof sums[r]);                                                            \
                }                                                                                                   \
                for (int p = 0; 2 * p < subs; p++) {                                                                \
                    kq_nibbles w = kq_unpack(block + 16 + 32 * p);                                                  \
                    int whole = 2 * p + 1 < subs;                                                                   \
                    for (int r = 0; r < (ROWS); r++) {                                                              \
                        const int8_t *xr = q.codes + (size_t)r * in + (size_t)(g0 + 2 * p) * GROUP;                 \
                        sums[r] = PAIR(sums[r], w, xr, s.sc[2 * p], s.sc[2 * p + 1], whole);                        \
                    }                                                                                               \
                }                                                                                                   \
                for (int r = 0; r < (ROWS); r++) {                                                                  \
                    const int32_t *xs = q.sums + (size_t)r * groups + g0;                                           \
                    int32_t m = 0;                                                                                  \
                    for (int j = 0; j < subs; j++) {                                                                \
                        m += (int32_t)s.m[j] * xs[j];                                                               \
                    }                                                                                               \
                    float xd = q.scales[(size_t)r * blocks + b];                                                    \
                    acc[r] = __builtin_convertvector(FOLD(sums[r]), kq_f8) * (s.d * xd) + acc[r];                   \
                    mins[r] += s.dmin * xd * (float)m;                                                              \
                }                                                                                                   \
            }                                                                                                       \
            for (int r = 0; r < (ROWS); r++) {                                                                      \
                out[(size_t)r * out_features + n] = kq_hsum(acc[r]) - mins[r] + (bias ? bias[n] : 0.0f);            \
            }                                                                                                       \
        }                                                                                                           \
    } while (0)

#define KQ_ARGS                                                                                                     \
    const kq_input q, const uint8_t *codes, const float *bias, float *out, int in, int out_features, int from,      \
            int to

#define KQ_ROWS(NAME, ATTR, PAIR, ACC, FOLD, R) \
    static ATTR void NAME##_##R(KQ_ARGS) { KQ_COLUMNS_BODY(R, PAIR, ACC, FOLD); }

#define KQ_CASE(NAME, R)                                                                                            \
    case R:                                                                                                         \
        NAME##_##R(q, codes, bias, out, in, out_features, from, to);                                                \
        break;

/* NAME(rows, ...): the kernel with the row count fixed (1 to 8), so its loops over the rows unroll. */
#define KQ_DEFINE(NAME, ATTR, PAIR, ACC, FOLD)                                                                      \
    KQ_ROWS(NAME, ATTR, PAIR, ACC, FOLD, 1)                                                                         \
    KQ_ROWS(NAME, ATTR, PAIR, ACC, FOLD, 2)                                                                         \
    KQ_ROWS(NAME, ATTR, PAIR, ACC, FOLD, 3)                                                                         \
    KQ_ROWS(NAME, ATTR, PAIR, ACC, FOLD, 4)                                                                         \
    KQ_ROWS(NAME, ATTR, PAIR, ACC, FOLD, 5)                                                                         \
    KQ_ROWS(NAME, ATTR, PAIR, ACC, FOLD, 6)                                                                         \
    KQ_ROWS(NAME, ATTR, PAIR, ACC, FOLD, 7)                                                                         \
    KQ_ROWS(NAME, ATTR, PAIR, ACC, FOLD, 8)                                                                         \
    static ATTR void NAME(int rows, KQ_ARGS) {                                                                      \
        switch (rows) {                                                                                             \
            KQ_CASE(NAME, 1)                                                                                        \
            KQ_CASE(NAME, 2)                                                                                        \
            KQ_CASE(NAME, 3)                                                                                        \
            KQ_CASE(NAME, 4)                                                                                        \
            KQ_CASE(NAME, 5)                                                                                        \
            KQ_CASE(NAME, 6)                                                                                        \
            KQ_CASE(NAME, 7)                                                                                        \
            KQ_CASE(NAME, 8)                                                                                        \
            default:                                                                                                \
                break;                                                                                              \
        }                                                                                                           \
    }

KQ_DEFINE(kq_columns, , kq_pair, kq_i8, kq_fold)
#if defined(__AVX512F__)
KQ_DEFINE(kq_columns_vnni, KQ_VNNI_TARGET __attribute__((flatten)), kq_pair_vnni, __m512i, kq_fold_vnni)

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
