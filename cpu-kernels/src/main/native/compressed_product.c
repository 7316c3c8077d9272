/*
 * The products of 1 to 8 rows of x (a decode step) with a compressed weight, reading each weight
 * code once for all rows with AVX-512: out = x @ weight^T + bias, weight (out, in) held as
 *   format 0: bfloat16 bits (widened by a 16-bit shift),
 *   format 1: IEEE half bits (widened by vcvtph2ps),
 *   format 2: int8 codes with one float16 scale per 32 inputs of an output (llama.cpp's Q8_0),
 * each 16 codes widened to float32 in registers (int8 times its scale) and multiplied into float32
 * accumulators, so the product is that of the weight widened exactly to float32
 * (io.github.djlllmzoo.blocks.CompressedWeight#toFloatArray) up to the order of the sums.
 *
 * One weight row at a time, so each core reads its columns of the weight as one sequential stream
 * (two rows at a time interleave two streams 2 to 6 KB apart, which the hardware prefetcher follows
 * worse, whatever the rows of x: docs/PERFORMANCE.md, "One weight stream per core"). 32 inputs per
 * step, prefetched ahead; each output's 16 lanes are summed at the end of its row. Called by io.github.djlllmzoo.cpu.CompressedProduct with direct buffers it
 * has checked: x float32 (rows, in) contiguous, in a multiple of 32, the sizes below.
 *
 * Each kernel reads x in a form with each 32 (int8: 64) inputs of every row side by side, so a step
 * over the weight reads one run of x rather than rows lines 4 KB apart that share an L1 set. Where
 * the rows of x in that form outgrow X_TILE_BYTES (8 rows of a 2048-wide input), each TILE_OUTPUTS
 * outputs take the inputs a tile at a time with their sums carried between tiles, so x stays in L1
 * instead of coming from L2 for every output (docs/PERFORMANCE.md, "Batch 8 against batch 1: rows of
 * x in L1"). Either way each output's sums go in the same order, so a product is bit for bit what
 * it is untiled.
 *
 * Where the CPU has them (checked at run time, compressed_product_features), two products skip the
 * widening and multiply the codes themselves, as llama.cpp's Q8_0 and BF16 dot products do:
 *   int8 with AVX512_VNNI: each row of x is quantized once per product to int8 per group of 32
 *     (scale max|x| / 127, the weight's scheme), and vpdpbusd sums 4 code products per lane in int32,
 *     x's code + 128 (unsigned) times the weight code, from -128 times the weight codes' sum (one
 *     vpdpbusd per weight row, shared by all rows of x); each group's int32 sum times both scales goes
 *     into float32 accumulators (from 5 rows each 256 inputs of the weight are transposed so that a
 *     group's sum ends in two lanes, and the float32 step runs once per 4 dot products). The result is
 *     the product of the weight with x rounded to its int8 grid (an error of at most max|x| / 254 per
 *     element of a group);
 *   bfloat16 with AVX512_BF16, for 1 or 2 rows of x (BF16_DOT_ROWS): x is split into bfloat16 hi + lo
 *     (hi = x rounded, lo = the rest rounded: 16 bits of x's 24) and vdpbf16ps multiplies the weight
 *     codes by both, so the result is the product with x to about 2^-17 of each element.
 */
#include <immintrin.h>
#include <jni.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "compressed_format.h"

#define MAX_ROWS 8
/* Bytes ahead of the current codes that the weight is prefetched. */
#define PREFETCH_BYTES 4096
/* Bytes of the rows of x (in the form a kernel reads) that a pass over the weight keeps in L1. */
#define X_TILE_BYTES 24576
/* Outputs whose sums one pass over a tile of the inputs carries (tiled products only). */
#define TILE_OUTPUTS 32

/* The most rows a bfloat16 product takes vdpbf16ps for: x's two halves cost two loads and two dot
   products a row per 32 weights, against the widening kernel's two fused multiply-adds on one
   load of x, so from 3 rows the widening (and exact) kernel is the faster. */
#define BF16_DOT_ROWS 2

/* The CPU features compressed_product_features reports (CompressedProduct's constants). */
enum { FEATURE_VNNI = 1, FEATURE_BF16 = 2 };

/* The dot-product bit (CompressedProduct.VNNI_BLOCKS) that lets int8 products of VNNI_BLOCK_ROWS or
   more rows take the transposed-block kernel. */
#define VNNI_BLOCKS 4

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

/* 16 codes from index on, widened to float32 (int8 not yet scaled). */
static inline __attribute__((always_inline)) __m512 widen16(const void *codes, size_t index, int format) {
    if (format == BFLOAT16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)((const uint16_t *)codes + index));
        return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
    }
    if (format == FLOAT16) {
        return _mm512_cvtph_ps(_mm256_loadu_si256((const __m256i *)((const uint16_t *)codes + index)));
    }
    __m128i b = _mm_loadu_si128((const __m128i *)((const int8_t *)codes + index));
    return _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(b));
}

/*
 * The end of an output's run of inputs for rows of x: each row's 16 lanes summed into out (last,
 * with the bias) or put back into carry for the next run.
 */
static inline __attribute__((always_inline)) void finish_rows(
        const __m512 *acc, int rows, int last, const float *bias, float *out, int out_features, int n, __m512 *carry) {
    for (int r = 0; r < rows; r++) {
        if (last) {
            out[(size_t)r * out_features + n] = _mm512_reduce_add_ps(acc[r]) + (bias ? bias[n] : 0.0f);
        } else {
            carry[r] = acc[r];
        }
    }
}

/*
 * The inputs [k0, k1) of output n for rows of x: each row's 16 lanes start at 0 (first) or at its
 * sums so far in carry, and are summed into out (last) or put back into carry. An output's sums go
 * in the same order however its inputs are tiled.
 */
static inline __attribute__((always_inline)) void weight_rows(
        const float *x, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int n, int k0, int k1, int first, int last, __m512 *carry, int format) {
    const int element = format == INT8 ? 1 : 2;
    const int groups = in / GROUP;
    __m512 acc[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = first ? _mm512_setzero_ps() : carry[r];
    }
    for (int k = k0; k < k1; k += GROUP) {
        size_t base = (size_t)n * in + k;
        _mm_prefetch((const char *)codes + base * element + PREFETCH_BYTES, _MM_HINT_T0);
        __m512 lo = widen16(codes, base, format);
        __m512 hi = widen16(codes, base + 16, format);
        if (format == INT8) {
            __m512 s = broadcast_scale(scales + (size_t)n * groups + k / GROUP);
            lo = _mm512_mul_ps(lo, s);
            hi = _mm512_mul_ps(hi, s);
        }
        for (int r = 0; r < rows; r++) {
            const float *xr = x + ((size_t)(k / GROUP) * rows + r) * GROUP;
            acc[r] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(xr), acc[r]);
            acc[r] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(xr + 16), acc[r]);
        }
    }
    finish_rows(acc, rows, last, bias, out, out_features, n, carry);
}

/*
 * Inputs per tile where rows of x, input_bytes a row per input, outgrow X_TILE_BYTES: a multiple of
 * 64 (whole int8 chunks), or all of in where they fit.
 */
static inline int tile_inputs(int rows, int in, int input_bytes) {
    int tile = X_TILE_BYTES / (rows * input_bytes) / 64 * 64;
    return tile < 64 ? 64 : tile >= in ? in : tile;
}

/*
 * Outputs [from, to) by CALL(k0, k1, first, last, carry) for output n. Where the rows of x outgrow
 * L1 (the tile is less than in), each TILE_OUTPUTS outputs take the inputs a tile at a time, their
 * sums carried between tiles, so x is read from L1 rather than again from L2 for every output.
 */
#define TILED(CALL, tile)                                                                    \
    do {                                                                                     \
        if ((tile) >= in) {                                                                  \
            for (n = from; n < to; n++) {                                                    \
                CALL(0, in, 1, 1, carry);                                                    \
            }                                                                                \
            break;                                                                           \
        }                                                                                    \
        for (int n0 = from; n0 < to; n0 += TILE_OUTPUTS) {                                   \
            int n1 = n0 + TILE_OUTPUTS < to ? n0 + TILE_OUTPUTS : to;                        \
            for (int k0 = 0; k0 < in; k0 += (tile)) {                                        \
                int k1 = k0 + (tile) < in ? k0 + (tile) : in;                                \
                for (n = n0; n < n1; n++) {                                                  \
                    CALL(k0, k1, k0 == 0, k1 == in, carry + (size_t)(n - n0) * MAX_ROWS);    \
                }                                                                            \
            }                                                                                \
        }                                                                                    \
    } while (0)

#define WIDEN_CALL(k0, k1, first, last, at) \
    weight_rows(x, codes, scales, bias, out, rows, in, out_features, n, k0, k1, first, last, at, format)

static inline __attribute__((always_inline)) void columns(
        const float *x, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int from, int to, int format) {
    __m512 carry[TILE_OUTPUTS * MAX_ROWS];
    int n;
    TILED(WIDEN_CALL, tile_inputs(rows, in, sizeof(float)));
}

/* The kernel for a fixed format and number of rows, so the loops over both unroll. */
#define FORMAT_ROWS(F, R)                                                                    \
    case R:                                                                                  \
        columns(x, codes, scales, bias, out, R, in, out_features, from, to, F);              \
        break;

#define BY_ROWS(F)                                                                           \
    switch (rows) {                                                                          \
        FORMAT_ROWS(F, 1)                                                                    \
        FORMAT_ROWS(F, 2)                                                                    \
        FORMAT_ROWS(F, 3)                                                                    \
        FORMAT_ROWS(F, 4)                                                                    \
        FORMAT_ROWS(F, 5)                                                                    \
        FORMAT_ROWS(F, 6)                                                                    \
        FORMAT_ROWS(F, 7)                                                                    \
        FORMAT_ROWS(F, 8)                                                                    \
        default:                                                                             \
            break;                                                                           \
    }


/* ---- int8 x int8 with AVX512_VNNI ---- */

/* Rows of x quantized per group of 32: each code q in [-127, 127] held as the unsigned q + 128 that
   vpdpbusd takes, and each 64 inputs' two group scales as a lane pattern (group 2c in lanes 0-7, group
   2c+1 in lanes 8-15). A ragged last 64 is padded with code 0. */
typedef struct {
    uint8_t *offset_codes; /* (chunks, rows, 64): each 64 inputs of every row side by side */
    float *scales;         /* (chunks, rows, 16) */
    int chunks;
} QuantizedRows;

static VNNI_TARGET int quantize_rows(const float *x, int rows, int in, QuantizedRows *q) {
    q->chunks = (in + 63) / 64;
    size_t cells = (size_t)rows * q->chunks;
    q->offset_codes = aligned_alloc(64, cells * 64);
    q->scales = aligned_alloc(64, cells * 16 * sizeof(float));
    if (q->offset_codes == NULL || q->scales == NULL) {
        return 0;
    }
    for (int r = 0; r < rows; r++) {
        for (int c = 0; c < q->chunks; c++) {
            size_t cell = (size_t)c * rows + r;
            __m512i codes = _mm512_setzero_si512();
            float *pattern = q->scales + cell * 16;
            for (int h = 0; h < 2; h++) {
                int k = c * 64 + h * GROUP;
                float d = 0.0f;
                if (k < in) {
                    codes = _mm512_inserti64x4(codes, quantize_group(x + (size_t)r * in + k, &d), h);
                }
                for (int l = 0; l < 8; l++) {
                    pattern[h * 8 + l] = d;
                }
            }
            _mm512_store_si512((__m512i *)(q->offset_codes + cell * 64),
                    _mm512_add_epi8(codes, _mm512_set1_epi8((char)0x80)));
        }
    }
    return 1;
}

static void free_quantized(QuantizedRows *q) {
    free(q->offset_codes);
    free(q->scales);
}

/* The inputs [k0, k1) of output n for the quantized rows, carried as weight_rows carries them. */
static inline __attribute__((always_inline)) VNNI_TARGET void vnni_weight_rows(
        const QuantizedRows *q, const int8_t *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int n, int k0, int k1, int first, int last, __m512 *carry) {
    const int groups = in / GROUP;
    const __m512i zero = _mm512_setzero_si512();
    const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i offset = _mm512_set1_epi8((char)0x80);
    __m512 acc[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = first ? _mm512_setzero_ps() : carry[r];
    }
    for (int c = k0 / 64; c * 64 < k1; c++) {
        int k = c * 64;
        int whole = k + 64 <= in;
        const int8_t *w_at = codes + (size_t)n * in + k;
        const uint16_t *s_at = scales + (size_t)n * groups + k / GROUP;
        _mm_prefetch((const char *)w_at + PREFETCH_BYTES, _MM_HINT_T0);
        __m512i w;
        __m512 s;
        if (whole) {
            w = _mm512_loadu_si512(w_at);
            s = widen_scales(s_at, 2);
        } else {
            w = _mm512_maskz_loadu_epi8(0xffffffffULL, w_at);
            s = widen_scales(s_at, 1);
        }
        __m512 weight_scales = _mm512_permutexvar_ps(halves, s);
        /* sum (q + 128) w - 128 sum w = sum q w: start each row's sums at -128 sum w. */
        __m512i correction = _mm512_dpbusd_epi32(zero, offset, _mm512_sub_epi8(zero, w));
        for (int r = 0; r < rows; r++) {
            size_t cell = (size_t)c * rows + r;
            __m512i sums = _mm512_dpbusd_epi32(
                    correction, _mm512_load_si512((const __m512i *)(q->offset_codes + cell * 64)), w);
            __m512 both = _mm512_mul_ps(weight_scales, _mm512_load_ps(q->scales + cell * 16));
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), both, acc[r]);
        }
    }
    finish_rows(acc, rows, last, bias, out, out_features, n, carry);
}

/* Calls NAME_rows(..., R) with the row count R fixed, so the loops over the rows unroll. */
#define ROWS_CASE(CALL, R)                                                                   \
    case R:                                                                                  \
        CALL(R);                                                                             \
        break;

#define SWITCH_ROWS(CALL)                                                                     \
    switch (rows) {                                                                          \
        ROWS_CASE(CALL, 1)                                                                   \
        ROWS_CASE(CALL, 2)                                                                   \
        ROWS_CASE(CALL, 3)                                                                   \
        ROWS_CASE(CALL, 4)                                                                   \
        ROWS_CASE(CALL, 5)                                                                   \
        ROWS_CASE(CALL, 6)                                                                   \
        ROWS_CASE(CALL, 7)                                                                   \
        ROWS_CASE(CALL, 8)                                                                   \
        default:                                                                             \
            break;                                                                           \
    }

#define VNNI_CALL(k0, k1, first, last, at) \
    vnni_weight_rows(q, codes, scales, bias, out, rows, in, out_features, n, k0, k1, first, last, at)

/* An int8 input takes its code and, per 64, 64 bytes of scales: 2 bytes a row. */
static inline __attribute__((always_inline)) VNNI_TARGET void vnni_columns_rows(
        const QuantizedRows *q, const int8_t *codes, const uint16_t *scales, const float *bias, float *out,
        int in, int out_features, int from, int to, int rows) {
    __m512 carry[TILE_OUTPUTS * MAX_ROWS];
    int n;
    TILED(VNNI_CALL, tile_inputs(rows, in, 2));
}

#define VNNI_ROWS(R) vnni_columns_rows(q, codes, scales, bias, out, in, out_features, from, to, R)

static VNNI_TARGET void vnni_columns(
        const QuantizedRows *q, const int8_t *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int from, int to) {
    SWITCH_ROWS(VNNI_ROWS)
}

/* ---- int8 x int8 with AVX512_VNNI, 5 to 8 rows: each group's sum in two lanes ---- */

/*
 * From VNNI_BLOCK_ROWS rows, the per-chunk kernel above spends more on each row's float32 step
 * (convert, scale, add: one per vpdpbusd, since its 16 lanes hold partial sums of two groups) than
 * on the products, and that step grows with the rows while the weight's load does not. Here each
 * BLOCK_INPUTS inputs (8 groups, 4 chunks) of the weight are transposed in registers, once for all
 * rows, so that dot product j of the 4 puts group g's bytes 8j to 8j+7 into lanes 2g and 2g+1: the
 * 4 dot products of a row add into one register that ends with each group's exact sum in two
 * lanes, and the float32 step runs once per 4 chunks. x is transposed the same way when it is
 * quantized. The weight code w goes in as the unsigned w + 128 and x's code as the signed operand,
 * so each row's sums start at -128 times its own codes' sums (computed with x, once per product).
 * The integer sums are exact, so the result differs from the per-chunk kernel's only in the order
 * of the float32 sums. At 3 and 4 rows it measured no faster (one core, a llama-110m step's products:
 * 3 rows 8.35 / 8.54 ms against 8.35 / 8.94, 4 rows 10.0 / 10.9 against 9.4 / 9.1; 5 rows 7.9
 * against 10.2, 8 rows 10.9 against 14.1), so those keep the per-chunk kernel.
 */
#define VNNI_BLOCK_ROWS 5
#define BLOCK_CHUNKS 4
#define BLOCK_INPUTS (BLOCK_CHUNKS * 64)

typedef struct {
    int8_t *codes;         /* (blocks, rows, 4, 64): x's codes, each block transposed as the weight's */
    int32_t *corrections;  /* (blocks, rows, 16): -128 times each lane's sum of x's codes */
    float *scales;         /* (blocks, rows, 16): group g's scale in lanes 2g and 2g+1 */
    int blocks;
} BlockedRows;

/* A block's 4 chunks (group 2c in qwords 0-3 of chunk c, group 2c+1 in qwords 4-7) as 4 vectors whose
   qword g is group g's qword j, j the vector's index. */
static inline __attribute__((always_inline)) VNNI_TARGET void transpose_block(const __m512i chunk[4], __m512i t[4]) {
    const __m512i first = _mm512_set_epi64(13, 9, 5, 1, 12, 8, 4, 0);
    const __m512i second = _mm512_set_epi64(15, 11, 7, 3, 14, 10, 6, 2);
    __m512i a01 = _mm512_permutex2var_epi64(chunk[0], first, chunk[1]);
    __m512i a23 = _mm512_permutex2var_epi64(chunk[0], second, chunk[1]);
    __m512i b01 = _mm512_permutex2var_epi64(chunk[2], first, chunk[3]);
    __m512i b23 = _mm512_permutex2var_epi64(chunk[2], second, chunk[3]);
    t[0] = _mm512_shuffle_i64x2(a01, b01, _MM_SHUFFLE(1, 0, 1, 0));
    t[1] = _mm512_shuffle_i64x2(a01, b01, _MM_SHUFFLE(3, 2, 3, 2));
    t[2] = _mm512_shuffle_i64x2(a23, b23, _MM_SHUFFLE(1, 0, 1, 0));
    t[3] = _mm512_shuffle_i64x2(a23, b23, _MM_SHUFFLE(3, 2, 3, 2));
}

/* Lanes 2g and 2g+1 of the result hold lane g of values, g from 0 to 7 (a block's groups). */
static inline __attribute__((always_inline)) VNNI_TARGET __m512 pair_lanes(__m512 values) {
    const __m512i pairs = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    return _mm512_permutexvar_ps(pairs, values);
}

static VNNI_TARGET int quantize_blocked(const float *x, int rows, int in, BlockedRows *q) {
    q->blocks = (in + BLOCK_INPUTS - 1) / BLOCK_INPUTS;
    size_t cells = (size_t)rows * q->blocks;
    q->codes = aligned_alloc(64, cells * BLOCK_INPUTS);
    q->corrections = aligned_alloc(64, cells * 16 * sizeof(int32_t));
    q->scales = aligned_alloc(64, cells * 16 * sizeof(float));
    if (q->codes == NULL || q->corrections == NULL || q->scales == NULL) {
        return 0;
    }
    const __m512i offset = _mm512_set1_epi8((char)0x80);
    for (int r = 0; r < rows; r++) {
        for (int b = 0; b < q->blocks; b++) {
            size_t cell = (size_t)b * rows + r;
            float d[8];
            __m512i chunk[4];
            for (int c = 0; c < BLOCK_CHUNKS; c++) {
                chunk[c] = _mm512_setzero_si512();
                for (int h = 0; h < 2; h++) {
                    int k = b * BLOCK_INPUTS + c * 64 + h * GROUP;
                    d[2 * c + h] = 0.0f;
                    if (k < in) {
                        chunk[c] = _mm512_inserti64x4(chunk[c], quantize_group(x + (size_t)r * in + k, &d[2 * c + h]), h);
                    }
                }
            }
            __m512i t[4];
            transpose_block(chunk, t);
            __m512i sums = _mm512_setzero_si512();
            for (int j = 0; j < BLOCK_CHUNKS; j++) {
                _mm512_store_si512((__m512i *)(q->codes + cell * BLOCK_INPUTS + j * 64), t[j]);
                sums = _mm512_dpbusd_epi32(sums, offset, t[j]);
            }
            _mm512_store_si512((__m512i *)(q->corrections + cell * 16), _mm512_sub_epi32(_mm512_setzero_si512(), sums));
            _mm512_store_ps(q->scales + cell * 16, pair_lanes(_mm512_castps256_ps512(_mm256_loadu_ps(d))));
        }
    }
    return 1;
}

static void free_blocked(BlockedRows *q) {
    free(q->codes);
    free(q->corrections);
    free(q->scales);
}

/* The inputs [k0, k1) (whole blocks, or up to in) of output n for the blocked rows, carried as
   weight_rows carries them. */
static inline __attribute__((always_inline)) VNNI_TARGET void blocked_weight_rows(
        const BlockedRows *q, const int8_t *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int n, int k0, int k1, int first, int last, __m512 *carry) {
    const int groups = in / GROUP;
    const __m512i offset = _mm512_set1_epi8((char)0x80);
    __m512 acc[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = first ? _mm512_setzero_ps() : carry[r];
    }
    for (int b = k0 / BLOCK_INPUTS; b * BLOCK_INPUTS < k1; b++) {
        int k = b * BLOCK_INPUTS;
        const int8_t *w_at = codes + (size_t)n * in + k;
        __m512i chunk[4];
        for (int c = 0; c < BLOCK_CHUNKS; c++) {
            int at = k + c * 64;
            _mm_prefetch((const char *)w_at + c * 64 + PREFETCH_BYTES, _MM_HINT_T0);
            chunk[c] = at + 64 <= in ? _mm512_loadu_si512(w_at + c * 64)
                    : at < in ? _mm512_maskz_loadu_epi8(0xffffffffULL, w_at + c * 64)
                    : _mm512_setzero_si512();
        }
        __m512i t[4];
        transpose_block(chunk, t);
        for (int j = 0; j < BLOCK_CHUNKS; j++) {
            t[j] = _mm512_xor_si512(t[j], offset); /* w + 128, unsigned */
        }
        int block_groups = groups - k / GROUP < 8 ? groups - k / GROUP : 8;
        const uint16_t *s_at = scales + (size_t)n * groups + k / GROUP;
        /* A whole block's 8 scales in one load; only a ragged last block takes the copy. */
        __m512 weight_scales = pair_lanes(block_groups == 8 ? widen_scales(s_at, 8) : widen_scales(s_at, block_groups));
        for (int r = 0; r < rows; r++) {
            size_t cell = (size_t)b * rows + r;
            const int8_t *x_at = q->codes + cell * BLOCK_INPUTS;
            __m512i sums = _mm512_load_si512((const __m512i *)(q->corrections + cell * 16));
            for (int j = 0; j < BLOCK_CHUNKS; j++) {
                sums = _mm512_dpbusd_epi32(sums, t[j], _mm512_load_si512((const __m512i *)(x_at + j * 64)));
            }
            __m512 both = _mm512_mul_ps(weight_scales, _mm512_load_ps(q->scales + cell * 16));
            acc[r] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums), both, acc[r]);
        }
    }
    finish_rows(acc, rows, last, bias, out, out_features, n, carry);
}

/* Inputs per tile for the blocked rows (2 bytes a row per input, as the per-chunk kernel): whole
   blocks, or all of in where they fit. */
static inline int block_tile_inputs(int rows, int in) {
    int tile = X_TILE_BYTES / (rows * 2) / BLOCK_INPUTS * BLOCK_INPUTS;
    return tile < BLOCK_INPUTS ? BLOCK_INPUTS : tile >= in ? in : tile;
}

#define BLOCKED_CALL(k0, k1, first, last, at) \
    blocked_weight_rows(q, codes, scales, bias, out, rows, in, out_features, n, k0, k1, first, last, at)

static inline __attribute__((always_inline)) VNNI_TARGET void blocked_columns_rows(
        const BlockedRows *q, const int8_t *codes, const uint16_t *scales, const float *bias, float *out,
        int in, int out_features, int from, int to, int rows) {
    __m512 carry[TILE_OUTPUTS * MAX_ROWS];
    int n;
    TILED(BLOCKED_CALL, block_tile_inputs(rows, in));
}

#define BLOCKED_ROWS(R) blocked_columns_rows(q, codes, scales, bias, out, in, out_features, from, to, R)

static VNNI_TARGET void blocked_columns(
        const BlockedRows *q, const int8_t *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int from, int to) {
    SWITCH_ROWS(BLOCKED_ROWS)
}

/* ---- bfloat16 x (bfloat16 hi + lo) with AVX512_BF16 ---- */

/* x (rows, in) as bfloat16 halves, hi = x rounded to nearest even and lo = x - hi rounded, each 32
   inputs of every row side by side: split[2 (b rows + r)] is hi of row r's block b, the next its lo. */
static BF16_TARGET void split_bf16(const float *x, int rows, int in, __m512bh *split) {
    const int blocks = in / 32;
    for (int r = 0; r < rows; r++) {
        for (int b = 0; b < blocks; b++) {
            const float *at = x + (size_t)r * in + (size_t)b * 32;
            __m512 x0 = _mm512_loadu_ps(at);
            __m512 x1 = _mm512_loadu_ps(at + 16);
            __m512bh h = _mm512_cvtne2ps_pbh(x1, x0);
            __m512i wide0 = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_castsi512_si256((__m512i)h)), 16);
            __m512i wide1 = _mm512_slli_epi32(_mm512_cvtepu16_epi32(_mm512_extracti64x4_epi64((__m512i)h, 1)), 16);
            size_t cell = 2 * ((size_t)b * rows + r);
            split[cell] = h;
            split[cell + 1] = _mm512_cvtne2ps_pbh(_mm512_sub_ps(x1, _mm512_castsi512_ps(wide1)),
                    _mm512_sub_ps(x0, _mm512_castsi512_ps(wide0)));
        }
    }
}

/* The inputs [k0, k1) of output n for the split rows, carried as weight_rows carries them. */
static inline __attribute__((always_inline)) BF16_TARGET void bf16_weight_rows(
        const __m512bh *split, const uint16_t *codes, const float *bias, float *out,
        int rows, int in, int out_features, int n, int k0, int k1, int first, int last, __m512 *carry) {
    __m512 acc[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = first ? _mm512_setzero_ps() : carry[r];
    }
    for (int b = k0 / 32; b < k1 / 32; b++) {
        const uint16_t *w_at = codes + (size_t)n * in + (size_t)b * 32;
        _mm_prefetch((const char *)w_at + PREFETCH_BYTES, _MM_HINT_T0);
        __m512bh w = (__m512bh)_mm512_loadu_si512(w_at);
        for (int r = 0; r < rows; r++) {
            size_t cell = 2 * ((size_t)b * rows + r);
            acc[r] = _mm512_dpbf16_ps(acc[r], w, split[cell]);
            acc[r] = _mm512_dpbf16_ps(acc[r], w, split[cell + 1]);
        }
    }
    finish_rows(acc, rows, last, bias, out, out_features, n, carry);
}

#define BF16_CALL(k0, k1, first, last, at) \
    bf16_weight_rows(split, codes, bias, out, rows, in, out_features, n, k0, k1, first, last, at)

/* A split input takes two bfloat16 halves: 4 bytes a row. */
static inline __attribute__((always_inline)) BF16_TARGET void bf16_columns_rows(
        const __m512bh *split, const uint16_t *codes, const float *bias, float *out,
        int in, int out_features, int from, int to, int rows) {
    __m512 carry[TILE_OUTPUTS * MAX_ROWS];
    int n;
    TILED(BF16_CALL, tile_inputs(rows, in, 4));
}

#define BF16_ROWS(R) bf16_columns_rows(split, codes, bias, out, in, out_features, from, to, R)

static BF16_TARGET void bf16_columns(
        const __m512bh *split, const uint16_t *codes, const float *bias, float *out,
        int rows, int in, int out_features, int from, int to) {
    SWITCH_ROWS(BF16_ROWS)
}

/* Which of the dot-product instructions this CPU has: FEATURE_VNNI | FEATURE_BF16. */
static int cpu_features(void) {
    __builtin_cpu_init();
    int features = 0;
    if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni")) {
        features |= FEATURE_VNNI;
    }
    if (__builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16")) {
        features |= FEATURE_BF16;
    }
    return features;
}

JNIEXPORT jint JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_features(JNIEnv *env, jclass cls) {
    (void)env;
    (void)cls;
    return cpu_features();
}

/* The product by the dot-product instructions (int8 of VNNI_BLOCK_ROWS or more rows by the
   transposed-block kernel where blocks is set); returns 0 where memory for x's form ran out. */
static int dot_multiply(const float *x, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int format, int rows, int in, int out_features, int from, int to, int blocks) {
    if (format == INT8 && blocks && rows >= VNNI_BLOCK_ROWS) {
        BlockedRows q;
        int ok = quantize_blocked(x, rows, in, &q);
        if (ok) {
            blocked_columns(&q, (const int8_t *)codes, scales, bias, out, rows, in, out_features, from, to);
        }
        free_blocked(&q);
        return ok;
    }
    if (format == INT8) {
        QuantizedRows q;
        int ok = quantize_rows(x, rows, in, &q);
        if (ok) {
            vnni_columns(&q, (const int8_t *)codes, scales, bias, out, rows, in, out_features, from, to);
        }
        free_quantized(&q);
        return ok;
    }
    __m512bh *split = aligned_alloc(64, (size_t)rows * in * 2 * sizeof(uint16_t));
    if (split == NULL) {
        return 0;
    }
    split_bf16(x, rows, in, split);
    bf16_columns(split, (const uint16_t *)codes, bias, out, rows, in, out_features, from, to);
    free(split);
    return 1;
}

/* x (rows, in) with each 32 inputs of every row side by side, (in / 32, rows, 32), as weight_rows
   reads it. */
static void interleave_rows(const float *x, int rows, int in, float *out) {
    for (int r = 0; r < rows; r++) {
        for (int k = 0; k < in; k += GROUP) {
            float *to = out + ((size_t)(k / GROUP) * rows + r) * GROUP;
            _mm512_storeu_ps(to, _mm512_loadu_ps(x + (size_t)r * in + k));
            _mm512_storeu_ps(to + 16, _mm512_loadu_ps(x + (size_t)r * in + k + 16));
        }
    }
}

/* The product by the widening kernel; returns 0 where memory for x's interleaved rows ran out. One
   row is already in that form. */
static int widening_multiply(const float *x, const void *codes, const uint16_t *scales, const float *bias,
        float *out, int format, int rows, int in, int out_features, int from, int to) {
    float *interleaved = NULL;
    if (rows > 1) {
        interleaved = aligned_alloc(64, (size_t)rows * in * sizeof(float));
        if (interleaved == NULL) {
            return 0;
        }
        interleave_rows(x, rows, in, interleaved);
        x = interleaved;
    }
    switch (format) {
        case BFLOAT16:
            BY_ROWS(BFLOAT16)
            break;
        case FLOAT16:
            BY_ROWS(FLOAT16)
            break;
        default:
            BY_ROWS(INT8)
            break;
    }
    free(interleaved);
    return 1;
}

/* out[:, from:to] = x @ weight^T + bias, weight (out_features, in) compressed as format says. */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_multiply(
        JNIEnv *env, jclass cls, jobject x_buffer, jobject codes_buffer, jobject scales_buffer,
        jobject bias_buffer, jobject out_buffer, jint format, jint rows, jint in, jint out_features,
        jint from, jint to, jint dot_products) {
    (void)cls;
    const int features = dot_products & cpu_features(); /* never an instruction the CPU lacks */
    const float *x = (const float *)(*env)->GetDirectBufferAddress(env, x_buffer);
    const void *codes = (*env)->GetDirectBufferAddress(env, codes_buffer);
    const uint16_t *scales =
            scales_buffer == NULL ? NULL : (const uint16_t *)(*env)->GetDirectBufferAddress(env, scales_buffer);
    const float *bias = bias_buffer == NULL ? NULL : (const float *)(*env)->GetDirectBufferAddress(env, bias_buffer);
    float *out = (float *)(*env)->GetDirectBufferAddress(env, out_buffer);
    if (x == NULL || codes == NULL || out == NULL || (bias_buffer != NULL && bias == NULL)
            || (format == INT8 && scales == NULL)) {
        fail(env, "compressed product: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (rows < 1 || rows > MAX_ROWS || in % GROUP != 0) {
        fail(env, "compressed product: rows must be 1 to 8 and in a multiple of 32");
        return;
    }
    if ((format == INT8 && (features & FEATURE_VNNI))
            || (format == BFLOAT16 && (features & FEATURE_BF16) && rows <= BF16_DOT_ROWS)) {
        if (!dot_multiply(x, codes, scales, bias, out, format, rows, in, out_features, from, to,
                    dot_products & VNNI_BLOCKS)) {
            fail(env, "compressed product: no memory for the input's int8 or bfloat16 form");
        }
        return;
    }
    if (format < BFLOAT16 || format > INT8) {
        fail(env, "compressed product: unknown format");
        return;
    }
    if (!widening_multiply(x, codes, scales, bias, out, format, rows, in, out_features, from, to)) {
        fail(env, "compressed product: no memory for the input's rows side by side");
    }
}

/* Rows [from, to) of the weight widened to float32 into out (out_features, in), for a prefill's
   product by the engine; the same widening as the product's, so both use the same weight. */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_widen(
        JNIEnv *env, jclass cls, jobject codes_buffer, jobject scales_buffer, jobject out_buffer, jint format,
        jint in, jint from, jint to) {
    (void)cls;
    const void *codes = (*env)->GetDirectBufferAddress(env, codes_buffer);
    const uint16_t *scales =
            scales_buffer == NULL ? NULL : (const uint16_t *)(*env)->GetDirectBufferAddress(env, scales_buffer);
    float *out = (float *)(*env)->GetDirectBufferAddress(env, out_buffer);
    if (codes == NULL || out == NULL || (format == INT8 && scales == NULL)) {
        fail(env, "compressed widening: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (in % GROUP != 0 || format < BFLOAT16 || format > INT8) {
        fail(env, "compressed widening: in must be a multiple of 32 and the format known");
        return;
    }
    const int groups = in / GROUP;
    for (int n = from; n < to; n++) {
        for (int k = 0; k < in; k += 16) {
            size_t index = (size_t)n * in + k;
            __m512 v = format == BFLOAT16 ? widen16(codes, index, BFLOAT16)
                    : format == FLOAT16 ? widen16(codes, index, FLOAT16)
                    : _mm512_mul_ps(widen16(codes, index, INT8), broadcast_scale(scales + (size_t)n * groups + k / GROUP));
            _mm512_storeu_ps(out + index, v);
        }
    }
}
