/*
 * The product of many rows of x (a prefill) with a compressed weight, compute-bound like a GEMM,
 * instead of widening the whole weight to float32 for the engine's GEMM:
 * out[:, from:to] = x @ weight^T + bias, weight (out, in) held as
 *   format 0 and 1: bfloat16 or IEEE half bits, widened to float32 a panel at a time (below) and
 *     multiplied by FMA: the float32 product of the widened weight, as the reference computes it.
 *     (vdpbf16ps with x rounded to bfloat16, llama.cpp's BF16 product, ran 1.5x faster but moved a
 *     model's log-probabilities by 0.0017-0.0021 nats against float32, over issue 21's 0.002;
 *     docs/PERFORMANCE.md);
 *   format 2: int8 codes with one float16 scale per 32 inputs of an output (llama.cpp's Q8_0),
 *     multiplied by vpdpbusd (AVX512_VNNI) with x quantized per group of 32 to int8 (scale
 *     max|x| / 127, the weight's scheme); each group's int32 sum times both scales goes into float32
 *     sums;
 *   format 3: int4 codes, two a byte, with one float16 scale per 32 inputs (llama.cpp's Q4_0), taken as
 *     int8's: each panel's codes unpacked to the int8 codes q - 8 as it is repacked (unpack_int4), so
 *     the integer sums are as exact as int8's (llama.cpp's Q4_0 x Q8_0 product); a 4-bit code costs
 *     the same multiply as an 8-bit one, and the unpacking is paid once per panel, not per row of x;
 *   format 4: int6 codes, 24 bytes per 32 inputs, with one float16 scale (compressed_format.h), taken as
 *     int4's are: each panel's codes unpacked to the int8 codes q in [-32, 31] (unpack_int6).
 * Called by io.github.djlllmzoo.cpu.CompressedGemm, each core with its own columns, on direct buffers
 * it has checked: x float32 (rows, in) contiguous, in a multiple of 32, from a multiple of 16.
 *
 * Layout. vpdpbusd multiplies 4 bytes of one operand by 4 bytes of the other in each of 16 lanes, so
 * a lane is one output column and one 32-bit word of x (4 inputs) is broadcast to all lanes. The
 * weight is therefore repacked, a panel of PANEL columns at a time, as words of 16 columns side by
 * side ([column block][word of in][16 columns]); the panel stays in L2 while every row of x passes
 * over it, ROWS rows by BLOCKS blocks of 16 columns at a time in registers. A lane's int32 sum covers
 * one whole group of 32 inputs of one (row, column) before it is scaled, so scaling costs 3
 * instructions per 8 vpdpbusd. vpdpbusd multiplies unsigned by signed bytes: x's code q goes in as
 * q + 128 and each group's sum starts at -128 times the column's sum of codes in that group, worked
 * out once per panel. A 16-bit panel is repacked the same way (two inputs a word), widened to float32
 * ([block][input][16 columns], FLOAT_PANEL columns: 4 bytes an element) and each input of a row
 * broadcast against it.
 */
#include <jni.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compressed_format.h"
#include "simd.h"

/* Columns of the weight repacked at a time, a multiple of BLOCKS * 16. */
#define PANEL 96
/* Columns of a 16-bit weight widened at a time: its panel holds 4 bytes an element. */
#define FLOAT_PANEL 48
/*
 * Inputs multiplied per pass over a panel: the panel's part and the rows' part of x stay in L2 (a
 * 5632-wide input would not); each later pass adds to the sums the last one stored.
 */
#define SPAN 1024
/* Rows of x and blocks of 16 columns multiplied in registers at a time. */
#define ROWS 4
#define BLOCKS 3
/* Columns of a block: a vector's lanes. */
#define COLUMNS VL


#ifndef INLINE
#define INLINE static inline __attribute__((always_inline))
#endif

/* Group g (counted from the weight's start) of an int4 or int6 weight unpacked to its 32 int8 codes into out. */
INLINE void unpack_packed(const uint8_t *weight, int format, size_t g, int8_t *out) {
    if (format == INT6) {
        unpack_int6(weight + g * INT6_GROUP_BYTES, out);
    } else {
        unpack_int4(weight + g * INT4_GROUP_BYTES, out);
    }
}

/* The 32-bit word at p (any alignment). */
INLINE uint32_t word(const void *p) {
    uint32_t w;
    memcpy(&w, p, sizeof w);
    return w;
}

/*
 * Words [w0, w0 + words) of columns [n0, n0 + columns) of the weight (row_words 32-bit words a row) as
 * [block of COLUMNS columns][word][COLUMNS columns] into panel; columns past the weight's last are zero.
 */
static void repack(const uint32_t *weight, int row_words, int w0, int words, int out_features, int n0, int columns,
        uint32_t *panel) {
    for (int b = 0; b < (columns + COLUMNS - 1) / COLUMNS; b++) {
        uint32_t *block = panel + (size_t)b * words * COLUMNS;
        for (int j = 0; j < COLUMNS; j++) {
            int n = n0 + b * COLUMNS + j;
            if (n < out_features && b * COLUMNS + j < columns) {
                const uint32_t *row = weight + (size_t)n * row_words + w0;
                for (int w = 0; w < words; w++) {
                    block[(size_t)w * COLUMNS + j] = word(row + w);
                }
            } else {
                for (int w = 0; w < words; w++) {
                    block[(size_t)w * COLUMNS + j] = 0;
                }
            }
        }
    }
}

/*
 * Every row of x by the panel's blocks, ROWS rows by BLOCKS blocks at a time, by TILE(R, B) with both
 * fixed so the loops over them unroll; m is the tile's first row, b0 its first block. A tile's sums
 * start from those stored by the pass over earlier inputs (stored, NULL on the first pass) and the
 * last pass adds the bias (add, else NULL).
 */
#define OVER_PANEL(TILE)                                                                                 \
    for (int b0 = 0; b0 < blocks; b0 += BLOCKS) {                                                        \
        int B = blocks - b0 < BLOCKS ? blocks - b0 : BLOCKS;                                             \
        int m = 0;                                                                                       \
        for (; m + ROWS <= rows; m += ROWS) {                                                            \
            if (B == 3) TILE(ROWS, 3);                                                                   \
            else if (B == 2) TILE(ROWS, 2);                                                              \
            else TILE(ROWS, 1);                                                                          \
        }                                                                                                \
        for (; m < rows; m++) {                                                                          \
            if (B == 3) TILE(1, 3);                                                                      \
            else if (B == 2) TILE(1, 2);                                                                 \
            else TILE(1, 1);                                                                             \
        }                                                                                                \
    }

/* The sums of R rows by B blocks from column n: zero, or those a pass over earlier inputs stored. */
INLINE void start(vf acc[ROWS][BLOCKS], int R, int B, const float *stored, int out_features, int to, int m, int n) {
    for (int b = 0; b < B; b++) {
        int valid = to - (n + b * COLUMNS);
        for (int r = 0; r < R; r++) {
            acc[r][b] = stored ? vload_n(stored + (size_t)(m + r) * out_features + n + b * COLUMNS, valid) : vzero();
        }
    }
}

/* The sums of R rows by B blocks from column n stored, plus the bias (if any); only the columns below to. */
INLINE void store(vf acc[ROWS][BLOCKS], int R, int B, const float *bias, float *out, int out_features, int to, int m,
        int n) {
    for (int b = 0; b < B; b++) {
        int column = n + b * COLUMNS;
        int valid = to - column;
        vf add = bias ? vload_n(bias + column, valid) : vzero();
        for (int r = 0; r < R; r++) {
            vstore_n(out + (size_t)(m + r) * out_features + column, acc[r][b] + add, valid);
        }
    }
}

/* ---- bfloat16 and float16 widened to float32 in the panel, multiplied by FMA ---- */

/* The panel's words ([block][word][COLUMNS], two codes a word, the first input low) widened to float32
   as [block][input][COLUMNS]. */
static void widen_panel(const uint32_t *panel, int words, int blocks, int format, float *widened) {
    for (size_t at = 0; at < (size_t)blocks * words; at++) {
        vu pairs;
        memcpy(&pairs, panel + at * COLUMNS, sizeof pairs);
        vf first, second;
        if (format == BFLOAT16) {
            first = (vf)(pairs << 16);
            second = (vf)(pairs & 0xffff0000u);
        } else {
            first = widen_f16_low(pairs);
            second = widen_f16_low(pairs >> 16);
        }
        vstore(widened + at * 2 * COLUMNS, first);
        vstore(widened + at * 2 * COLUMNS + COLUMNS, second);
    }
}

INLINE void fma_tile(const float *x, const float *widened, int span, int in, int m, int b0, int R, int B,
        vf acc[ROWS][BLOCKS]) {
    for (int k = 0; k < span; k++) {
        vf weight[BLOCKS];
        for (int b = 0; b < B; b++) {
            weight[b] = vload(widened + ((size_t)(b0 + b) * span + k) * COLUMNS);
        }
        for (int r = 0; r < R; r++) {
            float xk = x[(size_t)(m + r) * in + k];
            for (int b = 0; b < B; b++) {
                acc[r][b] = weight[b] * xk + acc[r][b];
            }
        }
    }
}

#define FMA_TILE(R, B)                                                                                   \
    do {                                                                                                 \
        vf acc[ROWS][BLOCKS];                                                                            \
        start(acc, R, B, stored, out_features, to, m, n0 + b0 * COLUMNS);                                \
        fma_tile(x, widened, span, in, m, b0, R, B, acc);                                                \
        store(acc, R, B, add, out, out_features, to, m, n0 + b0 * COLUMNS);                              \
    } while (0)

static void fma_panel(const float *x, const float *widened, int span, const float *stored, const float *add,
        float *out, int rows, int in, int out_features, int to, int n0, int blocks) {
    OVER_PANEL(FMA_TILE)
}

static int widened_multiply(const float *x, const uint16_t *weight, int format, const float *bias, float *out,
        int rows, int in, int out_features, int from, int to) {
    const int words = in / 2;
    uint32_t *panel = malloc((size_t)FLOAT_PANEL * SPAN * sizeof(uint16_t));
    float *widened = malloc((size_t)FLOAT_PANEL * SPAN * sizeof(float));
    int ok = panel != NULL && widened != NULL;
    if (ok) {
        for (int n0 = from; n0 < to; n0 += FLOAT_PANEL) {
            int columns = to - n0 < FLOAT_PANEL ? to - n0 : FLOAT_PANEL;
            int blocks = (columns + COLUMNS - 1) / COLUMNS;
            for (int k0 = 0; k0 < in; k0 += SPAN) {
                int span = in - k0 < SPAN ? in - k0 : SPAN;
                repack((const uint32_t *)weight, words, k0 / 2, span / 2, out_features, n0, columns, panel);
                widen_panel(panel, span / 2, blocks, format, widened);
                fma_panel(x + k0, widened, span, k0 > 0 ? out : NULL, k0 + span == in ? bias : NULL, out, rows, in,
                        out_features, to, n0, blocks);
            }
        }
    }
    free(panel);
    free(widened);
    return ok;
}

#if defined(__AVX512F__)

/* ---- int8 x int8 with AVX512_VNNI ---- */

/*
 * As repack, for int4 or int6 codes (format; row_groups groups of packed_bytes(format) a row): groups [g0, g0 +
 * groups) of columns [n0, n0 + columns), unpacked to int8 codes, as [block of COLUMNS columns][word][COLUMNS
 * columns] into panel.
 */
static void repack_packed(const uint8_t *weight, int format, int row_groups, int g0, int groups, int out_features,
        int n0, int columns, uint32_t *panel) {
    const int words = groups * GROUP / 4;
    for (int b = 0; b < (columns + COLUMNS - 1) / COLUMNS; b++) {
        uint32_t *block = panel + (size_t)b * words * COLUMNS;
        for (int j = 0; j < COLUMNS; j++) {
            int n = n0 + b * COLUMNS + j;
            int valid = n < out_features && b * COLUMNS + j < columns;
            for (int g = 0; g < groups; g++) {
                int8_t codes[GROUP] = {0};
                if (valid) {
                    unpack_packed(weight, format, (size_t)n * row_groups + g0 + g, codes);
                }
                for (int w = 0; w < GROUP / 4; w++) {
                    block[((size_t)g * (GROUP / 4) + w) * COLUMNS + j] = word(codes + 4 * w);
                }
            }
        }
    }
}

/* Rows of x as unsigned codes q + 128 (rows, in) and their scales (rows, in / 32). */
static VNNI_TARGET void quantize(const float *x, int rows, int in, uint8_t *codes, float *scales) {
    for (size_t g = 0; g < (size_t)rows * in / GROUP; g++) {
        __m256i group = quantize_group(x + g * GROUP, scales + g);
        _mm256_storeu_si256((__m256i *)(codes + g * GROUP), _mm256_add_epi8(group, _mm256_set1_epi8((char)0x80)));
    }
}

/*
 * The panel's group scales [block][group][16 columns] and starting sums -128 * (sum of the column's
 * codes in the group), same layout.
 */
static VNNI_TARGET void group_terms(const uint32_t *panel, const uint16_t *weight_scales, int row_groups, int g0,
        int groups, int out_features, int n0, int columns, float *scales, int32_t *starts) {
    const __m512i offset = _mm512_set1_epi8((char)0x80);
    const int words = groups * GROUP / 4;
    float column[SPAN / GROUP]; /* one column's scales over the panel's groups, widened */
    for (int b = 0; b < (columns + 15) / 16; b++) {
        for (int g = 0; g < groups; g++) {
            __m512i sum = _mm512_setzero_si512();
            for (int w = 0; w < GROUP / 4; w++) {
                __m512i codes = _mm512_loadu_si512(panel + ((size_t)b * words + (size_t)g * (GROUP / 4) + w) * 16);
                sum = _mm512_dpbusd_epi32(sum, offset, codes);
            }
            _mm512_storeu_si512(starts + ((size_t)b * groups + g) * 16, _mm512_sub_epi32(_mm512_setzero_si512(), sum));
        }
        for (int j = 0; j < 16; j++) {
            int n = n0 + b * 16 + j;
            if (n < out_features && b * 16 + j < columns) {
                widen_scale_run(weight_scales + (size_t)n * row_groups + g0, groups, column);
            } else {
                memset(column, 0, sizeof column);
            }
            for (int g = 0; g < groups; g++) {
                scales[((size_t)b * groups + g) * 16 + j] = column[g];
            }
        }
    }
}

/*
 * R rows from m by B blocks of the panel from block b0, over the panel's groups: every group's int32
 * sums, scaled. codes and x_scales start at the panel's first input and group; rows are in codes and
 * row_groups scales apart.
 */
INLINE VNNI_TARGET void vnni_tile(const uint8_t *codes, const float *x_scales, const uint32_t *panel,
        const float *scales, const int32_t *starts, int groups, int in, int row_groups, int m, int b0, int R, int B,
        vf acc[ROWS][BLOCKS]) {
    const int words = groups * GROUP / 4;
    for (int g = 0; g < groups; g++) {
        __m512i sums[ROWS][BLOCKS];
        for (int b = 0; b < B; b++) {
            __m512i start = _mm512_loadu_si512(starts + ((size_t)(b0 + b) * groups + g) * 16);
            for (int r = 0; r < R; r++) {
                sums[r][b] = start;
            }
        }
        for (int w = 0; w < GROUP / 4; w++) {
            __m512i weight[BLOCKS];
            for (int b = 0; b < B; b++) {
                weight[b] = _mm512_loadu_si512(panel + ((size_t)(b0 + b) * words + (size_t)g * (GROUP / 4) + w) * 16);
            }
            for (int r = 0; r < R; r++) {
                __m512i xw = _mm512_set1_epi32((int)word(codes + (size_t)(m + r) * in + g * GROUP + w * 4));
                for (int b = 0; b < B; b++) {
                    sums[r][b] = _mm512_dpbusd_epi32(sums[r][b], xw, weight[b]);
                }
            }
        }
        for (int b = 0; b < B; b++) {
            __m512 weight_scale = _mm512_loadu_ps(scales + ((size_t)(b0 + b) * groups + g) * 16);
            for (int r = 0; r < R; r++) {
                __m512 both = _mm512_mul_ps(weight_scale, _mm512_set1_ps(x_scales[(size_t)(m + r) * row_groups + g]));
                acc[r][b] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sums[r][b]), both, acc[r][b]);
            }
        }
    }
}

#define VNNI_TILE(R, B)                                                                                  \
    do {                                                                                                 \
        vf acc[ROWS][BLOCKS];                                                                        \
        start(acc, R, B, stored, out_features, to, m, n0 + b0 * 16);                                     \
        vnni_tile(codes, x_scales, panel, scales, starts, groups, in, row_groups, m, b0, R, B, acc);     \
        store(acc, R, B, add, out, out_features, to, m, n0 + b0 * 16);                                   \
    } while (0)

static VNNI_TARGET void vnni_panel(const uint8_t *codes, const float *x_scales, const uint32_t *panel,
        const float *scales, const int32_t *starts, int groups, const float *stored, const float *add, float *out,
        int rows, int in, int out_features, int to, int n0, int blocks) {
    const int row_groups = in / GROUP;
    OVER_PANEL(VNNI_TILE)
}

/* Returns 0 where memory ran out. */
static VNNI_TARGET int vnni_multiply(const float *x, const void *weight, int format, const uint16_t *weight_scales,
        const float *bias, float *out, int rows, int in, int out_features, int from, int to) {
    const int groups = in / GROUP;
    uint8_t *codes = aligned_alloc(64, (size_t)rows * in);
    float *x_scales = aligned_alloc(64, (size_t)rows * groups * sizeof(float));
    uint32_t *panel = aligned_alloc(64, (size_t)PANEL * SPAN);
    float *scales = aligned_alloc(64, (size_t)PANEL * (SPAN / GROUP) * sizeof(float));
    int32_t *starts = aligned_alloc(64, (size_t)PANEL * (SPAN / GROUP) * sizeof(int32_t));
    int ok = codes != NULL && x_scales != NULL && panel != NULL && scales != NULL && starts != NULL;
    if (ok) {
        quantize(x, rows, in, codes, x_scales);
        for (int n0 = from; n0 < to; n0 += PANEL) {
            int columns = to - n0 < PANEL ? to - n0 : PANEL;
            for (int k0 = 0; k0 < in; k0 += SPAN) {
                int span = in - k0 < SPAN ? in - k0 : SPAN;
                if (format == INT4 || format == INT6) {
                    repack_packed((const uint8_t *)weight, format, groups, k0 / GROUP, span / GROUP, out_features, n0,
                            columns, panel);
                } else {
                    repack((const uint32_t *)weight, in / 4, k0 / 4, span / 4, out_features, n0, columns, panel);
                }
                group_terms(panel, weight_scales, groups, k0 / GROUP, span / GROUP, out_features, n0, columns, scales,
                        starts);
                vnni_panel(codes + k0, x_scales + k0 / GROUP, panel, scales, starts, span / GROUP,
                        k0 > 0 ? out : NULL, k0 + span == in ? bias : NULL, out, rows, in, out_features, to, n0,
                        (columns + 15) / 16);
            }
        }
    }
    free(codes);
    free(x_scales);
    free(panel);
    free(scales);
    free(starts);
    return ok;
}

static int has_int8_dot(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vnni");
}

static int dot_multiply(const float *x, const void *weight, int format, const uint16_t *weight_scales,
        const float *bias, float *out, int rows, int in, int out_features, int from, int to) {
    return vnni_multiply(x, weight, format, weight_scales, bias, out, rows, in, out_features, from, to);
}

#else

/* ---- int8 x int8 by simd.h's dot32 (AVX2's vpmaddubsw, NEON's sdot) ---- */

/* Rows of x multiplied together, and weight rows (columns of out) at a time. */
#define DOT_ROWS 4
#define DOT_COLUMNS 2

/*
 * Rows [m, m + R) by columns [n, n + C) over all groups: a group's 32 code products exact in int32
 * (dot32), times both scales into VL float32 sums, summed at the end. codes and x_scales are the
 * quantized rows (in and in / 32 apart), weight column n's int8 codes (columns in apart), w_scales the
 * columns' scales widened (groups apart).
 */
INLINE void dot_tile(const int8_t *codes, const float *x_scales, const int8_t *weight, const float *w_scales,
        const float *bias, float *out, int in, int out_features, int m, int n, int R, int C) {
    const int groups = in / GROUP;
    vf acc[DOT_ROWS][DOT_COLUMNS];
    for (int r = 0; r < R; r++) {
        for (int c = 0; c < C; c++) {
            acc[r][c] = vzero();
        }
    }
    for (int g = 0; g < groups; g++) {
        for (int r = 0; r < R; r++) {
            const int8_t *xg = codes + (size_t)(m + r) * in + (size_t)g * GROUP;
            float sx = x_scales[(size_t)(m + r) * groups + g];
            for (int c = 0; c < C; c++) {
                vi sums = dot32((vi){0}, xg, weight + (size_t)c * in + (size_t)g * GROUP);
                acc[r][c] = __builtin_convertvector(sums, vf) * (sx * w_scales[(size_t)c * groups + g]) + acc[r][c];
            }
        }
    }
    for (int r = 0; r < R; r++) {
        for (int c = 0; c < C; c++) {
            out[(size_t)(m + r) * out_features + n + c] = vsum(acc[r][c]) + (bias ? bias[n + c] : 0.0f);
        }
    }
}

#define DOT_TILE(R, C) \
    dot_tile(codes, x_scales, panel_codes + (size_t)(n - n0) * in, w_scales, bias, out, in, out_features, m, n, R, C)

/* Returns 0 where memory ran out. An int4 or int6 weight's panel of columns is unpacked to int8 codes first. */
static int dot_multiply(const float *x, const void *weight, int format, const uint16_t *weight_scales,
        const float *bias, float *out, int rows, int in, int out_features, int from, int to) {
    const int groups = in / GROUP;
    int8_t *codes = malloc((size_t)rows * in);
    float *x_scales = malloc((size_t)rows * groups * sizeof(float));
    float *scales = malloc((size_t)PANEL * groups * sizeof(float));
    const int packed = format == INT4 || format == INT6;
    int8_t *unpacked = packed ? malloc((size_t)PANEL * in) : NULL;
    int ok = codes != NULL && x_scales != NULL && scales != NULL && (!packed || unpacked != NULL);
    if (ok) {
        for (size_t g = 0; g < (size_t)rows * groups; g++) {
            x_scales[g] = quantize_group32(x + g * GROUP, codes + g * GROUP);
        }
        for (int n0 = from; n0 < to; n0 += PANEL) {
            int n1 = to - n0 < PANEL ? to : n0 + PANEL;
            const int8_t *panel_codes = (const int8_t *)weight + (size_t)n0 * in;
            if (packed) {
                for (size_t g = 0; g < (size_t)(n1 - n0) * groups; g++) {
                    unpack_packed((const uint8_t *)weight, format, (size_t)n0 * groups + g, unpacked + g * GROUP);
                }
                panel_codes = unpacked;
            }
            for (int n = n0; n < n1; n++) {
                for (int g = 0; g < groups; g++) {
                    scales[(size_t)(n - n0) * groups + g] = half_value(weight_scales + (size_t)n * groups + g);
                }
            }
            for (int m = 0; m < rows; m += DOT_ROWS) {
                int R = rows - m < DOT_ROWS ? rows - m : DOT_ROWS;
                for (int n = n0; n < n1; n += DOT_COLUMNS) {
                    const float *w_scales = scales + (size_t)(n - n0) * groups;
                    if (R == DOT_ROWS && n + DOT_COLUMNS <= n1) {
                        DOT_TILE(DOT_ROWS, DOT_COLUMNS);
                    } else {
                        for (int c = n; c < n + DOT_COLUMNS && c < n1; c++) {
                            w_scales = scales + (size_t)(c - n0) * groups;
                            for (int r = m; r < m + R; r++) {
                                dot_tile(codes, x_scales, panel_codes + (size_t)(c - n0) * in, w_scales, bias, out,
                                        in, out_features, r, c, 1, 1);
                            }
                        }
                    }
                }
            }
        }
    }
    free(codes);
    free(x_scales);
    free(scales);
    free(unpacked);
    return ok;
}

static int has_int8_dot(void) {
    return 1;
}

#endif

/* out[:, from:to] = x @ weight^T + bias, weight (out_features, in) compressed as format says. */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_CompressedGemm_multiply(
        JNIEnv *env, jclass cls, jobject x_buffer, jobject codes_buffer, jobject scales_buffer,
        jobject bias_buffer, jobject out_buffer, jint format, jint rows, jint in, jint out_features,
        jint from, jint to) {
    (void)cls;
    const float *x = (const float *)(*env)->GetDirectBufferAddress(env, x_buffer);
    const void *codes = (*env)->GetDirectBufferAddress(env, codes_buffer);
    const uint16_t *scales =
            scales_buffer == NULL ? NULL : (const uint16_t *)(*env)->GetDirectBufferAddress(env, scales_buffer);
    const float *bias = bias_buffer == NULL ? NULL : (const float *)(*env)->GetDirectBufferAddress(env, bias_buffer);
    float *out = (float *)(*env)->GetDirectBufferAddress(env, out_buffer);
    if (x == NULL || codes == NULL || out == NULL || (bias_buffer != NULL && bias == NULL)
            || (GROUPED(format) && scales == NULL)) {
        fail(env, "compressed GEMM: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (rows < 1 || in % GROUP != 0 || from % 16 != 0 || from < 0 || to > out_features || from > to) {
        fail(env, "compressed GEMM: in must be a multiple of 32 and the columns a range from a multiple of 16");
        return;
    }
    int ok;
    if (GROUPED(format) && has_int8_dot()) {
        ok = dot_multiply(x, codes, format, scales, bias, out, rows, in, out_features, from, to);
    } else if (format == BFLOAT16 || format == FLOAT16) {
        ok = widened_multiply(x, (const uint16_t *)codes, format, bias, out, rows, in, out_features, from, to);
    } else {
        fail(env, "compressed GEMM: unknown format, or its dot-product instruction is missing on this CPU");
        return;
    }
    if (!ok) {
        fail(env, "compressed GEMM: no memory for the input's codes or the weight's panel");
    }
}
