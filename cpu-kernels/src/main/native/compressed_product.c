/*
 * The products of 1 to 8 rows of x (a decode step) with a compressed weight, reading each weight
 * code once for all rows, VL floats a vector (simd.h): out = x @ weight^T + bias, weight (out, in) held as
 *   format 0: bfloat16 bits (widened by a 16-bit shift),
 *   format 1: IEEE half bits (widened by vcvtph2ps),
 *   format 2: int8 codes with one float16 scale per 32 inputs of an output (llama.cpp's Q8_0),
 *   format 3: 4-bit codes, two a byte, with one float16 scale per 32 inputs (llama.cpp's Q4_0), each
 *     group unpacked to the int8 codes q - 8 in registers and then taken as int8's (unpack_int4),
 *   format 4: 6-bit codes with one float16 scale per 32 inputs, 24 bytes a group (compressed_format.h's
 *     unpack_int6), each group unpacked to the int8 codes q in [-32, 31] and taken as int8's as int4's are,
 * each VL codes widened to float32 in registers (int8 times its scale) and multiplied into float32
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
 *     into float32 accumulators (each 256 inputs of the weight are transposed so that a
 *     group's sum ends in two lanes, and the float32 step runs once per 4 dot products). The result is
 *     the product of the weight with x rounded to its int8 grid (an error of at most max|x| / 254 per
 *     element of a group);
 *   bfloat16 with AVX512_BF16, for 1 or 2 rows of x (BF16_DOT_ROWS): x is split into bfloat16 hi + lo
 *     (hi = x rounded, lo = the rest rounded: 16 bits of x's 24) and vdpbf16ps multiplies the weight
 *     codes by both, so the result is the product with x to about 2^-17 of each element.
 * The AVX2 and NEON variants have the int8 one, by simd.h's dot32 (vpmaddubsw, sdot) with x quantized
 * the same way (compressed_product_dot.h); their widening kernel is the AVX-512 one at 8 floats a vector.
 * int4 takes int8's kernels, each group of 16 packed bytes unpacked to 32 int8 codes in [-8, 7] just
 * before its dot product or widening, so each packed byte is read once (half int8's bytes) and the
 * integer sums are as exact as int8's: the dot-product result is the product of the weight with x on
 * its int8 grid, as for int8 (llama.cpp's Q4_0 x Q8_0 dot product). int6 takes them the same way, each group
 * of 24 packed bytes unpacked to 32 int8 codes in [-32, 31] (unpack_int6, and the dot kernels' own unpacking in
 * registers), so its results are as exact as int8's and int4's.
 */
#include <jni.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "compressed_format.h"
#include "simd.h"

#define MAX_ROWS 8
/* Bytes ahead of the current codes that the weight is prefetched (a native bench may build with another). */
#ifndef PREFETCH_BYTES
#define PREFETCH_BYTES 4096
#endif
/* Bytes of the rows of x (in the form a kernel reads) that a pass over the weight keeps in L1. */
#define X_TILE_BYTES 24576
/* Outputs whose sums one pass over a tile of the inputs carries (tiled products only). */
#define TILE_OUTPUTS 32

/* The most rows a bfloat16 product takes vdpbf16ps for: x's two halves cost two loads and two dot
   products a row per 32 weights, against the widening kernel's two fused multiply-adds on one
   load of x, so from 3 rows the widening (and exact) kernel is the faster. */
#define BF16_DOT_ROWS 2

/* The CPU features compressed_product_features reports (CompressedProduct's constants): FEATURE_VNNI is the
   int8 dot product (AVX512_VNNI; AVX2's and NEON's in the portable variant), FEATURE_BF16 AVX512_BF16. */
enum { FEATURE_VNNI = 1, FEATURE_BF16 = 2 };

/* The dot-product bit (CompressedProduct.VNNI_BLOCKS) that lets int8 and int4 products take the
   transposed-block kernel. */
#define VNNI_BLOCKS 4

/*
 * The calling thread's memory for x's forms (quantized, split, interleaved), grown as a product needs and kept for
 * its next: a decode step makes hundreds of products (each core's runs of each projection), and allocating and
 * freeing their buffers every time showed in its profile (glibc's malloc_consolidate and unlink_chunk). A
 * thread's memory is freed when it ends. One product at a time per thread uses it.
 */
typedef struct {
    void *memory;
    size_t bytes;
} Scratch;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void free_scratch(void *scratch) {
    free(((Scratch *)scratch)->memory);
    free(scratch);
}

static void make_scratch_key(void) {
    pthread_key_create(&scratch_key, free_scratch);
}

/* count buffers of sizes[i] bytes, each 64-byte aligned, in the calling thread's memory; 0 where it ran out. */
static int scratch_buffers(int count, const size_t *sizes, void **buffers) {
    pthread_once(&scratch_once, make_scratch_key);
    Scratch *scratch = pthread_getspecific(scratch_key);
    if (scratch == NULL) {
        scratch = calloc(1, sizeof(Scratch));
        if (scratch == NULL || pthread_setspecific(scratch_key, scratch) != 0) {
            free(scratch);
            return 0;
        }
    }
    size_t total = 0;
    for (int i = 0; i < count; i++) {
        total += (sizes[i] + 63) / 64 * 64;
    }
    if (total > scratch->bytes) {
        free(scratch->memory);
        scratch->memory = aligned_alloc(64, total);
        scratch->bytes = scratch->memory == NULL ? 0 : total;
        if (scratch->memory == NULL) {
            return 0;
        }
    }
    char *at = scratch->memory;
    for (int i = 0; i < count; i++) {
        buffers[i] = at;
        at += (sizes[i] + 63) / 64 * 64;
    }
    return 1;
}

/* VL codes from index on, widened to float32 (int8 not yet scaled). */
static inline __attribute__((always_inline)) vf widen8(const void *codes, size_t index, int format) {
    if (format == BFLOAT16) {
        return widen_bf16((const uint16_t *)codes + index);
    }
    if (format == FLOAT16) {
        return widen_f16((const uint16_t *)codes + index);
    }
    return widen_int8((const int8_t *)codes + index);
}

static inline __attribute__((always_inline)) void finish_rows(
        const vf *acc, int rows, int last, const float *bias, float *out, int out_features, int n, vf *carry) {
    for (int r = 0; r < rows; r++) {
        if (last) {
            out[(size_t)r * out_features + n] = vsum(acc[r]) + (bias ? bias[n] : 0.0f);
        } else {
            carry[r] = acc[r];
        }
    }
}

static inline __attribute__((always_inline)) void weight_rows(
        const float *x, const void *codes, const uint16_t *scales, const float *bias, float *out,
        int rows, int in, int out_features, int n, int k0, int k1, int first, int last, vf *carry, int format) {
    const int groups = in / GROUP;
    vf acc[MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[r] = first ? vzero() : carry[r];
    }
    for (int k = k0; k < k1; k += GROUP) {
        size_t base = (size_t)n * in + k;
        vf w[GROUP / VL];
        if (format == INT4) {
            const uint8_t *packed = (const uint8_t *)codes + ((size_t)n * groups + k / GROUP) * INT4_GROUP_BYTES;
            __builtin_prefetch(packed + PREFETCH_BYTES);
            int8_t unpacked[GROUP];
            unpack_int4(packed, unpacked);
            for (int i = 0; i < GROUP / VL; i++) {
                w[i] = widen_int8(unpacked + i * VL);
            }
        } else if (format == INT6) {
            const uint8_t *packed = (const uint8_t *)codes + ((size_t)n * groups + k / GROUP) * INT6_GROUP_BYTES;
            __builtin_prefetch(packed + PREFETCH_BYTES);
            int8_t unpacked[GROUP];
            unpack_int6(packed, unpacked);
            for (int i = 0; i < GROUP / VL; i++) {
                w[i] = widen_int8(unpacked + i * VL);
            }
        } else {
            __builtin_prefetch((const char *)codes + base * (format == INT8 ? 1 : 2) + PREFETCH_BYTES);
            for (int i = 0; i < GROUP / VL; i++) {
                w[i] = widen8(codes, base + i * VL, format);
            }
        }
        if (GROUPED(format)) {
            float s = half_value(scales + (size_t)n * groups + k / GROUP);
            for (int i = 0; i < GROUP / VL; i++) {
                w[i] = w[i] * s;
            }
        }
        for (int r = 0; r < rows; r++) {
            const float *xr = x + ((size_t)(k / GROUP) * rows + r) * GROUP;
            for (int i = 0; i < GROUP / VL; i++) {
                acc[r] = w[i] * vload(xr + i * VL) + acc[r];
            }
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
    vf carry[TILE_OUTPUTS * MAX_ROWS];
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

#include "compressed_product_dot.h"

JNIEXPORT jint JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_features(JNIEnv *env, jclass cls) {
    (void)env;
    (void)cls;
    return cpu_features();
}

/* x (rows, in) with each 32 inputs of every row side by side, (in / 32, rows, 32), as weight_rows
   reads it. */
static void interleave_rows(const float *x, int rows, int in, float *out) {
    for (int r = 0; r < rows; r++) {
        for (int k = 0; k < in; k += GROUP) {
            float *to = out + ((size_t)(k / GROUP) * rows + r) * GROUP;
            memcpy(to, x + (size_t)r * in + k, sizeof(float) * GROUP);
        }
    }
}

/* The product by the widening kernel; returns 0 where memory for x's interleaved rows ran out. One
   row is already in that form. */
static int widening_multiply(const float *x, const void *codes, const uint16_t *scales, const float *bias,
        float *out, int format, int rows, int in, int out_features, int from, int to) {
    if (rows > 1) {
        size_t bytes = (size_t)rows * in * sizeof(float);
        void *interleaved;
        if (!scratch_buffers(1, &bytes, &interleaved)) {
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
        case INT8:
            BY_ROWS(INT8)
            break;
        case INT6:
            BY_ROWS(INT6)
            break;
        default:
            BY_ROWS(INT4)
            break;
    }
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
            || (GROUPED(format) && scales == NULL)) {
        fail(env, "compressed product: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (rows < 1 || rows > MAX_ROWS || in % GROUP != 0) {
        fail(env, "compressed product: rows must be 1 to 8 and in a multiple of 32");
        return;
    }
    if (format < BFLOAT16 || format > INT6) {
        fail(env, "compressed product: unknown format");
        return;
    }
    if ((GROUPED(format) && (features & FEATURE_VNNI))
            || (format == BFLOAT16 && (features & FEATURE_BF16) && rows <= BF16_DOT_ROWS)) {
        if (!dot_multiply(x, codes, scales, bias, out, format, rows, in, out_features, from, to,
                    dot_products & VNNI_BLOCKS)) {
            fail(env, "compressed product: no memory for the input's int8 or bfloat16 form");
        }
        return;
    }
    if (!widening_multiply(x, codes, scales, bias, out, format, rows, in, out_features, from, to)) {
        fail(env, "compressed product: no memory for the input's rows side by side");
    }
}

/*
 * A prepared input's arrays in memory of prepared_bytes' size: each 64-byte aligned from the first aligned
 * byte, so the Java side's buffer (aligned as the JVM allocates it) serves as it is.
 */
static size_t lay_out_prepared(void *memory, int rows, int in, void *buffers[PREPARED_ARRAYS]) {
    size_t sizes[PREPARED_ARRAYS];
    prepared_sizes(rows, in, sizes);
    char *at = memory == NULL ? NULL : (char *)(((uintptr_t)memory + 63) & ~(uintptr_t)63);
    size_t total = 64;
    for (int i = 0; i < PREPARED_ARRAYS; i++) {
        if (buffers != NULL) {
            buffers[i] = at;
            at += (sizes[i] + 63) / 64 * 64;
        }
        total += (sizes[i] + 63) / 64 * 64;
    }
    return total;
}

/* Bytes of the prepared form of rows of x for a product in format, or 0 where that product has none. */
JNIEXPORT jint JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_preparedBytes(
        JNIEnv *env, jclass cls, jint format, jint rows, jint in, jint dot_products) {
    (void)env;
    (void)cls;
    if (rows < 1 || rows > MAX_ROWS || in < GROUP || in % GROUP != 0 || !prepared_form(format, dot_products)) {
        return 0;
    }
    size_t bytes = lay_out_prepared(NULL, rows, in, NULL);
    return bytes > 0x7fffffff ? 0 : (jint)bytes;
}

/* x (rows, in) into its prepared form in form (preparedBytes' size), for multiplyPrepared's calls. */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_prepare(
        JNIEnv *env, jclass cls, jobject x_buffer, jobject form_buffer, jint format, jint rows, jint in,
        jint dot_products) {
    (void)cls;
    const float *x = (const float *)(*env)->GetDirectBufferAddress(env, x_buffer);
    void *form = (*env)->GetDirectBufferAddress(env, form_buffer);
    if (x == NULL || form == NULL) {
        fail(env, "compressed product: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (rows < 1 || rows > MAX_ROWS || in < GROUP || in % GROUP != 0 || !prepared_form(format, dot_products)
            || (*env)->GetDirectBufferCapacity(env, form_buffer) < (jlong)lay_out_prepared(NULL, rows, in, NULL)) {
        fail(env, "compressed product: no prepared form for this product, or its buffer too small");
        return;
    }
    void *buffers[PREPARED_ARRAYS];
    lay_out_prepared(form, rows, in, buffers);
    prepare_form(x, buffers, format, rows, in);
}

/* out[:, from:to] = x @ weight^T + bias with x in the prepared form prepare wrote for the same format, rows, in. */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_multiplyPrepared(
        JNIEnv *env, jclass cls, jobject form_buffer, jobject codes_buffer, jobject scales_buffer,
        jobject bias_buffer, jobject out_buffer, jint format, jint rows, jint in, jint out_features,
        jint from, jint to) {
    (void)cls;
    void *form = (*env)->GetDirectBufferAddress(env, form_buffer);
    const void *codes = (*env)->GetDirectBufferAddress(env, codes_buffer);
    const uint16_t *scales =
            scales_buffer == NULL ? NULL : (const uint16_t *)(*env)->GetDirectBufferAddress(env, scales_buffer);
    const float *bias = bias_buffer == NULL ? NULL : (const float *)(*env)->GetDirectBufferAddress(env, bias_buffer);
    float *out = (float *)(*env)->GetDirectBufferAddress(env, out_buffer);
    if (form == NULL || codes == NULL || scales == NULL || out == NULL || (bias_buffer != NULL && bias == NULL)) {
        fail(env, "compressed product: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (rows < 1 || rows > MAX_ROWS || in < GROUP || in % GROUP != 0 || !GROUPED(format)) {
        fail(env, "compressed product: a prepared product takes int8, int4 or int6, 1 to 8 rows, in a multiple of 32");
        return;
    }
    void *buffers[PREPARED_ARRAYS];
    lay_out_prepared(form, rows, in, buffers);
    prepared_multiply(buffers, codes, scales, bias, out, format, rows, in, out_features, from, to);
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
    if (codes == NULL || out == NULL || (GROUPED(format) && scales == NULL)) {
        fail(env, "compressed widening: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (in % GROUP != 0 || format < BFLOAT16 || format > INT6) {
        fail(env, "compressed widening: in must be a multiple of 32 and the format known");
        return;
    }
    for (int n = from; n < to; n++) {
        widen_row(codes, scales, format, in, n, out + (size_t)n * in);
    }
}
