/*
 * The products of 1 to 8 rows of x (a decode step) with a compressed weight, reading each weight
 * code once for all rows with AVX-512: out = x @ weight^T + bias, weight (out, in) held as
 *   format 0: bfloat16 bits (widened by a 16-bit shift),
 *   format 1: IEEE half bits (widened by vcvtph2ps),
 *   format 2: int8 codes with one float32 scale per 32 inputs of an output (llama.cpp's Q8_0),
 * each 16 codes widened to float32 in registers (int8 times its scale) and multiplied into float32
 * accumulators, so the product is that of the weight widened exactly to float32
 * (io.github.djlllmzoo.blocks.CompressedWeight#toFloatArray) up to the order of the sums.
 *
 * Two weight rows at a time, 32 inputs per step, prefetched ahead; each output's 16 lanes are summed
 * at the end of its row. Called by io.github.djlllmzoo.cpu.CompressedProduct with direct buffers it
 * has checked: x float32 (rows, in) contiguous, in a multiple of 32, the sizes below.
 */
#include <immintrin.h>
#include <jni.h>
#include <stddef.h>
#include <stdint.h>

#define MAX_ROWS 8
#define GROUP 32
/* Bytes ahead of the current codes that each weight row is prefetched. */
#define PREFETCH_BYTES 1024

enum { BFLOAT16 = 0, FLOAT16 = 1, INT8 = 2 };

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

static inline __attribute__((always_inline)) void weight_rows(
        const float *x, const void *codes, const float *scales, const float *bias, float *out,
        int rows, int in, int out_features, int n, int pair, int format) {
    const int element = format == INT8 ? 1 : 2;
    const int groups = in / GROUP;
    __m512 acc[2][MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[0][r] = _mm512_setzero_ps();
        acc[1][r] = _mm512_setzero_ps();
    }
    for (int k = 0; k < in; k += GROUP) {
        for (int p = 0; p <= pair; p++) {
            size_t base = (size_t)(n + p) * in + k;
            _mm_prefetch((const char *)codes + base * element + PREFETCH_BYTES, _MM_HINT_T0);
            __m512 lo = widen16(codes, base, format);
            __m512 hi = widen16(codes, base + 16, format);
            if (format == INT8) {
                __m512 s = _mm512_set1_ps(scales[(size_t)(n + p) * groups + k / GROUP]);
                lo = _mm512_mul_ps(lo, s);
                hi = _mm512_mul_ps(hi, s);
            }
            for (int r = 0; r < rows; r++) {
                const float *xr = x + (size_t)r * in + k;
                acc[p][r] = _mm512_fmadd_ps(lo, _mm512_loadu_ps(xr), acc[p][r]);
                acc[p][r] = _mm512_fmadd_ps(hi, _mm512_loadu_ps(xr + 16), acc[p][r]);
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * out_features + n;
        for (int p = 0; p <= pair; p++) {
            o[p] = _mm512_reduce_add_ps(acc[p][r]) + (bias ? bias[n + p] : 0.0f);
        }
    }
}

static inline __attribute__((always_inline)) void columns(
        const float *x, const void *codes, const float *scales, const float *bias, float *out,
        int rows, int in, int out_features, int from, int to, int format) {
    int n = from;
    for (; n + 2 <= to; n += 2) {
        weight_rows(x, codes, scales, bias, out, rows, in, out_features, n, 1, format);
    }
    if (n < to) {
        weight_rows(x, codes, scales, bias, out, rows, in, out_features, n, 0, format);
    }
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

static void fail(JNIEnv *env, const char *message) {
    (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"), message);
}

/* out[:, from:to] = x @ weight^T + bias, weight (out_features, in) compressed as format says. */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_multiply(
        JNIEnv *env, jclass cls, jobject x_buffer, jobject codes_buffer, jobject scales_buffer,
        jobject bias_buffer, jobject out_buffer, jint format, jint rows, jint in, jint out_features,
        jint from, jint to) {
    (void)cls;
    const float *x = (const float *)(*env)->GetDirectBufferAddress(env, x_buffer);
    const void *codes = (*env)->GetDirectBufferAddress(env, codes_buffer);
    const float *scales =
            scales_buffer == NULL ? NULL : (const float *)(*env)->GetDirectBufferAddress(env, scales_buffer);
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
        default:
            fail(env, "compressed product: unknown format");
            break;
    }
}

/* Rows [from, to) of the weight widened to float32 into out (out_features, in), for a prefill's
   product by the engine; the same widening as the product's, so both use the same weight. */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_widen(
        JNIEnv *env, jclass cls, jobject codes_buffer, jobject scales_buffer, jobject out_buffer, jint format,
        jint in, jint from, jint to) {
    (void)cls;
    const void *codes = (*env)->GetDirectBufferAddress(env, codes_buffer);
    const float *scales =
            scales_buffer == NULL ? NULL : (const float *)(*env)->GetDirectBufferAddress(env, scales_buffer);
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
                    : _mm512_mul_ps(widen16(codes, index, INT8),
                            _mm512_set1_ps(scales[(size_t)n * groups + k / GROUP]));
            _mm512_storeu_ps(out + index, v);
        }
    }
}
