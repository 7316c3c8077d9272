/*
 * q4_k weights (llama.cpp's Q4_K super-blocks, io.github.djlllmzoo.blocks.Q4KBlock): the product of 1 to
 * 8 rows of x (a decode step) reading each packed weight once for all rows, and the widening of a
 * weight's rows to float32 for a prefill's product by the engine. Called by
 * io.github.djlllmzoo.cpu.KQuantProduct with direct buffers it has checked: x float32 (rows, in)
 * contiguous, in a multiple of 32, each weight row ceil(in / 256) super-blocks of 144 bytes
 *   d (float16), dmin (float16), scales[12] (8 six-bit scales and mins), qs[128] (4-bit codes: each 64
 *   weights share 32 bytes, the first 32 in the low nibbles, the next 32 in the high ones),
 * value d * sc_j * q - dmin * m_j for sub-block j (32 weights). A row's last super-block may be cut
 * short at in: the product multiplies its integer codes past in by zeros, the widening does not read them.
 *
 * The product (llama.cpp's Q4_K x Q8_K): each row of x is quantized once a call, per super-block of 256
 * inputs to int8 (scale xd = max|x| / 127, ties to even), with its sums per 32 times xd, so one
 * super-block's term is
 *   d * xd * sum_j sc_j * sum(q * xq) - sum_j (dmin * m_j) * (xd * sum_j(xq)),
 * the first sum exact in int32 by the ISA's unsigned x signed int8 products of the 4-bit codes
 * themselves (they lie in [0, 15]: no offset needed), their 16-bit pair sums multiplied by the
 * sub-block's 6-bit scale as they are added into int32 lanes (at most 4 * 15 * 127 * 63 a lane and
 * sub-block); then one conversion and fused multiply-add, and one fused multiply-add of the mins' 8
 * lanes, into the same 8 float lanes a super-block and row. The 6-bit scales and mins are unpacked a
 * 32-bit word at a time. So the result is the product of the weight widened exactly with x rounded to
 * its int8 grid per 256 inputs, up to float32 rounding of those few steps. Per variant:
 *   AVX2 (and the AVX-512 library on a CPU without AVX512_VNNI): 32 code bytes a step, vpmaddubsw
 *     (codes unsigned, x signed: pair sums at most 2 * 15 * 127, no saturation), vpmaddwd by the scale
 *     (broadcast by one vpshufb), vpaddd;
 *   AVX-512 with AVX512_VNNI (checked at run time): 64 code bytes a step, each nibble's 64 codes (two
 *     sub-blocks) in one 512-bit vpmaddubsw and one vpdpwssd by the two scales (one vpermw), x's groups
 *     laid out to match;
 *   NEON with the dot-product extension: sdot, mla by the scale; NEON (ARMv8.0): smull/smlal, saddlp,
 *   mla.
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
typedef uint8_t kq_u8x8 __attribute__((vector_size(8)));

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

/*
 * A super-block's 8 six-bit scales (*sc, byte j for sub-block j) and mins (*m), from its 12 packed bytes
 * a 32-bit word at a time: sub-blocks 0-3 in the low 6 bits of bytes 0-3 (scales) and 4-7 (mins);
 * sub-blocks 4-7 in the nibbles of bytes 8-11 with their top 2 bits in the top bits of bytes 0-7.
 */
static inline __attribute__((always_inline)) void kq_sub_scales(const uint8_t *block, uint64_t *sc, uint64_t *m) {
    uint32_t w[3];
    memcpy(w, block + 4, sizeof w);
    uint32_t sc_hi = (w[2] & 0x0F0F0F0Fu) | ((w[0] >> 2) & 0x30303030u);
    uint32_t m_hi = ((w[2] >> 4) & 0x0F0F0F0Fu) | ((w[1] >> 2) & 0x30303030u);
    *sc = (w[0] & 0x3F3F3F3Fu) | (uint64_t)sc_hi << 32;
    *m = (w[1] & 0x3F3F3F3Fu) | (uint64_t)m_hi << 32;
}

/* The 8 bytes of v as floats. */
static inline __attribute__((always_inline)) kq_f8 kq_bytes_to_f8(uint64_t v) {
    kq_u8x8 bytes;
    memcpy(&bytes, &v, sizeof bytes);
    return __builtin_convertvector(__builtin_convertvector(bytes, kq_i8), kq_f8);
}

static inline __attribute__((always_inline)) kq_f8 kq_load_f8(const float *p) {
    kq_f8 v;
    memcpy(&v, p, sizeof v);
    return v;
}

/* ---- x quantized per super-block of 256 ---- */

/*
 * x's rows as int8 codes, super-block by super-block with every row's 256 codes together (blocks, rows,
 * 256), so the kernel finds a row's codes, scale and sums at a fixed offset from the block's; each row
 * padded with zeros to whole super-blocks (a row of the weight cut short at in needs no other path: its
 * codes past in multiply zeros). A scale per super-block (blocks, rows), and the codes' sums per 32 times
 * that scale (blocks, rows, 8; zeros past in) for the mins' term. With swap set, the second and third
 * group of each 128 inputs trade places: the AVX-512 kernel multiplies the low nibbles of 64 code bytes
 * (sub-blocks 0 and 2 of the 128) by one 64-byte load of x and the high ones (1 and 3) by the next.
 */
typedef struct {
    int8_t *codes;
    float *scales;
    float *sums;
    int blocks;
} kq_input;

static int kq_quantize(const float *x, int rows, int in, int swap, kq_input *q) {
    int blocks = (in + KQ_WEIGHTS - 1) / KQ_WEIGHTS;
    q->blocks = blocks;
    /* one allocation: the floats first, so they are aligned */
    size_t floats = (size_t)rows * blocks * (1 + KQ_SUBS);
    q->scales = malloc(floats * sizeof(float) + (size_t)rows * blocks * KQ_WEIGHTS);
    if (q->scales == NULL) {
        return 0;
    }
    q->sums = q->scales + (size_t)rows * blocks;
    q->codes = (int8_t *)(q->scales + floats);
    for (int r = 0; r < rows; r++) {
        for (int b = 0; b < blocks; b++) {
            int start = b * KQ_WEIGHTS, count = in - start < KQ_WEIGHTS ? in - start : KQ_WEIGHTS;
            const float *xs = x + (size_t)r * in + start;
            int8_t *codes = q->codes + ((size_t)b * rows + r) * KQ_WEIGHTS;
            float *sums = q->sums + ((size_t)b * rows + r) * KQ_SUBS;
            float amax = 0.0f;
            for (int l = 0; l < count; l++) {
                float a = xs[l] < 0 ? -xs[l] : xs[l];
                amax = a > amax ? a : amax;
            }
            float d = amax / 127.0f;
            float inverse = d > 0.0f ? 1.0f / d : 0.0f;
            for (int g = 0; g < KQ_SUBS; g++) {
                int at = swap && (g & 1) != ((g >> 1) & 1) ? g ^ 3 : g; /* 1 <-> 2 within each 4 */
                int8_t *to = codes + at * GROUP;
                int32_t sum = 0;
                if (g * GROUP < count) {
                    for (int l = 0; l < GROUP; l++) {
                        float v = __builtin_rintf(xs[g * GROUP + l] * inverse); /* ties to even */
                        int8_t c = (int8_t)(v < -127.0f ? -127.0f : v > 127.0f ? 127.0f : v);
                        to[l] = c;
                        sum += c;
                    }
                } else {
                    memset(to, 0, GROUP);
                }
                sums[g] = d * (float)sum;
            }
            q->scales[(size_t)b * rows + r] = d;
        }
    }
    return 1;
}

typedef float kq_f4 __attribute__((vector_size(16)));

static inline __attribute__((always_inline)) float kq_hsum(kq_f8 v) {
    kq_f4 h = __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
    h += __builtin_shufflevector(h, h, 2, 3, 0, 1);
    return h[0] + h[1];
}

/* ---- one super-block's scaled integer sums, sum_j sc_j * (q_j . xq_j), for each row of x ---- */

#if defined(__AVX2__)
/* The 16-bit lanes of v that hold byte pair (2j, 2j + 1) of each 128-bit half broadcast: scale j. */
#define KQ_SCALE(v, j) _mm256_shuffle_epi8((v), _mm256_set1_epi16((short)((2 * (j)) | (2 * (j) + 1) << 8)))

/*
 * AVX2 (and the AVX-512 library without AVX512_VNNI): 32 code bytes a step, their low nibbles (sub-block
 * 2p) and high ones (2p + 1) each by 32 inputs with vpmaddubsw (codes unsigned and at most 15: the pair
 * sums cannot saturate), vpmaddwd by the sub-block's scale, added into 8 int32 lanes.
 */
static inline __attribute__((always_inline)) void kq_sums(
        int rows, kq_i8 *sums, const uint8_t *qs, uint64_t sc, const int8_t *x) {
    const __m256i mask = _mm256_set1_epi8(0x0F);
    __m256i scales = _mm256_broadcastsi128_si256(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)sc)));
    for (int r = 0; r < rows; r++) {
        sums[r] = (kq_i8){0};
    }
    for (int p = 0; p < KQ_SUBS / 2; p++) {
        __m256i bytes = _mm256_loadu_si256((const __m256i *)(qs + 32 * p));
        __m256i lo = _mm256_and_si256(bytes, mask), hi = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), mask);
        __m256i sc_lo = KQ_SCALE(scales, 2 * p), sc_hi = KQ_SCALE(scales, 2 * p + 1);
        for (int r = 0; r < rows; r++) {
            const int8_t *xr = x + r * KQ_WEIGHTS + 64 * p;
            __m256i a = _mm256_madd_epi16(_mm256_maddubs_epi16(lo, _mm256_loadu_si256((const __m256i *)xr)), sc_lo);
            __m256i b = _mm256_madd_epi16(_mm256_maddubs_epi16(hi, _mm256_loadu_si256((const __m256i *)(xr + 32))), sc_hi);
            sums[r] += (kq_i8)_mm256_add_epi32(a, b);
        }
    }
}

#if defined(__AVX512F__)
#define KQ_VNNI_TARGET __attribute__((target("avx512f,avx512vl,avx512bw,avx512vnni")))

/* The 16-bit lanes of the scales: the first 16 scale j, the next 16 scale k. */
#define KQ_SCALES2(v, j, k) \
    _mm512_permutexvar_epi16(_mm512_inserti64x4(_mm512_set1_epi16(j), _mm256_set1_epi16(k), 1), (v))

/*
 * AVX-512 with AVX512_VNNI (x's groups swapped in each 128, kq_quantize): 64 code bytes a step, their low
 * nibbles (sub-blocks 4h and 4h + 2) and high ones (4h + 1, 4h + 3) each by 64 inputs in one 512-bit
 * vpmaddubsw and one vpdpwssd by the two sub-blocks' scales, 16 int32 lanes.
 */
static inline KQ_VNNI_TARGET __attribute__((always_inline)) void kq_sums_vnni(
        int rows, kq_i8 *sums, const uint8_t *qs, uint64_t sc, const int8_t *x) {
    const __m512i mask = _mm512_set1_epi8(0x0F);
    __m512i scales = _mm512_castsi128_si512(_mm_cvtepu8_epi16(_mm_cvtsi64_si128((long long)sc)));
    __m512i acc[KQ_MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = _mm512_setzero_si512();
    }
    for (int h = 0; h < KQ_SUBS / 4; h++) {
        __m512i bytes = _mm512_loadu_si512((const void *)(qs + 64 * h));
        __m512i lo = _mm512_and_si512(bytes, mask), hi = _mm512_and_si512(_mm512_srli_epi16(bytes, 4), mask);
        __m512i sc_lo = KQ_SCALES2(scales, 4 * h, 4 * h + 2), sc_hi = KQ_SCALES2(scales, 4 * h + 1, 4 * h + 3);
        for (int r = 0; r < rows; r++) {
            const int8_t *xr = x + r * KQ_WEIGHTS + 128 * h;
            acc[r] = _mm512_dpwssd_epi32(acc[r], _mm512_maddubs_epi16(lo, _mm512_loadu_si512((const void *)xr)), sc_lo);
            acc[r] = _mm512_dpwssd_epi32(
                    acc[r], _mm512_maddubs_epi16(hi, _mm512_loadu_si512((const void *)(xr + 64))), sc_hi);
        }
    }
    for (int r = 0; r < rows; r++) { /* 16 lanes to 8 */
        sums[r] = (kq_i8)_mm256_add_epi32(_mm512_castsi512_si256(acc[r]), _mm512_extracti64x4_epi64(acc[r], 1));
    }
}
#endif

#else /* NEON */
/* 16 codes of a sub-block times 16 inputs, 4 int32 lanes: sdot, or smull/smlal and saddlp on ARMv8.0. */
static inline __attribute__((always_inline)) int32x4_t kq_dot16(uint8x16_t codes, const int8_t *x) {
    int8x16_t w = vreinterpretq_s8_u8(codes), xs = vld1q_s8(x);
#if defined(__ARM_FEATURE_DOTPROD)
    return vdotq_s32(vdupq_n_s32(0), w, xs);
#else
    return vpaddlq_s16(vmlal_s8(vmull_s8(vget_low_s8(w), vget_low_s8(xs)), vget_high_s8(w), vget_high_s8(xs)));
#endif
}

/* NEON: 32 code bytes a step, each nibble's 32 codes by 32 inputs, mla by the sub-block's scale. */
static inline __attribute__((always_inline)) void kq_sums(
        int rows, kq_i8 *sums, const uint8_t *qs, uint64_t sc, const int8_t *x) {
    const uint8x16_t mask = vdupq_n_u8(0x0F);
    int32x4_t lo_acc[KQ_MAX_ROWS], hi_acc[KQ_MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        lo_acc[r] = vdupq_n_s32(0);
        hi_acc[r] = vdupq_n_s32(0);
    }
    for (int p = 0; p < KQ_SUBS / 2; p++) {
        uint8x16_t b0 = vld1q_u8(qs + 32 * p), b1 = vld1q_u8(qs + 32 * p + 16);
        uint8x16_t l0 = vandq_u8(b0, mask), l1 = vandq_u8(b1, mask), h0 = vshrq_n_u8(b0, 4), h1 = vshrq_n_u8(b1, 4);
        int sc_lo = (int)((sc >> (16 * p)) & 0xFF), sc_hi = (int)((sc >> (16 * p + 8)) & 0xFF);
        for (int r = 0; r < rows; r++) {
            const int8_t *xr = x + r * KQ_WEIGHTS + 64 * p;
            lo_acc[r] = vmlaq_n_s32(lo_acc[r], vaddq_s32(kq_dot16(l0, xr), kq_dot16(l1, xr + 16)), sc_lo);
            hi_acc[r] = vmlaq_n_s32(hi_acc[r], vaddq_s32(kq_dot16(h0, xr + 32), kq_dot16(h1, xr + 48)), sc_hi);
        }
    }
    for (int r = 0; r < rows; r++) {
        memcpy(&sums[r], &lo_acc[r], sizeof lo_acc[r]);
        memcpy((char *)&sums[r] + sizeof lo_acc[r], &hi_acc[r], sizeof hi_acc[r]);
    }
}
#endif

/*
 * Outputs [from, to) for ROWS rows of x: each super-block read once for all rows by SUMS (its scaled
 * integer sums per row in 8 int32 lanes), then per row one conversion and fused multiply-add by d * xd,
 * and the mins' term (dmin * m_j) * (xd * sum(xq_j)) taken off the same 8 float lanes.
 */
#define KQ_COLUMNS_BODY(ROWS, SUMS)                                                                                 \
    do {                                                                                                            \
        const int blocks = q.blocks;                                                                                \
        for (int n = from; n < to; n++) {                                                                           \
            kq_f8 acc[KQ_MAX_ROWS];                                                                                 \
            for (int r = 0; r < (ROWS); r++) {                                                                      \
                acc[r] = (kq_f8){0};                                                                                \
            }                                                                                                       \
            const uint8_t *block = codes + (size_t)n * blocks * KQ_BYTES;                                           \
            const int8_t *xq = q.codes;                                                                             \
            const float *xd = q.scales, *xs = q.sums;                                                               \
            for (int b = 0; b < blocks; b++, block += KQ_BYTES) {                                                   \
                __builtin_prefetch(block + KQ_PREFETCH_BYTES);                                                      \
                uint64_t sc, m;                                                                                     \
                kq_sub_scales(block, &sc, &m);                                                                      \
                kq_i8 sums[KQ_MAX_ROWS];                                                                            \
                SUMS((ROWS), sums, block + 16, sc, xq);                                                             \
                float d = kq_half(block);                                                                           \
                kq_f8 dm = kq_bytes_to_f8(m) * kq_half(block + 2);                                                  \
                for (int r = 0; r < (ROWS); r++) {                                                                  \
                    acc[r] = __builtin_convertvector(sums[r], kq_f8) * (d * xd[r]) + acc[r];                        \
                    acc[r] -= dm * kq_load_f8(xs + r * KQ_SUBS);                                                    \
                }                                                                                                   \
                xq += (ROWS) * KQ_WEIGHTS;                                                                          \
                xd += (ROWS);                                                                                       \
                xs += (ROWS) * KQ_SUBS;                                                                             \
            }                                                                                                       \
            for (int r = 0; r < (ROWS); r++) {                                                                      \
                out[(size_t)r * out_features + n] = kq_hsum(acc[r]) + (bias ? bias[n] : 0.0f);                      \
            }                                                                                                       \
        }                                                                                                           \
    } while (0)

#define KQ_ARGS const kq_input q, const uint8_t *codes, const float *bias, float *out, int out_features, int from, int to

#define KQ_ROWS(NAME, ATTR, SUMS, R) static ATTR void NAME##_##R(KQ_ARGS) { KQ_COLUMNS_BODY(R, SUMS); }

#define KQ_CASE(NAME, R)                                                                                            \
    case R:                                                                                                         \
        NAME##_##R(q, codes, bias, out, out_features, from, to);                                                    \
        break;

/* NAME(rows, ...): the kernel with the row count fixed (1 to 8), so its loops over the rows unroll. */
#define KQ_DEFINE(NAME, ATTR, SUMS)                                                                     \
    KQ_ROWS(NAME, ATTR, SUMS, 1)                                                                        \
    KQ_ROWS(NAME, ATTR, SUMS, 2)                                                                        \
    KQ_ROWS(NAME, ATTR, SUMS, 3)                                                                        \
    KQ_ROWS(NAME, ATTR, SUMS, 4)                                                                        \
    KQ_ROWS(NAME, ATTR, SUMS, 5)                                                                        \
    KQ_ROWS(NAME, ATTR, SUMS, 6)                                                                        \
    KQ_ROWS(NAME, ATTR, SUMS, 7)                                                                        \
    KQ_ROWS(NAME, ATTR, SUMS, 8)                                                                        \
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

KQ_DEFINE(kq_columns, , kq_sums)
#if defined(__AVX512F__)
KQ_DEFINE(kq_columns_vnni, KQ_VNNI_TARGET __attribute__((flatten)), kq_sums_vnni)

static int kq_has_vnni(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw")
            && __builtin_cpu_supports("avx512vnni");
}
#endif

/* Output columns a prefill's product passes every tile of rows over while their weight rows stay in L2. */
#define KQ_PANEL 64

static int kq_vnni(void) {
#if defined(__AVX512F__)
    static int vnni = -1;
    if (vnni < 0) {
        vnni = kq_has_vnni();
    }
    return vnni;
#else
    return 0;
#endif
}

static void kq_run(int rows, KQ_ARGS) {
#if defined(__AVX512F__)
    if (kq_vnni()) {
        kq_columns_vnni(rows, q, codes, bias, out, out_features, from, to);
        return;
    }
#endif
    kq_columns(rows, q, codes, bias, out, out_features, from, to);
}

/*
 * out[:, from:to] = x @ weight^T + bias for a q4_k weight (out_features, in) and any number of rows of x:
 * 1 to 8 (a decode step) in one pass over the weight; more (a prefill) in tiles of 8 rows, each quantized
 * once, every tile passed over a panel of KQ_PANEL output columns before the next panel is read, so the
 * weight is read from memory once and never widened.
 */
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
    if (rows < 1 || in % GROUP != 0) {
        fail(env, "q4_k product: rows must be at least 1 and in a multiple of 32");
        return;
    }
    int vnni = kq_vnni();
    int tiles = (rows + KQ_MAX_ROWS - 1) / KQ_MAX_ROWS;
    kq_input *q = calloc((size_t)tiles, sizeof *q);
    int ready = q != NULL;
    for (int t = 0; ready && t < tiles; t++) {
        int count = rows - t * KQ_MAX_ROWS < KQ_MAX_ROWS ? rows - t * KQ_MAX_ROWS : KQ_MAX_ROWS;
        ready = kq_quantize(x + (size_t)t * KQ_MAX_ROWS * in, count, in, vnni, &q[t]);
    }
    if (ready) {
        int panel = tiles == 1 ? to - from : KQ_PANEL;
        for (int p = from; p < to; p += panel) {
            int end = to - p < panel ? to : p + panel;
            for (int t = 0; t < tiles; t++) {
                int count = rows - t * KQ_MAX_ROWS < KQ_MAX_ROWS ? rows - t * KQ_MAX_ROWS : KQ_MAX_ROWS;
                kq_run(count, q[t], codes, bias, out + (size_t)t * KQ_MAX_ROWS * out_features, out_features, p, end);
            }
        }
    } else {
        fail(env, "q4_k product: no memory for the input's int8 form");
    }
    for (int t = 0; q != NULL && t < tiles; t++) {
        free(q[t].scales);
    }
    free(q);
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
            uint64_t sc, m;
            kq_sub_scales(block, &sc, &m);
            float d = kq_half(block), dmin = kq_half(block + 2);
            for (int j = 0; j < KQ_SUBS && b * KQ_WEIGHTS + j * GROUP < in; j++) {
                const uint8_t *qs = block + 16 + 32 * (j / 2);
                int shift = 4 * (j % 2);
                float step = d * (float)((sc >> (8 * j)) & 0xFF);
                float min = dmin * (float)((m >> (8 * j)) & 0xFF);
                float *to_row = row + b * KQ_WEIGHTS + j * GROUP;
                for (int l = 0; l < GROUP; l++) {
                    to_row[l] = step * (float)((qs[l] >> shift) & 0x0F) - min;
                }
            }
        }
    }
}
