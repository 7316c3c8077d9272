/*
 * libllmzoo-few-row-product: out = x @ weight^T + bias for a few rows of x (a decode step of a
 * batch), reading each weight row once for all rows with AVX-512.
 *
 * oneMKL, as PyTorch 2.7.1 calls it, reads a float32 weight at 14-17 GB/s a core when it multiplies
 * 8 rows by it, against 31 GB/s for one row, on the machine of docs/PERFORMANCE.md, although the
 * core's multiply-add rate would allow the full bandwidth. This kernel streams two weight rows at
 * a time (prefetched 8 KiB ahead), multiplies each 16-float piece with the same piece of every row
 * of x (kept in L1), and sums each product's 16 lanes at the end of the row.
 *
 * Called by io.github.djlllmzoo.blocks.FewRowProduct with direct buffers over PyTorch tensors that
 * Java has checked: float32, contiguous, the sizes below. Compiled with AVX-512 enabled; Java loads
 * it only on a CPU that has AVX-512F.
 */
#include <immintrin.h>
#include <jni.h>
#include <stddef.h>

#define MAX_ROWS 8
/* Floats ahead of the current piece that each weight row is prefetched. */
#define PREFETCH 2048

static inline __attribute__((always_inline)) void weight_rows(
        const float *x, const float *w, const float *bias, float *out, int rows, int in,
        int out_features, int n, int pair) {
    __m512 acc[2][MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[0][r] = _mm512_setzero_ps();
        acc[1][r] = _mm512_setzero_ps();
    }
    const float *w0 = w + (size_t)n * in;
    const float *w1 = w0 + in;
    int k = 0;
    for (; k + 16 <= in; k += 16) {
        _mm_prefetch((const char *)(w0 + k + PREFETCH), _MM_HINT_T0);
        __m512 v0 = _mm512_loadu_ps(w0 + k);
        __m512 v1 = _mm512_setzero_ps();
        if (pair) {
            _mm_prefetch((const char *)(w1 + k + PREFETCH), _MM_HINT_T0);
            v1 = _mm512_loadu_ps(w1 + k);
        }
        for (int r = 0; r < rows; r++) {
            __m512 xr = _mm512_loadu_ps(x + (size_t)r * in + k);
            acc[0][r] = _mm512_fmadd_ps(v0, xr, acc[0][r]);
            if (pair) {
                acc[1][r] = _mm512_fmadd_ps(v1, xr, acc[1][r]);
            }
        }
    }
    if (k < in) { /* the last in % 16 columns */
        __mmask16 mask = (__mmask16)((1u << (in - k)) - 1);
        __m512 v0 = _mm512_maskz_loadu_ps(mask, w0 + k);
        __m512 v1 = pair ? _mm512_maskz_loadu_ps(mask, w1 + k) : _mm512_setzero_ps();
        for (int r = 0; r < rows; r++) {
            __m512 xr = _mm512_maskz_loadu_ps(mask, x + (size_t)r * in + k);
            acc[0][r] = _mm512_fmadd_ps(v0, xr, acc[0][r]);
            if (pair) {
                acc[1][r] = _mm512_fmadd_ps(v1, xr, acc[1][r]);
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * out_features + n;
        o[0] = _mm512_reduce_add_ps(acc[0][r]) + (bias ? bias[n] : 0.0f);
        if (pair) {
            o[1] = _mm512_reduce_add_ps(acc[1][r]) + (bias ? bias[n + 1] : 0.0f);
        }
    }
}

/* The columns [from, to) of out for a fixed number of rows, so the loops over rows unroll. */
static inline __attribute__((always_inline)) void columns(
        const float *x, const float *w, const float *bias, float *out, int rows, int in,
        int out_features, int from, int to) {
    int n = from;
    for (; n + 2 <= to; n += 2) {
        weight_rows(x, w, bias, out, rows, in, out_features, n, 1);
    }
    if (n < to) {
        weight_rows(x, w, bias, out, rows, in, out_features, n, 0);
    }
}

#define ROWS_CASE(R)                                                          \
    case R:                                                                   \
        columns(x, w, bias, out, R, in, out_features, from, to);              \
        break;

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_blocks_FewRowProduct_multiply(
        JNIEnv *env, jclass cls, jobject x_buffer, jobject weight_buffer, jobject bias_buffer,
        jobject out_buffer, jint rows, jint in, jint out_features, jint from, jint to) {
    (void)cls;
    const float *x = (const float *)(*env)->GetDirectBufferAddress(env, x_buffer);
    const float *w = (const float *)(*env)->GetDirectBufferAddress(env, weight_buffer);
    const float *bias =
            bias_buffer == NULL ? NULL : (const float *)(*env)->GetDirectBufferAddress(env, bias_buffer);
    float *out = (float *)(*env)->GetDirectBufferAddress(env, out_buffer);
    if (x == NULL || w == NULL || out == NULL || (bias_buffer != NULL && bias == NULL)) {
        (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
                "few-row product: an array's memory is not reachable as a direct buffer");
        return;
    }
    switch (rows) {
        ROWS_CASE(1)
        ROWS_CASE(2)
        ROWS_CASE(3)
        ROWS_CASE(4)
        ROWS_CASE(5)
        ROWS_CASE(6)
        ROWS_CASE(7)
        ROWS_CASE(8)
        default:
            (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
                    "few-row product: rows must be 1 to 8");
            break;
    }
}
