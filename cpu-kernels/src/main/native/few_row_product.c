/*
 * libllmzoo-few-row-product: the products of a few rows of x (a decode step of a batch) with a
 * weight, reading each weight element once for all rows, VL floats a vector (simd.h), in both layouts the blocks
 * store: out = x @ weight^T + bias with weight (out, in) (torch.nn.Linear, Llama), and
 * out = x @ weight + bias with weight (in, out) (Hugging Face's Conv1D, GPT-2).
 *
 * oneMKL, as PyTorch 2.7.1 calls it, reads a float32 weight about half as fast when it multiplies
 * 8 rows by it as for one row, although the core's multiply-add rate would allow the full
 * bandwidth (figures in docs/PERFORMANCE.md).
 *
 * (out, in): for up to SINGLE_STREAM_MAX_ROWS rows of x, one weight row at a time, so each core
 * reads its columns of the weight as one sequential stream (two rows at a time interleave two
 * streams, which the hardware prefetcher follows worse: docs/PERFORMANCE.md, "One weight stream per
 * core"); for more rows of x, two weight rows at a time, so each load of x serves two outputs.
 * Multiplies each 16-float piece with the same piece of every row of x (kept in L1), prefetched
 * ahead, and sums each product's 16 lanes at the end of the row.
 * (in, out): streams eight weight rows at a time over the columns asked for, each 16-float piece of
 * them times the eight matching elements of every row of x, added into the output rows (kept in
 * L1/L2); the next eight rows are prefetched at the same columns. One row of x with an (in, out)
 * weight is cut by the weight's rows instead (in_out_row_range), each core's run one stream.
 *
 * Called by io.github.djlllmzoo.cpu.FewRowProduct with direct buffers over PyTorch tensors that
 * Java has checked: float32, contiguous, the sizes below. One source for every instruction set,
 * compiled once per target (build.sh).
 */
#include <jni.h>
#include <stddef.h>
#include "simd.h"

#define MAX_ROWS 8
/* Floats ahead of the current piece that the weight is prefetched: one stream, or each of two. */
#define PREFETCH_SINGLE 1024
#define PREFETCH_PAIR 3072
#define PREFETCH(pair) ((pair) ? PREFETCH_PAIR : PREFETCH_SINGLE)
/* The most rows of x that take an (out, in) weight one row at a time (more take two at a time). */
#define SINGLE_STREAM_MAX_ROWS 2
/* Independent sums kept of one weight stream (weight_row): enough multiply-adds in flight to cover their latency. */
#define CHAINS 4
/* Weight rows of an (in, out) weight read together. */
#define IN_BLOCK 8

static inline __attribute__((always_inline)) void weight_rows(
        const float *x, const float *w, const float *bias, float *out, int rows, int in,
        int out_features, int n, int pair) {
    vf acc[2][MAX_ROWS];
    for (int r = 0; r < rows; r++) {
        acc[0][r] = vzero();
        acc[1][r] = vzero();
    }
    const float *w0 = w + (size_t)n * in;
    const float *w1 = w0 + in;
    for (int k = 0; k < in; k += VL) {
        int left = in - k;
        __builtin_prefetch(w0 + k + PREFETCH(pair));
        vf v0 = vload_n(w0 + k, left);
        vf v1 = vzero();
        if (pair) {
            __builtin_prefetch(w1 + k + PREFETCH(pair));
            v1 = vload_n(w1 + k, left);
        }
        for (int r = 0; r < rows; r++) {
            vf xr = vload_n(x + (size_t)r * in + k, left);
            acc[0][r] = v0 * xr + acc[0][r];
            if (pair) {
                acc[1][r] = v1 * xr + acc[1][r];
            }
        }
    }
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * out_features + n;
        o[0] = vsum(acc[0][r]) + (bias ? bias[n] : 0.0f);
        if (pair) {
            o[1] = vsum(acc[1][r]) + (bias ? bias[n + 1] : 0.0f);
        }
    }
}

/*
 * One weight row n times each of the rows of x (up to SINGLE_STREAM_MAX_ROWS), CHAINS pieces a step, each
 * piece into a sum of its own: with one sum a row, every multiply-add waits for the one before (4 cycles on
 * Zen 5), so a core reads at most one VL-float piece each 4 cycles, 8 bytes a cycle with AVX2's 8 lanes,
 * below one core's share of the memory bandwidth. One prefetch a cache line.
 */
static inline __attribute__((always_inline)) void weight_row(
        const float *x, const float *w, const float *bias, float *out, int rows, int in,
        int out_features, int n) {
    vf acc[CHAINS][SINGLE_STREAM_MAX_ROWS];
    for (int c = 0; c < CHAINS; c++) {
        for (int r = 0; r < rows; r++) {
            acc[c][r] = vzero();
        }
    }
    const float *w0 = w + (size_t)n * in;
    int k = 0;
    for (; k + CHAINS * VL <= in; k += CHAINS * VL) {
        for (size_t line = 0; line < CHAINS * sizeof(vf); line += 64) {
            __builtin_prefetch((const char *)(w0 + k + PREFETCH_SINGLE) + line);
        }
        for (int c = 0; c < CHAINS; c++) {
            vf v = vload(w0 + k + c * VL);
            for (int r = 0; r < rows; r++) {
                acc[c][r] = v * vload(x + (size_t)r * in + k + c * VL) + acc[c][r];
            }
        }
    }
    for (; k < in; k += VL) {
        int left = in - k;
        vf v = vload_n(w0 + k, left);
        for (int r = 0; r < rows; r++) {
            acc[0][r] = v * vload_n(x + (size_t)r * in + k, left) + acc[0][r];
        }
    }
    for (int r = 0; r < rows; r++) {
        vf sum = acc[0][r];
        for (int c = 1; c < CHAINS; c++) {
            sum += acc[c][r];
        }
        out[(size_t)r * out_features + n] = vsum(sum) + (bias ? bias[n] : 0.0f);
    }
}

static inline __attribute__((always_inline)) void add_weight_rows(
        const float *x, const float *w, float *out, int rows, int in, int out_features, int from,
        int to, int k, int count) {
    const float *wk = w + (size_t)k * out_features;
    for (int n = from; n < to; n += VL) {
        int left = to - n;
        vf v[IN_BLOCK];
        for (int j = 0; j < count; j++) {
            __builtin_prefetch(wk + (size_t)(j + count) * out_features + n);
            v[j] = vload_n(wk + (size_t)j * out_features + n, left);
        }
        for (int r = 0; r < rows; r++) {
            float *o = out + (size_t)r * out_features + n;
            const float *xr = x + (size_t)r * in + k;
            vf acc = vload_n(o, left);
            for (int j = 0; j < count; j++) {
                acc = v[j] * xr[j] + acc;
            }
            vstore_n(o, acc, left);
        }
    }
}

static void in_out_row_range(const float *x, const float *w, float *out, int out_features, int k_from, int k_to) {
    for (int k = k_from; k < k_to; k++) {
        const float *wk = w + (size_t)k * out_features;
        for (int n = 0; n < out_features; n += VL) {
            int left = out_features - n;
            __builtin_prefetch(wk + n + PREFETCH_SINGLE);
            vstore_n(out + n, vload_n(wk + n, left) * x[k] + vload_n(out + n, left), left);
        }
    }
}

static void in_out_row_range4(const float *x, const float *w, float *out, int out_features, int k_from, int k_to) {
    int k = k_from;
    for (; k + 4 <= k_to; k += 4) {
        const float *w0 = w + (size_t)k * out_features;
        const float *w1 = w0 + out_features;
        const float *w2 = w1 + out_features;
        const float *w3 = w2 + out_features;
        for (int n = 0; n < out_features; n += VL) {
            int left = out_features - n;
            __builtin_prefetch(w0 + n + PREFETCH_SINGLE);
            __builtin_prefetch(w1 + n + PREFETCH_SINGLE);
            __builtin_prefetch(w2 + n + PREFETCH_SINGLE);
            __builtin_prefetch(w3 + n + PREFETCH_SINGLE);
            vf a = vload_n(w0 + n, left) * x[k] + vload_n(out + n, left);
            vf b = vload_n(w1 + n, left) * x[k + 1];
            a = vload_n(w2 + n, left) * x[k + 2] + a;
            b = vload_n(w3 + n, left) * x[k + 3] + b;
            vstore_n(out + n, a + b, left);
        }
    }
    in_out_row_range(x, w, out, out_features, k, k_to);
}

static void add_into(float *out, const float *part, int count) {
    for (int n = 0; n < count; n += VL) {
        vstore_n(out + n, vload_n(out + n, count - n) + vload_n(part + n, count - n), count - n);
    }
}

/* The columns [from, to) of out = x @ w^T + bias, w (out, in), one weight row at a time for up to
   SINGLE_STREAM_MAX_ROWS rows of x, else two. */
static inline __attribute__((always_inline)) void out_in_columns(
        const float *x, const float *w, const float *bias, float *out, int rows, int in,
        int out_features, int from, int to) {
    int n = from;
    if (rows > SINGLE_STREAM_MAX_ROWS) {
        for (; n + 2 <= to; n += 2) {
            weight_rows(x, w, bias, out, rows, in, out_features, n, 1);
        }
    }
    for (; n < to; n++) {
        if (rows > SINGLE_STREAM_MAX_ROWS) {
            weight_rows(x, w, bias, out, rows, in, out_features, n, 0);
        } else {
            weight_row(x, w, bias, out, rows, in, out_features, n);
        }
    }
}

/*
 * The columns [from, to) of out = x @ w + bias, w (in, out): out's rows start as the bias, then
 * the weight rows are added in, IN_BLOCK at a time and the last in % IN_BLOCK one at a time.
 */
static inline __attribute__((always_inline)) void in_out_columns(
        const float *x, const float *w, const float *bias, float *out, int rows, int in,
        int out_features, int from, int to) {
    for (int r = 0; r < rows; r++) {
        float *o = out + (size_t)r * out_features;
        for (int n = from; n < to; n++) {
            o[n] = bias ? bias[n] : 0.0f;
        }
    }
    int k = 0;
    for (; k + IN_BLOCK <= in; k += IN_BLOCK) {
        add_weight_rows(x, w, out, rows, in, out_features, from, to, k, IN_BLOCK);
    }
    for (; k < in; k++) {
        add_weight_rows(x, w, out, rows, in, out_features, from, to, k, 1);
    }
}

#define ROWS_CASE(KERNEL, R)                                                  \
    case R:                                                                   \
        KERNEL(x, w, bias, out, R, in, out_features, from, to);               \
        break;

/* The direct buffers' addresses, or an IllegalArgumentException and 0 where one has none. */
static int addresses(JNIEnv *env, jobject x_buffer, jobject weight_buffer, jobject bias_buffer,
        jobject out_buffer, const float **x, const float **w, const float **bias, float **out) {
    *x = (const float *)(*env)->GetDirectBufferAddress(env, x_buffer);
    *w = (const float *)(*env)->GetDirectBufferAddress(env, weight_buffer);
    *bias = bias_buffer == NULL ? NULL : (const float *)(*env)->GetDirectBufferAddress(env, bias_buffer);
    *out = (float *)(*env)->GetDirectBufferAddress(env, out_buffer);
    if (*x == NULL || *w == NULL || *out == NULL || (bias_buffer != NULL && *bias == NULL)) {
        (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
                "few-row product: an array's memory is not reachable as a direct buffer");
        return 0;
    }
    return 1;
}

static void rows_out_of_range(JNIEnv *env) {
    (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
            "few-row product: rows must be 1 to 8");
}

/* The kernel for a fixed number of rows, so the loops over rows unroll. */
#define BY_ROWS(KERNEL)                                                       \
    switch (rows) {                                                           \
        ROWS_CASE(KERNEL, 1)                                                  \
        ROWS_CASE(KERNEL, 2)                                                  \
        ROWS_CASE(KERNEL, 3)                                                  \
        ROWS_CASE(KERNEL, 4)                                                  \
        ROWS_CASE(KERNEL, 5)                                                  \
        ROWS_CASE(KERNEL, 6)                                                  \
        ROWS_CASE(KERNEL, 7)                                                  \
        ROWS_CASE(KERNEL, 8)                                                  \
        default:                                                              \
            rows_out_of_range(env);                                           \
            break;                                                            \
    }

/* A JNI entry point that runs KERNEL over the columns [from, to) of out. */
#define PRODUCT_ENTRY(NAME, KERNEL)                                                               \
    JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_FewRowProduct_##NAME(                     \
            JNIEnv *env, jclass cls, jobject x_buffer, jobject weight_buffer, jobject bias_buffer, \
            jobject out_buffer, jint rows, jint in, jint out_features, jint from, jint to) {      \
        (void)cls;                                                                                \
        const float *x, *w, *bias;                                                                \
        float *out;                                                                               \
        if (addresses(env, x_buffer, weight_buffer, bias_buffer, out_buffer, &x, &w, &bias, &out)) { \
            BY_ROWS(KERNEL)                                                                       \
        }                                                                                         \
    }

/* out[:, from:to] = x @ weight^T + bias, weight (out_features, in). */
PRODUCT_ENTRY(multiplyOutIn, out_in_columns)

/* out[:, from:to] = x @ weight + bias, weight (in, out_features). */
PRODUCT_ENTRY(multiplyInOut, in_out_columns)

/*
 * part = bias (or zeros where bias is null) + x[k_from:k_to] @ weight[k_from:k_to, :], x one row
 * (in), weight (in, out_features): a share of one row's product by the weight's rows [k_from,
 * k_to); the shares are then summed (addInto). bias may be part itself: the share is then added
 * into what part holds (a residual stream). four: four weight rows at a time (in_out_row_range4).
 */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_FewRowProduct_multiplyInOutRows(
        JNIEnv *env, jclass cls, jobject x_buffer, jobject weight_buffer, jobject bias_buffer, jobject part_buffer,
        jint out_features, jint k_from, jint k_to, jboolean four) {
    (void)cls;
    const float *x, *w, *bias;
    float *part;
    if (!addresses(env, x_buffer, weight_buffer, bias_buffer, part_buffer, &x, &w, &bias, &part)) {
        return;
    }
    for (int n = 0; n < out_features; n++) {
        part[n] = bias ? bias[n] : 0.0f;
    }
    if (four) {
        in_out_row_range4(x, w, part, out_features, k_from, k_to);
    } else {
        in_out_row_range(x, w, part, out_features, k_from, k_to);
    }
}

/* out += part, both count floats: a second share of a product added into the first. */
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_FewRowProduct_addInto(
        JNIEnv *env, jclass cls, jobject out_buffer, jobject part_buffer, jint count) {
    (void)cls;
    float *out = (float *)(*env)->GetDirectBufferAddress(env, out_buffer);
    const float *part = (const float *)(*env)->GetDirectBufferAddress(env, part_buffer);
    if (out == NULL || part == NULL) {
        (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
                "few-row product: an array's memory is not reachable as a direct buffer");
        return;
    }
    add_into(out, part, count);
}
