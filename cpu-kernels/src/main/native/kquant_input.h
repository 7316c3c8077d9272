/*
 * q4_k's input (kquant_product.c): x's rows quantized to int8 per super-block of 256, in the layout each
 * variant's kernel reads, and the chunks of it a pass over the weight's rows takes. Included by
 * kquant_product.c after its constants (KQ_WEIGHTS, KQ_SUBS, KQ_X_L1_BYTES) and simd.h's vectors; one
 * concern of that file, kept apart so that each reads on its own.
 */
#ifndef LLMZOO_KQUANT_INPUT_H
#define LLMZOO_KQUANT_INPUT_H

/*
 * Where each kernel wants x's 256 codes of a super-block: NEON's in their natural order; the x86 kernels'
 * in the order their transposed weight codes meet them, so that one load of x serves a whole vector of
 * the weight's codes.
 */
enum { KQ_X_NATURAL, KQ_X_T256, KQ_X_T512 };

/* The dword (4 codes) of the natural order that goes to dword `to` (0 to 63) of a row's 256 codes. */
static int kq_source_dword(int layout, int to) {
    if (layout == KQ_X_T256) { /* kq_sums' vector v, lane l: sub-block 2 (l % 4) + v / 4, dword v % 4 + 4 (l / 4) */
        int v = to / 8, l = to % 8;
        return 8 * (2 * (l % 4) + v / 4) + v % 4 + 4 * (l / 4);
    }
    if (layout == KQ_X_T512) { /* kq_t512's vector k, lane l: sub-block l / 2, dword 2k + l % 2 */
        int k = to / 16, l = to % 16;
        return 8 * (l / 2) + 2 * k + l % 2;
    }
    return to;
}

/*
 * x's rows as int8 codes, super-block by super-block with every row's 256 codes together (blocks, rows,
 * 256) in the kernel's layout, so the kernel finds a row's codes, scale and sums at a fixed offset from
 * the block's; each row padded with zeros to whole super-blocks (a row of the weight cut short at in needs
 * no other path: its codes past in multiply zeros). A scale per super-block (blocks, rows), and the codes'
 * sums per 32 times that scale (blocks, rows, 8; zeros past in) for the mins' term, sub-block j's in lane j,
 * so two rows' sums are one 16-lane vector.
 */
typedef struct {
    int8_t *codes;
    float *scales;
    float *sums;
    int blocks;
    int chunk; /* super-blocks a pass over the weight's rows reads at a time (kq_chunk) */
} kq_input;

typedef int8_t kq_codes __attribute__((vector_size(VL)));
typedef int32_t kq_i4 __attribute__((vector_size(16)));
typedef float kq_f4v __attribute__((vector_size(16)));

/* The sum of v's lanes, by halves (integers: exact in any order). */
static inline __attribute__((always_inline)) int32_t kq_lane_sum(vi v) {
#if VL == 16
    kq_i8 h = __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7) + __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15);
#else
    kq_i8 h = v;
#endif
    kq_i4 q = __builtin_shufflevector(h, h, 0, 1, 2, 3) + __builtin_shufflevector(h, h, 4, 5, 6, 7);
    q += __builtin_shufflevector(q, q, 2, 3, 0, 1);
    return q[0] + q[1];
}

/* The larger of a and b in each lane (neither NaN). */
#define KQ_MAX(T, I, a, b) ((T)((((I)((a) > (b))) & (I)(a)) | (~((I)((a) > (b))) & (I)(b))))

/* The largest of v's lanes (none NaN), by halves: simd.h's vmaxall, a lane at a time, is one long chain. */
static inline __attribute__((always_inline)) float kq_lane_max(vf v) {
#if VL == 16
    kq_f8 h = KQ_MAX(kq_f8, kq_i8, __builtin_shufflevector(v, v, 0, 1, 2, 3, 4, 5, 6, 7),
            __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15));
#else
    kq_f8 h = v;
#endif
    kq_f4v q = KQ_MAX(kq_f4v, kq_i4, __builtin_shufflevector(h, h, 0, 1, 2, 3), __builtin_shufflevector(h, h, 4, 5, 6, 7));
    q = KQ_MAX(kq_f4v, kq_i4, q, __builtin_shufflevector(q, q, 2, 3, 0, 1));
    return q[0] > q[1] ? q[0] : q[1];
}

/*
 * One row's `count` inputs of a super-block (a multiple of 32) as int8 codes on the grid of max|x| / 127
 * (rounded to nearest even, clamped to [-127, 127]: compressed_format.h's quantize_group, lane for lane)
 * written straight to the kernel's layout (dword i of the natural order to dword dest[i] of codes; codes
 * and sums past count zeros: the padding), their sums per 32 times the scale into sums; returns the scale.
 * Vectors of simd.h, the lanes reduced by halves (the scalar loop this replaces took 14 us for 8 rows of
 * 2048, now 3.8: a twentieth of an 8-row product of 5632 x 2048 from memory, and each core's call of each
 * weight of a hand-over pays it).
 */
static float kq_quantize_block(const float *xs, int count, const uint8_t *dest, int8_t *codes, float *sums) {
    vf amax = vzero();
    for (int l = 0; l < count; l += VL) {
        amax = vmax(amax, vabs(vload(xs + l)));
    }
    float d = kq_lane_max(amax) / 127.0f;
    float inverse = d > 0.0f ? 1.0f / d : 0.0f;
    for (int g = 0; g * GROUP < count; g++) {
        vi sum = {0};
        for (int l = g * GROUP; l < (g + 1) * GROUP; l += VL) {
            vf v = vround(vload(xs + l) * inverse);
            v = vmax(vset1(-127.0f), v);
            vi c = __builtin_convertvector(vblend(v > 127.0f, vset1(127.0f), v), vi);
            sum += c;
            kq_codes narrow = __builtin_convertvector(c, kq_codes);
            for (int w = 0; w < VL / 4; w++) {
                memcpy(codes + 4 * dest[l / 4 + w], (const int8_t *)&narrow + 4 * w, 4);
            }
        }
        sums[g] = d * (float)kq_lane_sum(sum);
    }
    for (int g = count / GROUP; g < KQ_SUBS; g++) {
        sums[g] = 0.0f;
    }
    for (int i = count / 4; i < KQ_WEIGHTS / 4; i++) {
        memset(codes + 4 * dest[i], 0, 4);
    }
    return d;
}

/*
 * Super-blocks of x a pass over the weight's rows reads at a time: all of them where `rows` rows' codes,
 * scales and sums fit KQ_X_L1_BYTES, else nearly equal chunks that do.
 */
static int kq_chunk(int rows, int blocks) {
    size_t bytes = (size_t)rows * (KQ_WEIGHTS + (1 + KQ_SUBS) * sizeof(float));
    size_t passes = ((size_t)blocks * bytes + KQ_X_L1_BYTES - 1) / KQ_X_L1_BYTES;
    return passes <= 1 ? blocks : (int)(((size_t)blocks + passes - 1) / passes);
}

/*
 * x's int8 form for `rows` rows (at most 8) of `in` inputs in the memory from `memory` on (from its first
 * 64-byte aligned byte, so a Java direct buffer serves as it is): the scales, the sums and the codes, each
 * 64-byte aligned. Returns the bytes it takes from `memory`; with `memory` NULL, only that.
 */
static size_t kq_lay_out(void *memory, int rows, int in, kq_input *q) {
    const int blocks = (in + KQ_WEIGHTS - 1) / KQ_WEIGHTS;
    size_t cells = (size_t)rows * blocks;
    size_t scales = (cells * sizeof(float) + 63) / 64 * 64, sums = (cells * KQ_SUBS * sizeof(float) + 63) / 64 * 64;
    if (memory != NULL) {
        char *at = (char *)(((uintptr_t)memory + 63) & ~(uintptr_t)63);
        q->blocks = blocks;
        q->chunk = kq_chunk(rows, blocks);
        q->scales = (float *)at;
        q->sums = (float *)(at + scales);
        q->codes = (int8_t *)(at + scales + sums);
    }
    return 63 + scales + sums + cells * KQ_WEIGHTS;
}

/* x's rows (rows, in) quantized into the form kq_lay_out laid out for them, in the kernel's x layout. */
static void kq_quantize(const float *x, int rows, int in, int layout, const kq_input *q) {
    uint8_t dest[KQ_WEIGHTS / 4]; /* where each dword of the natural order goes */
    for (int to = 0; to < KQ_WEIGHTS / 4; to++) {
        dest[kq_source_dword(layout, to)] = (uint8_t)to;
    }
    for (int r = 0; r < rows; r++) {
        for (int b = 0; b < q->blocks; b++) {
            int start = b * KQ_WEIGHTS, count = in - start < KQ_WEIGHTS ? in - start : KQ_WEIGHTS;
            size_t cell = (size_t)b * rows + r;
            q->scales[cell] = kq_quantize_block(x + (size_t)r * in + start, count, dest, q->codes + cell * KQ_WEIGHTS,
                    q->sums + cell * KQ_SUBS);
        }
    }
}

#endif
