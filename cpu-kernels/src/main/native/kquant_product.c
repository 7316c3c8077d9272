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
 * themselves (they lie in [0, 15]: no offset needed), scaled per sub-block by its 6-bit scale; then one
 * conversion and fused multiply-add, and a fused multiply-add of the mins (AVX-512: one for two rows). The
 * 6-bit scales and mins are unpacked a 32-bit word at a time. So the result is the product of the weight
 * widened exactly with x rounded to its int8 grid per 256 inputs, up to float32 rounding of those few
 * steps. A super-block's codes are loaded and unpacked once for all rows, each row its own accumulators,
 * and on x86 transposed in registers (x laid out to match when it is quantized) so that a row's products
 * of the whole block add into one register before its float32 step (taking each sub-block apart had
 * cost about twice that a row). Where a tile's x outgrows L1 (8 rows of 5632 inputs: 51 KB), each span of
 * 16 columns takes x a chunk of super-blocks at a time, its accumulators resting in memory between chunks.
 * A row's sums and their order do not depend on the rows beside it nor on the chunks. Per variant:
 *   AVX2 (and the AVX-512 library on a CPU without AVX512_VNNI): kq_sums, 8 vpmaddubsw a row, their 16-bit
 *     sums added per nibble and two vpmaddwd by the lanes' scales;
 *   AVX-512 with AVX512_VNNI (checked at run time): kq_t512, 4 vpdpbusd a row, each sub-block's sum in
 *     two lanes, one float32 step of 16 lanes by the lanes' d * sc_j * xd, the mins one step for two rows;
 *   NEON with the dot-product extension: sdot, mla by the scale; NEON (ARMv8.0): smull/smlal, saddlp,
 *   mla (32 code bytes a step, x in its natural order).
 * One source for every variant, compiled per target as the other kernels (build.sh).
 */
#include <jni.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compressed_format.h"
#include "simd.h"

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
/*
 * The most bytes of x's int8 form (a tile's codes, scales and sums) one pass over the weight's rows reads:
 * more (8 rows of a down projection's 5632 inputs are 51 KB) are read in chunks of super-blocks that fit L1
 * beside the weight's stream and the resting accumulators (kq_chunk). With all 51 KB at once each output
 * row's walk over x evicted the x it was about to read (L1 is 48 KB on Zen 5), and 8 rows of a 2048 x 5632
 * weight took 2.6x the time of a 5632 x 2048 one from memory (docs/PERFORMANCE.md, "q4_k down projection
 * at 8 rows"). Chunks of 11 super-blocks (26 KB) came out at least as fast as 8 or 6.
 */
#define KQ_X_L1_BYTES (32 * 1024)
/* Output columns whose accumulators rest in memory between the passes over x's chunks. */
#define KQ_SPAN 16
/* Columns ahead that a chunked pass prefetches the weight: one column's chunk is too short to hide memory. */
#define KQ_AHEAD_COLUMNS 2
/* Floats a column's resting accumulators take: a row's 16 lanes and a pair of rows' 16 lanes of mins. */
#define KQ_STATE_FLOATS (16 * (KQ_MAX_ROWS + KQ_MAX_ROWS / 2))

typedef float kq_f8 __attribute__((vector_size(32)));
typedef int32_t kq_i8 __attribute__((vector_size(32)));
typedef uint8_t kq_u8x8 __attribute__((vector_size(8)));

static inline __attribute__((always_inline)) uint16_t kq_half_bits(const uint8_t *p) {
    uint16_t bits;
    memcpy(&bits, p, sizeof bits);
    return bits;
}

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
    uint32_t w[3]; /* three loads: one copy of the 12 bytes went through the stack (stores, then loads) */
    memcpy(&w[0], block + 4, 4);
    memcpy(&w[1], block + 8, 4);
    memcpy(&w[2], block + 12, 4);
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

#include "kquant_input.h"

typedef float kq_f4 __attribute__((vector_size(16)));

static inline __attribute__((always_inline)) float kq_hsum(kq_f8 v) {
    kq_f4 h = __builtin_shufflevector(v, v, 0, 1, 2, 3) + __builtin_shufflevector(v, v, 4, 5, 6, 7);
    h += __builtin_shufflevector(h, h, 2, 3, 0, 1);
    return h[0] + h[1];
}

/* ---- one super-block's scaled integer sums, sum_j sc_j * (q_j . xq_j), for each row of x ---- */

#include "kquant_sums.h"

#define KQ_ARGS const kq_input q, const uint8_t *codes, const float *bias, float *out, int out_features, int from, int to

/*
 * One output column n over super-blocks [b0, b1) of its weight row: its accumulators start at zero where
 * b0 is 0, else from state (KQ_STATE_FLOATS floats); they end in out where b1 is the row's last block, else
 * in state. The weight is prefetched `ahead` bytes on. Resting in memory between chunks changes no lane's
 * sums or their order, so a column's output is the same however x is chunked.
 */
#define KQ_COLUMN_ARGS                                                                                             \
    const kq_input q, const uint8_t *codes, const float *bias, float *out, int out_features, int n, int b0, int b1, \
            float *state, int ahead, int whole

/*
 * Prefetches the weight `ahead` bytes past a super-block: one line where the weight is read in order (the
 * hardware prefetcher fetching the rest of the stream), all three lines of the block where `whole` (a
 * chunked pass, whose runs of a row are too short for the hardware prefetcher: 0.79-0.85 -> 0.67-0.70 ms
 * for 8 rows of 2048 x 5632 from memory, one core, before x was aligned).
 */
static inline __attribute__((always_inline)) void kq_prefetch(const uint8_t *block, int ahead, int whole) {
    __builtin_prefetch(block + ahead);
    if (whole) {
        __builtin_prefetch(block + ahead + 64);
        __builtin_prefetch(block + ahead + 128);
    }
}

/*
 * Outputs [from, to) for `rows` rows of x by COLUMN (a KQ_COLUMN_ARGS function): each column over all of x
 * where it fits L1 (q.chunk == q.blocks), else in spans of KQ_SPAN columns, each span passed over x's
 * chunks of q.chunk super-blocks in turn, every column's accumulators resting in state between, and the
 * weight prefetched KQ_AHEAD_COLUMNS columns on at the same super-block.
 */
#define KQ_COLUMNS(COLUMN, rows)                                                                                   \
    do {                                                                                                           \
        if (q.chunk >= q.blocks) {                                                                                 \
            for (int n = from; n < to; n++) {                                                                      \
                COLUMN(rows, q, codes, bias, out, out_features, n, 0, q.blocks, NULL, KQ_PREFETCH_BYTES, 0);       \
            }                                                                                                      \
            break;                                                                                                 \
        }                                                                                                          \
        float state[KQ_SPAN * KQ_STATE_FLOATS] __attribute__((aligned(64)));                                       \
        for (int p = from; p < to; p += KQ_SPAN) {                                                                 \
            int end = to - p < KQ_SPAN ? to : p + KQ_SPAN;                                                         \
            for (int b = 0; b < q.blocks; b += q.chunk) {                                                          \
                int last = q.blocks - b < q.chunk ? q.blocks : b + q.chunk;                                        \
                for (int n = p; n < end; n++) {                                                                    \
                    COLUMN(rows, q, codes, bias, out, out_features, n, b, last, state + (n - p) * KQ_STATE_FLOATS, \
                            KQ_AHEAD_COLUMNS * q.blocks * KQ_BYTES, 1);                                            \
                }                                                                                                  \
            }                                                                                                      \
        }                                                                                                          \
    } while (0)

/*
 * Output n for `rows` rows of x: each super-block read once for all rows by kq_sums (its scaled integer
 * sums per row in 8 int32 lanes), then per row one conversion and fused multiply-add by d * xd, and the
 * mins' term (dmin * m_j) * (xd * sum(xq_j)) taken off the same 8 float lanes.
 */
static inline __attribute__((always_inline)) void kq_column8(int rows, KQ_COLUMN_ARGS) {
    const int blocks = q.blocks;
    kq_f8 acc[KQ_MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = b0 == 0 ? (kq_f8){0} : kq_load_f8(state + 8 * r);
    }
    const uint8_t *block = codes + ((size_t)n * blocks + b0) * KQ_BYTES;
    const int8_t *xq = q.codes + (size_t)b0 * rows * KQ_WEIGHTS;
    const float *xd = q.scales + (size_t)b0 * rows, *xs = q.sums + (size_t)b0 * rows * KQ_SUBS;
    for (int b = b0; b < b1; b++, block += KQ_BYTES) {
        kq_prefetch(block, ahead, whole);
        uint64_t sc, m;
        kq_sub_scales(block, &sc, &m);
        kq_i8 sums[KQ_MAX_ROWS];
        kq_sums(rows, sums, block + 16, sc, xq);
        float d = kq_half(block);
        kq_f8 dm = kq_bytes_to_f8(m) * kq_half(block + 2);
        for (int r = 0; r < rows; r++) {
            acc[r] = __builtin_convertvector(sums[r], kq_f8) * (d * xd[r]) + acc[r];
            acc[r] -= dm * kq_load_f8(xs + r * KQ_SUBS);
        }
        xq += rows * KQ_WEIGHTS;
        xd += rows;
        xs += rows * KQ_SUBS;
    }
    if (b1 < blocks) {
        memcpy(state, acc, (size_t)rows * sizeof acc[0]);
        return;
    }
    for (int r = 0; r < rows; r++) {
        out[(size_t)r * out_features + n] = kq_hsum(acc[r]) + (bias ? bias[n] : 0.0f);
    }
}

static inline __attribute__((always_inline)) void kq_columns8(int rows, KQ_ARGS) {
    KQ_COLUMNS(kq_column8, rows);
}

#if defined(__AVX512F__)
/*
 * AVX-512 with AVX512_VNNI (checked at run time), x in KQ_X_T512. A super-block's 128 code bytes (2 loads)
 * are transposed once for all rows into 4 vectors, vector k's dword lane l holding dword 2k + l % 2 of
 * sub-block l / 2 (one two-source dword permutation, a variable shift that brings the odd sub-blocks' high
 * nibbles down, a mask), so each row's 4 vpdpbusd (codes unsigned, x signed) add into one register that
 * ends with sub-block j's exact sum in lanes 2j and 2j + 1, and the float32 step runs once a block and row
 * rather than once a sub-block: one conversion and fused multiply-add by the lanes' d * sc_j times xd. The
 * mins' term takes one fused multiply-add a block for two rows: the block's dmin * m_j twice over (16 lanes)
 * against the two rows' sums (x's sums per 32 times xd, 8 a row, so two rows are one load), into a pair's
 * accumulator whose halves are each row's, so a row's lanes see the same operations with or without a row
 * beside it. 16 float lanes a row and output, and 8 of the mins', summed at the end.
 */
typedef struct {
    __m512i codes[4]; /* the transposed codes */
    __m512 steps;     /* lanes 2j and 2j + 1: d * sc_j */
    __m512 mins;      /* lanes j and 8 + j: dmin * m_j */
} kq_t512_block;

static inline KQ_VNNI_TARGET __attribute__((always_inline)) void kq_t512_load(
        const uint8_t *block, int ahead, int whole, kq_t512_block *t) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    /* the odd sub-blocks' lanes take the high nibbles */
    const __m512i shifts = _mm512_set_epi32(4, 4, 0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4, 0, 0);
    /* lane l of vector 0: dword l % 2 of sub-block l / 2, in the 32 dwords of the two loads */
    const __m512i first = _mm512_set_epi32(25, 24, 25, 24, 17, 16, 17, 16, 9, 8, 9, 8, 1, 0, 1, 0);
    kq_prefetch(block, ahead, whole);
    __m512i lo = _mm512_loadu_si512((const void *)(block + 16));
    __m512i hi = _mm512_loadu_si512((const void *)(block + 80));
    for (int k = 0; k < 4; k++) {
        __m512i dwords = _mm512_permutex2var_epi32(lo, _mm512_add_epi32(first, _mm512_set1_epi32(2 * k)), hi);
        t->codes[k] = _mm512_and_si512(_mm512_srlv_epi32(dwords, shifts), nibble);
    }
    uint64_t sc, m;
    kq_sub_scales(block, &sc, &m);
    __m128i scales = _mm_cvtsi64_si128((long long)sc), mins = _mm_set1_epi64x((long long)m);
    __m512 halves = _mm512_cvtph_ps(_mm256_set1_epi32((int)(kq_half_bits(block) | (uint32_t)kq_half_bits(block + 2) << 16)));
    t->steps = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_unpacklo_epi8(scales, scales))),
            _mm512_moveldup_ps(halves));
    t->mins = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(mins)), _mm512_movehdup_ps(halves));
}

/* The 8 lanes of a pair's mins accumulator that are row r's (the low half for an even r). */
static inline KQ_VNNI_TARGET __attribute__((always_inline)) __m256 kq_t512_row_mins(__m512 pair, int r) {
    return r % 2 == 0 ? _mm512_castps512_ps256(pair) : _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(pair), 1));
}

/* Output n for `rows` rows (KQ_COLUMN_ARGS). */
static inline KQ_VNNI_TARGET __attribute__((always_inline)) void kq_t512(int rows, KQ_COLUMN_ARGS) {
    const int blocks = q.blocks, pairs = (rows + 1) / 2;
    /* the last pair's second row, where rows is odd, is not read: zeros */
    const __mmask16 last = rows % 2 == 0 ? (__mmask16)0xFFFF : (__mmask16)0x00FF;
    __m512 acc[KQ_MAX_ROWS], mins[KQ_MAX_ROWS / 2];
    for (int r = 0; r < rows; r++) {
        acc[r] = b0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(state + 16 * r);
    }
    for (int p = 0; p < pairs; p++) {
        mins[p] = b0 == 0 ? _mm512_setzero_ps() : _mm512_load_ps(state + 16 * (KQ_MAX_ROWS + p));
    }
    const uint8_t *block = codes + ((size_t)n * blocks + b0) * KQ_BYTES;
    const int8_t *xq = q.codes + (size_t)b0 * rows * KQ_WEIGHTS;
    const float *xd = q.scales + (size_t)b0 * rows, *xs = q.sums + (size_t)b0 * rows * KQ_SUBS;
    for (int b = b0; b < b1; b++, block += KQ_BYTES) {
        kq_t512_block t;
        kq_t512_load(block, ahead, whole, &t);
        for (int r = 0; r < rows; r++) {
            const __m512i *xr = (const __m512i *)(xq + r * KQ_WEIGHTS);
            __m512i s = _mm512_setzero_si512();
            for (int k = 0; k < 4; k++) {
                s = _mm512_dpbusd_epi32(s, t.codes[k], _mm512_loadu_si512(xr + k));
            }
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s), _mm512_mul_ps(t.steps, _mm512_set1_ps(xd[r])), acc[r]);
        }
        for (int p = 0; p < pairs; p++) {
            __m512 sums = p == pairs - 1 ? _mm512_maskz_loadu_ps(last, xs + p * 2 * KQ_SUBS)
                                         : _mm512_loadu_ps(xs + p * 2 * KQ_SUBS);
            mins[p] = _mm512_fmadd_ps(t.mins, sums, mins[p]);
        }
        xq += rows * KQ_WEIGHTS;
        xd += rows;
        xs += rows * KQ_SUBS;
    }
    if (b1 < blocks) {
        for (int r = 0; r < rows; r++) {
            _mm512_store_ps(state + 16 * r, acc[r]);
        }
        for (int p = 0; p < pairs; p++) {
            _mm512_store_ps(state + 16 * (KQ_MAX_ROWS + p), mins[p]);
        }
        return;
    }
    for (int r = 0; r < rows; r++) {
        __m256 m = kq_t512_row_mins(mins[r / 2], r);
        __m128 m4 = _mm_add_ps(_mm256_castps256_ps128(m), _mm256_extractf128_ps(m, 1));
        m4 = _mm_add_ps(m4, _mm_movehl_ps(m4, m4));
        float row_mins = _mm_cvtss_f32(_mm_add_ss(m4, _mm_movehdup_ps(m4)));
        out[(size_t)r * out_features + n] = (_mm512_reduce_add_ps(acc[r]) - row_mins) + (bias ? bias[n] : 0.0f);
    }
}

/*
 * One output a pass at every row count. Two outputs a pass at one row (each load of x serving both) was faster
 * with the weight in L3 (native bench: 0.16 -> 0.13-0.15 ms) but slower in the model, whose weights stream from
 * memory: TinyLlama-1.1B q4_k decode 0.81-0.86x of one output a pass (scripts/bench-kernels-ab.sh, session 17).
 */
static inline KQ_VNNI_TARGET __attribute__((always_inline)) void kq_columns16(int rows, KQ_ARGS) {
    KQ_COLUMNS(kq_t512, rows);
}
#endif

#define KQ_ROWS(NAME, ATTR, BODY, R) \
    static ATTR void NAME##_##R(KQ_ARGS) { BODY(R, q, codes, bias, out, out_features, from, to); }

#define KQ_CASE(NAME, R)                                                                                            \
    case R:                                                                                                         \
        NAME##_##R(q, codes, bias, out, out_features, from, to);                                                    \
        break;

/* NAME(rows, ...): BODY with the row count fixed (1 to 8), so its loops over the rows unroll. */
#define KQ_DEFINE(NAME, ATTR, BODY)                                                                     \
    KQ_ROWS(NAME, ATTR, BODY, 1)                                                                        \
    KQ_ROWS(NAME, ATTR, BODY, 2)                                                                        \
    KQ_ROWS(NAME, ATTR, BODY, 3)                                                                        \
    KQ_ROWS(NAME, ATTR, BODY, 4)                                                                        \
    KQ_ROWS(NAME, ATTR, BODY, 5)                                                                        \
    KQ_ROWS(NAME, ATTR, BODY, 6)                                                                        \
    KQ_ROWS(NAME, ATTR, BODY, 7)                                                                        \
    KQ_ROWS(NAME, ATTR, BODY, 8)                                                                        \
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

KQ_DEFINE(kq_columns, , kq_columns8)
#if defined(__AVX512F__)
KQ_DEFINE(kq_columns_vnni, KQ_VNNI_TARGET __attribute__((flatten)), kq_columns16)

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

/* The layout of x the kernel of this CPU reads. */
static int kq_x_layout(void) {
    return kq_vnni() ? KQ_X_T512 : KQ_X_LAYOUT;
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
    int tiles = (rows + KQ_MAX_ROWS - 1) / KQ_MAX_ROWS;
    size_t tile_bytes = kq_lay_out(NULL, rows < KQ_MAX_ROWS ? rows : KQ_MAX_ROWS, in, NULL);
    kq_input *q = malloc((size_t)tiles * sizeof *q);
    char *memory = malloc((size_t)tiles * tile_bytes);
    if (q == NULL || memory == NULL) {
        fail(env, "q4_k product: no memory for the input's int8 form");
    } else {
        for (int t = 0; t < tiles; t++) {
            int count = rows - t * KQ_MAX_ROWS < KQ_MAX_ROWS ? rows - t * KQ_MAX_ROWS : KQ_MAX_ROWS;
            kq_lay_out(memory + (size_t)t * tile_bytes, count, in, &q[t]);
            kq_quantize(x + (size_t)t * KQ_MAX_ROWS * in, count, in, kq_x_layout(), &q[t]);
        }
        int panel = tiles == 1 ? to - from : KQ_PANEL;
        for (int p = from; p < to; p += panel) {
            int end = to - p < panel ? to : p + panel;
            for (int t = 0; t < tiles; t++) {
                int count = rows - t * KQ_MAX_ROWS < KQ_MAX_ROWS ? rows - t * KQ_MAX_ROWS : KQ_MAX_ROWS;
                kq_run(count, q[t], codes, bias, out + (size_t)t * KQ_MAX_ROWS * out_features, out_features, p, end);
            }
        }
    }
    free(memory);
    free(q);
}

/*
 * Bytes of the prepared form of `rows` rows (1 to 8, a decode step) of `in` inputs (a multiple of 32): x's
 * int8 form made once for a hand-over's calls (prepare), each core's call reading it (multiplyPrepared)
 * instead of quantizing x again; 0 for other counts.
 */
JNIEXPORT jint JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_preparedBytes(
        JNIEnv *env, jclass cls, jint rows, jint in) {
    (void)env;
    (void)cls;
    if (rows < 1 || rows > KQ_MAX_ROWS || in < GROUP || in % GROUP != 0) {
        return 0;
    }
    size_t bytes = kq_lay_out(NULL, rows, in, NULL);
    return bytes > 0x7fffffff ? 0 : (jint)bytes;
}

/* x (rows, in) into its prepared form in form (at least preparedBytes' size), for multiplyPrepared's calls. */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_prepare(
        JNIEnv *env, jclass cls, jobject x_buffer, jobject form_buffer, jint rows, jint in) {
    const float *x = (const float *)(*env)->GetDirectBufferAddress(env, x_buffer);
    void *form = (*env)->GetDirectBufferAddress(env, form_buffer);
    if (x == NULL || form == NULL) {
        fail(env, "q4_k product: an array's memory is not reachable as a direct buffer");
        return;
    }
    jint bytes = Java_io_github_djlllmzoo_cpu_KQuantProduct_preparedBytes(env, cls, rows, in);
    if (bytes == 0 || (*env)->GetDirectBufferCapacity(env, form_buffer) < bytes) {
        fail(env, "q4_k product: a prepared form takes 1 to 8 rows, in a multiple of 32, and a buffer of its size");
        return;
    }
    kq_input q;
    kq_lay_out(form, rows, in, &q);
    kq_quantize(x, rows, in, kq_x_layout(), &q);
}

/*
 * out[:, from:to] = x @ weight^T + bias with x in the form prepare made of it for the same rows and in:
 * bit for bit multiply's outputs.
 */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_multiplyPrepared(
        JNIEnv *env, jclass cls, jobject form_buffer, jobject codes_buffer, jobject bias_buffer, jobject out_buffer,
        jint rows, jint in, jint out_features, jint from, jint to) {
    (void)cls;
    void *form = (*env)->GetDirectBufferAddress(env, form_buffer);
    const uint8_t *codes = (const uint8_t *)(*env)->GetDirectBufferAddress(env, codes_buffer);
    const float *bias = bias_buffer == NULL ? NULL : (const float *)(*env)->GetDirectBufferAddress(env, bias_buffer);
    float *out = (float *)(*env)->GetDirectBufferAddress(env, out_buffer);
    if (form == NULL || codes == NULL || out == NULL || (bias_buffer != NULL && bias == NULL)) {
        fail(env, "q4_k product: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (rows < 1 || rows > KQ_MAX_ROWS || in < GROUP || in % GROUP != 0) {
        fail(env, "q4_k product: a prepared product takes 1 to 8 rows, in a multiple of 32");
        return;
    }
    kq_input q;
    kq_lay_out(form, rows, in, &q);
    kq_run(rows, q, codes, bias, out, out_features, from, to);
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
