/*
 * The decode product's kernels that multiply the codes themselves rather than widening them
 * (compressed_product.c's header says when each runs), included by compressed_product.c after its
 * widening kernel and the TILED loop they share (int4's and int6's codes unpacked to int8's in registers):
 * AVX512_VNNI's int8 (per chunk, and transposed blocks
 * in transposed blocks), AVX512_BF16's bfloat16, and the portable variant's int8 by AVX2's or NEON's dot
 * products. Each variant also gives cpu_features, dot_multiply and widen_row.
 */
#ifndef LLMZOO_COMPRESSED_PRODUCT_DOT_H
#define LLMZOO_COMPRESSED_PRODUCT_DOT_H

#if defined(__AVX512F__)

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))

/* ---- int8 x int8 with AVX512_VNNI (int4's codes unpacked to int8 first) ---- */

/* One int4 group's 16 packed bytes as its 32 int8 codes q - 8 (unpack_int4's order) in registers. */
static inline __attribute__((always_inline)) VNNI_TARGET __m256i unpack_int4_group(const uint8_t *packed) {
    const __m128i nibble = _mm_set1_epi8(0x0F);
    __m128i bytes = _mm_loadu_si128((const __m128i *)packed);
    __m128i low = _mm_and_si128(bytes, nibble);
    __m128i high = _mm_and_si128(_mm_srli_epi16(bytes, 4), nibble);
    return _mm256_sub_epi8(_mm256_inserti128_si256(_mm256_castsi128_si256(low), high, 1), _mm256_set1_epi8(8));
}

/* Two int4 groups' 32 packed bytes as their 64 int8 codes q - 8 (each group in unpack_int4's order, the
   first group in the low half): one 256-bit load, the nibbles split at that width, and one shuffle of
   128-bit lanes to put each group's high nibbles after its low ones. */
static inline __attribute__((always_inline)) VNNI_TARGET __m512i unpack_int4_pair(const uint8_t *packed) {
    const __m256i nibble = _mm256_set1_epi8(0x0F);
    __m256i bytes = _mm256_loadu_si256((const __m256i *)packed);
    __m256i low = _mm256_and_si256(bytes, nibble);   /* group 0 low, group 1 low */
    __m256i high = _mm256_and_si256(_mm256_srli_epi16(bytes, 4), nibble);
    __m512i lanes = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1); /* 0 low, 1 low, 0 high, 1 high */
    lanes = _mm512_shuffle_i64x2(lanes, lanes, _MM_SHUFFLE(3, 1, 2, 0));
    return _mm512_sub_epi8(lanes, _mm512_set1_epi8(8));
}

/* Two int6 groups' 48 packed bytes as their 64 unsigned codes u = q + 32 (each group in unpack_int6's order, the
   first group in the low half). */
static inline __attribute__((always_inline)) VNNI_TARGET __m512i unpack_int6_pair(const uint8_t *packed) {
    return _mm512_inserti64x4(_mm512_castsi256_si512(unpack_int6_unsigned(packed)),
            unpack_int6_unsigned(packed + INT6_GROUP_BYTES), 1);
}

/* The int8 codes of output n's inputs [at, at + 64) (int8's as they are, int4's and int6's unpacked), zero past in,
   with the weight prefetched ahead. */
static inline __attribute__((always_inline)) VNNI_TARGET __m512i load_chunk(
        const void *codes, int format, int n, int in, int at) {
    if (at >= in) {
        return _mm512_setzero_si512();
    }
    int whole = at + 64 <= in;
    if (format == INT4) {
        const uint8_t *packed = (const uint8_t *)codes + ((size_t)n * (in / GROUP) + at / GROUP) * INT4_GROUP_BYTES;
        _mm_prefetch((const char *)packed + PREFETCH_BYTES, _MM_HINT_T0);
        return whole ? unpack_int4_pair(packed) : _mm512_zextsi256_si512(unpack_int4_group(packed));
    }
    if (format == INT6) {
        const uint8_t *packed = (const uint8_t *)codes + ((size_t)n * (in / GROUP) + at / GROUP) * INT6_GROUP_BYTES;
        _mm_prefetch((const char *)packed + PREFETCH_BYTES, _MM_HINT_T0);
        return whole ? _mm512_sub_epi8(unpack_int6_pair(packed), _mm512_set1_epi8(INT6_OFFSET))
                     : _mm512_zextsi256_si512(_mm256_sub_epi8(unpack_int6_unsigned(packed), _mm256_set1_epi8(INT6_OFFSET)));
    }
    const int8_t *w_at = (const int8_t *)codes + (size_t)n * in + at;
    _mm_prefetch((const char *)w_at + PREFETCH_BYTES, _MM_HINT_T0);
    return whole ? _mm512_loadu_si512(w_at) : _mm512_maskz_loadu_epi8(0xffffffffULL, w_at);
}

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
    size_t sizes[] = {cells * 64, cells * 16 * sizeof(float)};
    void *buffers[2];
    if (!scratch_buffers(2, sizes, buffers)) {
        return 0;
    }
    q->offset_codes = buffers[0];
    q->scales = buffers[1];
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

/* One chunk of 64 inputs of the weight, its codes w and its two group scales s (lanes 0 and 1), into each
   row's sums. */
static inline __attribute__((always_inline)) VNNI_TARGET void vnni_chunk(
        const QuantizedRows *q, __m512i w, __m512 s, int c, int rows, vf *acc) {
    const __m512i zero = _mm512_setzero_si512();
    const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
    const __m512i offset = _mm512_set1_epi8((char)0x80);
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

/* The inputs [k0, k1) of output n for the quantized rows, carried as weight_rows carries them. int4's chunks
   wholly inside the weight walk its codes and scales by pointer, with no test of the row's end (a third of
   the loop's instructions were those tests and the index arithmetic: one core, 2048 x 2048 from L3, 18.5 ->
   25.5 GB/s at one row); int8's (the same loop measured slower at 2 rows: 34 -> 24 GB/s) and a ragged last
   chunk take load_chunk. */
static inline __attribute__((always_inline)) VNNI_TARGET void vnni_weight_rows(
        const QuantizedRows *q, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int n, int k0, int k1, int first, int last, vf *carry, int format) {
    const int groups = in / GROUP;
    vf acc[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = first ? vzero() : carry[r];
    }
    int c = k0 / 64;
    const int whole_chunks = (k1 < in - in % 64 ? k1 : in - in % 64) / 64;
    const uint16_t *s_at = scales + (size_t)n * groups + (size_t)c * 2;
    if (format == INT4) {
        const uint8_t *packed = (const uint8_t *)codes + ((size_t)n * groups + (size_t)c * 2) * INT4_GROUP_BYTES;
        for (; c < whole_chunks; c++, packed += 2 * INT4_GROUP_BYTES, s_at += 2) {
            _mm_prefetch((const char *)packed + PREFETCH_BYTES, _MM_HINT_T0);
            vnni_chunk(q, unpack_int4_pair(packed), widen_scales(s_at, 2), c, rows, acc);
        }
    }
    for (; c * 64 < k1; c++) {
        int k = c * 64;
        vnni_chunk(q, load_chunk(codes, format, n, in, k),
                widen_scales(scales + (size_t)n * groups + k / GROUP, k + 64 <= in ? 2 : 1), c, rows, acc);
    }
    finish_rows(acc, rows, last, bias, out, out_features, n, carry);
}

#define VNNI_CALL(k0, k1, first, last, at) \
    vnni_weight_rows(q, codes, scales, bias, out, rows, in, out_features, n, k0, k1, first, last, at, format)

/* An int8 input takes its code and, per 64, 64 bytes of scales: 2 bytes a row. */
static inline __attribute__((always_inline)) VNNI_TARGET void vnni_columns_rows(
        const QuantizedRows *q, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int in, int out_features, int from, int to, int rows, int format) {
    vf carry[TILE_OUTPUTS * MAX_ROWS];
    int n;
    TILED(VNNI_CALL, tile_inputs(rows, in, 2));
}

/* The kernel for each row count and format fixed, so its loops unroll and its format test folds. */
#define VNNI_ROWS(R)                                                                              \
    (format == INT4   ? vnni_columns_rows(q, codes, scales, bias, out, in, out_features, from, to, R, INT4) \
     : format == INT6 ? vnni_columns_rows(q, codes, scales, bias, out, in, out_features, from, to, R, INT6) \
                      : vnni_columns_rows(q, codes, scales, bias, out, in, out_features, from, to, R, INT8))

static VNNI_TARGET void vnni_columns(
        const QuantizedRows *q, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int from, int to, int format) {
    SWITCH_ROWS(VNNI_ROWS)
}

/* ---- int8 x int8 with AVX512_VNNI in transposed blocks: each group's sum in two lanes ---- */

/*
 * The per-chunk kernel above spends more on each row's float32 step (convert, scale, add: one per
 * vpdpbusd, since its 16 lanes hold partial sums of two groups) and on the offset's correction than
 * on the products, and that step grows with the rows while the weight's load does not. Here each
 * BLOCK_INPUTS inputs (8 groups, 4 chunks) of the weight are transposed in registers, once for all
 * rows, so that dot product j of the 4 puts group g's bytes 8j to 8j+7 into lanes 2g and 2g+1: the
 * 4 dot products of a row add into one register that ends with each group's exact sum in two
 * lanes, and the float32 step runs once per 4 chunks. x is transposed the same way when it is
 * quantized. The weight code w goes in as an unsigned w + offset (int8: w + 128; int4: its nibble
 * u = w + 8 as it is) and x's code as the signed operand, so each row's sums start at -offset times
 * its own codes' sums (computed with x, once per product). The integer sums are exact, so the result
 * differs from the per-chunk kernel's only in the order of the float32 sums. It takes every row count
 * since its whole blocks have a loop of their own (blocked_weight_rows): one core, a 2048 x 2048 weight
 * from L3, int4 (its nibbles straight into the transposed form, transposed_int4_block) 1 row 27 -> 55
 * GB/s, 4 rows 14 -> 25, 8 rows 14.5 -> 15.3; int8 1 row 59 -> 67-73, 3 rows 37 -> 52, 4 rows 32 -> 42.
 * (Before that split, int8 at 3 and 4 rows had measured no faster and kept the per-chunk kernel, which
 * now runs only with the blocks switched off.)
 */
#define BLOCK_CHUNKS 4
#define BLOCK_INPUTS (BLOCK_CHUNKS * 64)
/* What the blocks add to a weight code to make it vpdpbusd's unsigned operand: int8's w + 128; int4's
   nibble is w + 8 already. */
#define INT8_WEIGHT_OFFSET 128
#define INT4_WEIGHT_OFFSET 8

/* The offset the blocks' weight codes carry for a format: int6's stored u = q + 32 is unsigned already. */
static inline int weight_offset(int format) {
    return format == INT4 ? INT4_WEIGHT_OFFSET : format == INT6 ? INT6_OFFSET : INT8_WEIGHT_OFFSET;
}

typedef struct {
    int8_t *codes;         /* (blocks, rows, 4, 64): x's codes, each block transposed as the weight's */
    int32_t *corrections;  /* (blocks, rows, 16): -offset times each lane's sum of x's codes */
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

/*
 * A whole block of int4 codes (8 groups, 128 packed bytes) straight into transpose_block's form, each code as the
 * unsigned nibble u = w + 8 (INT4_WEIGHT_OFFSET): group g's codes 8j to 8j + 7 are the low nibbles of its
 * bytes 8j to 8j + 7 for j = 0, 1 and the high nibbles of its bytes 8(j - 2) to 8(j - 2) + 7 for j = 2, 3, so
 * vector j is one two-source qword permutation of the nibbles of the block's two 64-byte halves: 2 loads, 6
 * logic operations and 4 permutations, where unpacking chunk by chunk and transposing took 38. A ragged last
 * block (groups < 8) takes masked loads: its missing groups' codes read as 0.
 */
/*
 * Bytes ahead of a block that its int4 weight is prefetched: one core reads int4 at about the memory's rate (35-40
 * GB/s on Zen 5), at which PREFETCH_BYTES' 4 KB is about 110 ns ahead, no more than a miss takes; 8 KB read a
 * 5632 x 2048 weight from memory 13-20 % faster on one core and 8 rows 3-10 % (compressed_product_bench.c, one core,
 * docs/PERFORMANCE.md "int4 one-row decode step (session 19)").
 */
#ifndef INT4_PREFETCH_BYTES
#define INT4_PREFETCH_BYTES 8192
#endif

static inline __attribute__((always_inline)) VNNI_TARGET void transposed_int4_block(
        const uint8_t *packed, int groups, __m512i t[4]) {
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    const __m512i even = _mm512_set_epi64(14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i odd = _mm512_set_epi64(15, 13, 11, 9, 7, 5, 3, 1);
    __m512i a, b; /* groups 0-3, groups 4-7 */
    if (groups == 8) {
        a = _mm512_loadu_si512(packed);
        b = _mm512_loadu_si512(packed + 64);
    } else {
        int bytes = groups * INT4_GROUP_BYTES;
        a = _mm512_maskz_loadu_epi8(bytes >= 64 ? ~0ULL : (1ULL << bytes) - 1, packed);
        b = _mm512_maskz_loadu_epi8(bytes > 64 ? (1ULL << (bytes - 64)) - 1 : 0, packed + 64);
    }
    _mm_prefetch((const char *)packed + INT4_PREFETCH_BYTES, _MM_HINT_T0);
    _mm_prefetch((const char *)packed + INT4_PREFETCH_BYTES + 64, _MM_HINT_T0);
    __m512i low_a = _mm512_and_si512(a, nibble), low_b = _mm512_and_si512(b, nibble);
    __m512i high_a = _mm512_and_si512(_mm512_srli_epi16(a, 4), nibble);
    __m512i high_b = _mm512_and_si512(_mm512_srli_epi16(b, 4), nibble);
    t[0] = _mm512_permutex2var_epi64(low_a, even, low_b);
    t[1] = _mm512_permutex2var_epi64(low_a, odd, low_b);
    t[2] = _mm512_permutex2var_epi64(high_a, even, high_b);
    t[3] = _mm512_permutex2var_epi64(high_a, odd, high_b);
}

/*
 * A block of int6 codes (8 groups, 192 packed bytes: 24 qwords, group g's low-nibble qwords 3g and 3g + 1 and its
 * high-bit qword 3g + 2) straight into transpose_block's form, each code as its unsigned u = w + 32 (INT6_OFFSET),
 * as transposed_int4_block does int4's: three loads; each group's qword 3g, 3g + 1, 3g + 2 gathered into lane g
 * of a, b, c (a two-source permutation of the first two loads and a masked one of the third); then vector j is
 * the nibbles of a (j = 0, 2: low, high) or b (j = 1, 3) with the high bits of c for codes 8j to 8j + 7 (bits 0-1,
 * 2-3, 4-5, 6-7 of each byte of c) moved to bits 4-5. 3 loads, 6 permutations and 16 logic operations, where
 * unpacking pair by pair and transposing took ~90. A ragged last block (groups < 8) takes masked loads: its
 * missing groups' codes read as 0.
 */
static inline __attribute__((always_inline)) VNNI_TARGET void transposed_int6_block(
        const uint8_t *packed, int groups, __m512i t[4]) {
    __m512i l0, l1, l2; /* qwords 0-7, 8-15, 16-23 */
    if (groups == 8) {
        l0 = _mm512_loadu_si512(packed);
        l1 = _mm512_loadu_si512(packed + 64);
        l2 = _mm512_loadu_si512(packed + 128);
    } else {
        int bytes = groups * INT6_GROUP_BYTES; /* at most 168 */
        l0 = _mm512_maskz_loadu_epi8(bytes >= 64 ? ~0ULL : (1ULL << bytes) - 1, packed);
        l1 = _mm512_maskz_loadu_epi8(bytes >= 128 ? ~0ULL : bytes > 64 ? (1ULL << (bytes - 64)) - 1 : 0, packed + 64);
        l2 = _mm512_maskz_loadu_epi8(bytes > 128 ? (1ULL << (bytes - 128)) - 1 : 0, packed + 128);
    }
    for (int p = 0; p < 3; p++) {
        _mm_prefetch((const char *)packed + PREFETCH_BYTES + 64 * p, _MM_HINT_T0);
    }
    /* lane g of a: qword 3g (g < 6 from l0 and l1, 18 and 21 from l2); of b: 3g + 1 (g >= 5 from l2); c: 3g + 2 */
    __m512i a = _mm512_mask_permutexvar_epi64(_mm512_permutex2var_epi64(l0, _mm512_set_epi64(0, 0, 15, 12, 9, 6, 3, 0), l1),
            0xC0, _mm512_set_epi64(5, 2, 0, 0, 0, 0, 0, 0), l2);
    __m512i b = _mm512_mask_permutexvar_epi64(_mm512_permutex2var_epi64(l0, _mm512_set_epi64(0, 0, 0, 13, 10, 7, 4, 1), l1),
            0xE0, _mm512_set_epi64(6, 3, 0, 0, 0, 0, 0, 0), l2);
    __m512i c = _mm512_mask_permutexvar_epi64(_mm512_permutex2var_epi64(l0, _mm512_set_epi64(0, 0, 0, 14, 11, 8, 5, 2), l1),
            0xE0, _mm512_set_epi64(7, 4, 1, 0, 0, 0, 0, 0), l2);
    const __m512i nibble = _mm512_set1_epi8(0x0F);
    const __m512i top = _mm512_set1_epi8(0x30);
    t[0] = _mm512_or_si512(_mm512_and_si512(a, nibble), _mm512_and_si512(_mm512_slli_epi64(c, 4), top));
    t[1] = _mm512_or_si512(_mm512_and_si512(b, nibble), _mm512_and_si512(_mm512_slli_epi64(c, 2), top));
    t[2] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(a, 4), nibble), _mm512_and_si512(c, top));
    t[3] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(b, 4), nibble),
            _mm512_and_si512(_mm512_srli_epi64(c, 2), top));
}

/* Lanes 2g and 2g+1 of the result hold lane g of values, g from 0 to 7 (a block's groups). */
static inline __attribute__((always_inline)) VNNI_TARGET __m512 pair_lanes(__m512 values) {
    const __m512i pairs = _mm512_set_epi32(7, 7, 6, 6, 5, 5, 4, 4, 3, 3, 2, 2, 1, 1, 0, 0);
    return _mm512_permutexvar_ps(pairs, values);
}

/* The sizes of a BlockedRows' three arrays for rows of in inputs. */
static void blocked_sizes(int rows, int in, size_t sizes[3]) {
    size_t cells = (size_t)rows * ((in + BLOCK_INPUTS - 1) / BLOCK_INPUTS);
    sizes[0] = cells * BLOCK_INPUTS;
    sizes[1] = cells * 16 * sizeof(int32_t);
    sizes[2] = cells * 16 * sizeof(float);
}

/* The rows of x quantized into q's arrays (each 64-byte aligned, blocked_sizes' sizes). */
static VNNI_TARGET void fill_blocked(const float *x, int rows, int in, int weight_offset, BlockedRows *q) {
    const __m512i offset = _mm512_set1_epi8((char)weight_offset);
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
}

/* q's arrays laid out from buffers (blocked_sizes' sizes) for rows of in inputs. */
static void blocked_at(void *const buffers[3], int rows, int in, BlockedRows *q) {
    (void)rows;
    q->blocks = (in + BLOCK_INPUTS - 1) / BLOCK_INPUTS;
    q->codes = buffers[0];
    q->corrections = buffers[1];
    q->scales = buffers[2];
}

static VNNI_TARGET int quantize_blocked(const float *x, int rows, int in, int weight_offset, BlockedRows *q) {
    size_t sizes[3];
    void *buffers[3];
    blocked_sizes(rows, in, sizes);
    if (!scratch_buffers(3, sizes, buffers)) {
        return 0;
    }
    blocked_at(buffers, rows, in, q);
    fill_blocked(x, rows, in, weight_offset, q);
    return 1;
}

/* Block b of output n (its first block_groups groups, the rest 0) into each row's sums. */
static inline __attribute__((always_inline)) VNNI_TARGET void blocked_step(
        const BlockedRows *q, const void *codes, const uint16_t *scales, int rows, int in, int n, int b,
        int block_groups, vf *acc, int format) {
    const int groups = in / GROUP;
    const int k = b * BLOCK_INPUTS;
    __m512i t[4];
    if (format == INT4) {
        transposed_int4_block((const uint8_t *)codes + ((size_t)n * groups + k / GROUP) * INT4_GROUP_BYTES, block_groups, t);
    } else if (format == INT6) {
        transposed_int6_block((const uint8_t *)codes + ((size_t)n * groups + k / GROUP) * INT6_GROUP_BYTES, block_groups, t);
    } else {
        const __m512i offset = _mm512_set1_epi8((char)0x80);
        __m512i chunk[4];
        for (int c = 0; c < BLOCK_CHUNKS; c++) {
            chunk[c] = load_chunk(codes, format, n, in, k + c * 64);
        }
        transpose_block(chunk, t);
        for (int j = 0; j < BLOCK_CHUNKS; j++) {
            t[j] = _mm512_xor_si512(t[j], offset); /* w + 128, unsigned */
        }
    }
    const uint16_t *s_at = scales + (size_t)n * groups + k / GROUP;
    /* A block's 8 scales (a ragged last block's fewer, 0 past them) in one load: a copy of the few through the
       stack stalled the load on the stores (in = 896: 21 against 45 GB/s at one row, one core). */
    __m128i bits = block_groups == 8 ? _mm_loadu_si128((const __m128i *)s_at)
                                     : _mm512_castsi512_si128(_mm512_maskz_loadu_epi16(
                                               (__mmask32)((1U << block_groups) - 1), s_at));
    __m512 weight_scales = pair_lanes(_mm512_cvtph_ps(_mm256_zextsi128_si256(bits)));
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

/* The inputs [k0, k1) (whole blocks, or up to in) of output n for the blocked rows, carried as
   weight_rows carries them: the whole blocks by a loop of their own, so that their group count is a constant
   and the ragged block's masks cost them nothing (a third of the one-row loop's instructions before). */
static inline __attribute__((always_inline)) VNNI_TARGET void blocked_weight_rows(
        const BlockedRows *q, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int n, int k0, int k1, int first, int last, vf *carry, int format) {
    vf acc[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = first ? vzero() : carry[r];
    }
    const int whole = (k1 < in - in % BLOCK_INPUTS ? k1 : in - in % BLOCK_INPUTS) / BLOCK_INPUTS;
    int b = k0 / BLOCK_INPUTS;
    for (; b < whole; b++) {
        blocked_step(q, codes, scales, rows, in, n, b, 8, acc, format);
    }
    for (; b * BLOCK_INPUTS < k1; b++) {
        blocked_step(q, codes, scales, rows, in, n, b, (in - b * BLOCK_INPUTS) / GROUP, acc, format);
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
    blocked_weight_rows(q, codes, scales, bias, out, rows, in, out_features, n, k0, k1, first, last, at, format)

static inline __attribute__((always_inline)) VNNI_TARGET void blocked_columns_rows(
        const BlockedRows *q, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int in, int out_features, int from, int to, int rows, int format) {
    vf carry[TILE_OUTPUTS * MAX_ROWS];
    int n;
    TILED(BLOCKED_CALL, block_tile_inputs(rows, in));
}

#define BLOCKED_ROWS(R)                                                                               \
    (format == INT4   ? blocked_columns_rows(q, codes, scales, bias, out, in, out_features, from, to, R, INT4) \
     : format == INT6 ? blocked_columns_rows(q, codes, scales, bias, out, in, out_features, from, to, R, INT6) \
                      : blocked_columns_rows(q, codes, scales, bias, out, in, out_features, from, to, R, INT8))

static VNNI_TARGET void blocked_columns(
        const BlockedRows *q, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int from, int to, int format) {
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
        int rows, int in, int out_features, int n, int k0, int k1, int first, int last, vf *carry) {
    vf acc[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = first ? vzero() : carry[r];
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
    vf carry[TILE_OUTPUTS * MAX_ROWS];
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

/* The product by the dot-product instructions (int8 and int4 by the transposed-block kernel where blocks is
   set); returns 0 where memory for x's form ran out. */
static int dot_multiply(const float *x, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int format, int rows, int in, int out_features, int from, int to, int blocks) {
    if (format != BFLOAT16 && blocks) {
        BlockedRows q;
        int ok = quantize_blocked(x, rows, in, weight_offset(format), &q);
        if (ok) {
            blocked_columns(&q, codes, scales, bias, out, rows, in, out_features, from, to, format);
        }
        return ok;
    }
    if (format != BFLOAT16) {
        QuantizedRows q;
        int ok = quantize_rows(x, rows, in, &q);
        if (ok) {
            vnni_columns(&q, codes, scales, bias, out, rows, in, out_features, from, to, format);
        }
        return ok;
    }
    size_t bytes = (size_t)rows * in * 2 * sizeof(uint16_t);
    void *split;
    if (!scratch_buffers(1, &bytes, &split)) {
        return 0;
    }
    split_bf16(x, rows, in, split);
    bf16_columns(split, (const uint16_t *)codes, bias, out, rows, in, out_features, from, to);
    return 1;
}

/*
 * The input's prepared form, made once per hand-over and read by every core's calls (CompressedProduct's
 * prepared products): int8 and int4 by the transposed-block kernel, x quantized and transposed as
 * quantize_blocked makes it for one call, so a product's calls share one quantization. Other products have
 * none (prepared_form says 0).
 */
#define PREPARED_ARRAYS 3

static int prepared_form(int format, int dot_products) {
    return GROUPED(format) && (dot_products & cpu_features() & FEATURE_VNNI)
            && (dot_products & VNNI_BLOCKS);
}

static void prepared_sizes(int rows, int in, size_t sizes[PREPARED_ARRAYS]) {
    blocked_sizes(rows, in, sizes);
}

static void prepare_form(const float *x, void *const buffers[PREPARED_ARRAYS], int format, int rows, int in) {
    BlockedRows q;
    blocked_at(buffers, rows, in, &q);
    fill_blocked(x, rows, in, weight_offset(format), &q);
}

static void prepared_multiply(void *const buffers[PREPARED_ARRAYS], const void *codes, const uint16_t *scales,
        const float *bias, float *out, int format, int rows, int in, int out_features, int from, int to) {
    BlockedRows q;
    blocked_at(buffers, rows, in, &q);
    blocked_columns(&q, codes, scales, bias, out, rows, in, out_features, from, to, format);
}

#else

/* ---- int8 x int8, portable: AVX2's vpmaddubsw + vpmaddwd, NEON's sdot (simd.h's dot32) ---- */

/*
 * Each row of x is quantized once per product to int8 per group of 32 (scale max|x| / 127, the
 * weight's scheme, as the AVX512_VNNI kernel does); a group's dot product with the weight's codes is
 * exact in int32 (lanes of partial sums), converted to float32 and added times both scales into
 * float32 sums per row (simd.h's dot32_scaled: 8 lanes on AVX2, 4 on NEON), summed at the end of the output. The result is the AVX512_VNNI kernel's
 * up to the order of the float32 sums.
 */
typedef struct {
    int8_t *codes; /* (groups, rows, 32): each group of every row side by side */
    float *scales; /* (groups, rows) */
} QuantizedRows;

static void fill_rows(const float *x, int rows, int in, QuantizedRows *q) {
    for (int r = 0; r < rows; r++) {
        for (int g = 0; g < in / GROUP; g++) {
            size_t cell = (size_t)g * rows + r;
            q->scales[cell] = quantize_group32(x + (size_t)r * in + (size_t)g * GROUP, q->codes + cell * GROUP);
        }
    }
}

static void quantized_sizes(int rows, int in, size_t sizes[2]) {
    size_t cells = (size_t)rows * (in / GROUP);
    sizes[0] = cells * GROUP;
    sizes[1] = cells * sizeof(float);
}

static int quantize_rows(const float *x, int rows, int in, QuantizedRows *q) {
    size_t sizes[2];
    void *buffers[2];
    quantized_sizes(rows, in, sizes);
    if (!scratch_buffers(2, sizes, buffers)) {
        return 0;
    }
    q->codes = buffers[0];
    q->scales = buffers[1];
    fill_rows(x, rows, in, q);
    return 1;
}

/* One int6 group's 32 codes as int8 codes q in [-32, 31] (unpack_int6's order) in registers. */
#if defined(__AVX2__)
INLINE codes32 unpack6_codes32(const uint8_t *packed) {
    return _mm256_sub_epi8(unpack_int6_unsigned(packed), _mm256_set1_epi8(INT6_OFFSET));
}
#else
INLINE codes32 unpack6_codes32(const uint8_t *packed) {
    uint8x16_t bytes = vld1q_u8(packed);
    uint64x2_t h = vdupq_n_u64(vget_lane_u64(vreinterpret_u64_u8(vld1_u8(packed + INT4_GROUP_BYTES)), 0));
    /* elements 0-15 take h << 4 and h << 2 in their two 8-lane halves, 16-31 h and h >> 2 (unpack_int6) */
    uint8x16_t first = vreinterpretq_u8_u64(vshlq_u64(h, vcombine_s64(vcreate_s64(4), vcreate_s64(2))));
    uint8x16_t second = vreinterpretq_u8_u64(vshlq_u64(h, vcombine_s64(vcreate_s64(0), vcreate_s64((uint64_t)-2))));
    const uint8x16_t top = vdupq_n_u8(0x30);
    const int8x16_t offset = vdupq_n_s8(INT6_OFFSET);
    return (codes32){vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vandq_u8(bytes, vdupq_n_u8(0x0F)), vandq_u8(first, top))), offset),
            vsubq_s8(vreinterpretq_s8_u8(vorrq_u8(vshrq_n_u8(bytes, 4), vandq_u8(second, top))), offset)};
}
#endif

static inline __attribute__((always_inline)) void dot_weight_rows(
        const QuantizedRows *q, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int n, int k0, int k1, int first, int last, vf *carry, int format) {
    const int groups = in / GROUP;
    dotsums acc[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = first ? dotsums_zero() : dotsums_from(carry[r]);
    }
    for (int g = k0 / GROUP; g < k1 / GROUP; g++) {
        codes32 w;
        if (format == INT4) {
            const uint8_t *packed = (const uint8_t *)codes + ((size_t)n * groups + g) * INT4_GROUP_BYTES;
            __builtin_prefetch(packed + PREFETCH_BYTES);
            w = unpack_codes32(packed);
        } else if (format == INT6) {
            const uint8_t *packed = (const uint8_t *)codes + ((size_t)n * groups + g) * INT6_GROUP_BYTES;
            __builtin_prefetch(packed + PREFETCH_BYTES);
            w = unpack6_codes32(packed);
        } else {
            const int8_t *at = (const int8_t *)codes + (size_t)n * in + (size_t)g * GROUP;
            __builtin_prefetch((const char *)at + PREFETCH_BYTES);
            w = load_codes32(at);
        }
        float s = half_value(scales + (size_t)n * groups + g);
        for (int r = 0; r < rows; r++) {
            size_t cell = (size_t)g * rows + r;
            acc[r] = dot32_scaled(acc[r], q->codes + cell * GROUP, w, s * q->scales[cell]);
        }
    }
    vf sums[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        sums[r] = dotsums_to(acc[r]);
    }
    finish_rows(sums, rows, last, bias, out, out_features, n, carry);
}

#define DOT_CALL(k0, k1, first, last, at) \
    dot_weight_rows(q, codes, scales, bias, out, rows, in, out_features, n, k0, k1, first, last, at, format)

/* An int8 input takes its code and a quarter of its group's scale: about 1 byte a row. */
static inline __attribute__((always_inline)) void dot_columns_rows(
        const QuantizedRows *q, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int in, int out_features, int from, int to, int rows, int format) {
    vf carry[TILE_OUTPUTS * MAX_ROWS];
    int n;
    TILED(DOT_CALL, tile_inputs(rows, in, 1));
}

/* The kernel for each row count and format fixed, so its loops unroll and its format test folds. */
#define DOT_ROWS(R)                                                                                \
    (format == INT4   ? dot_columns_rows(&q, codes, scales, bias, out, in, out_features, from, to, R, INT4) \
     : format == INT6 ? dot_columns_rows(&q, codes, scales, bias, out, in, out_features, from, to, R, INT6) \
                      : dot_columns_rows(&q, codes, scales, bias, out, in, out_features, from, to, R, INT8))

/* The int8 dot product is on every CPU this variant runs on (AVX2; NEON, with sdot or without). */
static int cpu_features(void) {
    return FEATURE_VNNI;
}

static int dot_multiply(const float *x, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int format, int rows, int in, int out_features, int from, int to, int blocks) {
    (void)blocks;
    QuantizedRows q;
    int ok = quantize_rows(x, rows, in, &q);
    if (ok) {
        SWITCH_ROWS(DOT_ROWS)
    }
    return ok;
}

/* The input's prepared form (as the AVX-512 variant's): int8 and int4, x quantized as quantize_rows makes it. */
#define PREPARED_ARRAYS 2

static int prepared_form(int format, int dot_products) {
    return GROUPED(format) && (dot_products & FEATURE_VNNI);
}

static void prepared_sizes(int rows, int in, size_t sizes[PREPARED_ARRAYS]) {
    quantized_sizes(rows, in, sizes);
}

static void prepare_form(const float *x, void *const buffers[PREPARED_ARRAYS], int format, int rows, int in) {
    (void)format;
    QuantizedRows q = {buffers[0], buffers[1]};
    fill_rows(x, rows, in, &q);
}

static void prepared_multiply(void *const buffers[PREPARED_ARRAYS], const void *codes, const uint16_t *scales,
        const float *bias, float *out, int format, int rows, int in, int out_features, int from, int to) {
    QuantizedRows q = {buffers[0], buffers[1]};
    SWITCH_ROWS(DOT_ROWS)
}

#endif

/* Weight row n widened to float32 into out (in floats). */
static void widen_row(const void *codes, const uint16_t *scales, int format, int in, int n, float *out) {
    const int groups = in / GROUP;
    if (format == INT4 || format == INT6) {
        for (int g = 0; g < groups; g++) {
            int8_t unpacked[GROUP];
            if (format == INT6) {
                unpack_int6((const uint8_t *)codes + ((size_t)n * groups + g) * INT6_GROUP_BYTES, unpacked);
            } else {
                unpack_int4((const uint8_t *)codes + ((size_t)n * groups + g) * INT4_GROUP_BYTES, unpacked);
            }
            float s = half_value(scales + (size_t)n * groups + g);
            for (int i = 0; i < GROUP / VL; i++) {
                vstore(out + g * GROUP + i * VL, widen_int8(unpacked + i * VL) * s);
            }
        }
        return;
    }
    for (int k = 0; k < in; k += VL) {
        size_t index = (size_t)n * in + k;
        vf v = widen8(codes, index, format);
        vstore(out + k, format == INT8 ? v * half_value(scales + (size_t)n * groups + k / GROUP) : v);
    }
}

#endif
