/*
 * Attention of many new positions at once (a prefill, a scoring pass) with AVX-512:
 * softmax(cap(q k^T * scale) + mask) v for each sequence and query head, over the keys and values
 * of its key/value head; cap(s) is s, or tanh(s / C) * C where a soft cap C is given.
 *
 * PyTorch computes it as two batched products, a scaling, a mask addition over a (B, H, T, S) copy
 * and a softmax, on one core (bin/llmzoo runs PyTorch on one intra-op thread), over every key of
 * every row although a causal mask zeroes half of them. Here each query row reads only the keys
 * from its first to its last one the mask leaves visible: past those the reference's probabilities
 * are exactly 0 (a masked key's mask is -FLT_MAX, so its score minus the row's finite maximum
 * underflows to 0), and a row with every key masked attends all of them, as the reference's
 * softmax over equal scores does. The keys are transposed once per key/value head so that the
 * scores of 16 keys for 4 query rows are 4 * D fused multiply-adds, the scores of a row stay in a
 * scratch row, and the values are read once per 4 rows into accumulators held in registers.
 *
 * Called by io.github.djlllmzoo.cpu.PrefillAttention with direct buffers over PyTorch tensors that
 * Java has checked: float32, contiguous, the sizes below. Compiled with AVX-512 enabled; Java
 * loads it only on a CPU that has AVX-512F.
 */
#include <float.h>
#include <jni.h>
#include <stddef.h>
#include <stdlib.h>

#if defined(__AVX512F__)
#include "vector_math.h"
#else
#include "simd.h"
#endif

/* The widest head the kernel takes (floats). */
#define MAX_HEAD_DIM 256
/* Query rows computed together: the keys and values they read are loaded once for all of them. */
#define ROWS 4
/* Floats of a head the value pass keeps in registers at once (4 vectors a row). */
#define VALUE_CHUNK 64
/* Keys whose scores are computed together (two vectors); the transposed keys' rows are padded to it. */
#define KEYS 32

/* kt[c * stride + j] = k[j * d + c] for j < s, zero for s <= j < stride (stride: s rounded up to KEYS). */
static void transpose_keys(const float *k, float *kt, int s, int d, int stride) {
    for (int c = 0; c < d; c++) {
        float *row = kt + (size_t)c * stride;
        for (int j = 0; j < s; j++) {
            row[j] = k[(size_t)j * d + c];
        }
        for (int j = s; j < stride; j++) {
            row[j] = 0.0f;
        }
    }
}

#if defined(__AVX512F__)

static inline __mmask16 lanes(int n, int k) {
    int left = n - k;
    return left >= 16 ? (__mmask16)0xFFFF : (__mmask16)((1u << left) - 1);
}

/* The keys [*start, *end) a query row attends: those from its first to its last key whose mask is
   above -FLT_MAX; every key where the mask is NULL or masks them all. */
static void visible(const float *mask_row, int s, int *start, int *end) {
    *start = 0;
    *end = s;
    if (mask_row == NULL) {
        return;
    }
    __m512 masked = _mm512_set1_ps(-FLT_MAX);
    int last = -1;
    for (int j = (s - 1) & ~15; j >= 0; j -= 16) {
        __mmask16 k = lanes(s, j);
        unsigned seen = _mm512_mask_cmp_ps_mask(k, _mm512_maskz_loadu_ps(k, mask_row + j), masked, _CMP_GT_OQ);
        if (seen != 0) {
            last = j + 31 - __builtin_clz(seen);
            break;
        }
    }
    if (last < 0) {
        return;
    }
    for (int j = 0; j <= last; j += 16) {
        __mmask16 k = lanes(s, j);
        unsigned seen = _mm512_mask_cmp_ps_mask(k, _mm512_maskz_loadu_ps(k, mask_row + j), masked, _CMP_GT_OQ);
        if (seen != 0) {
            *start = j + __builtin_ctz(seen);
            break;
        }
    }
    *end = last + 1;
}

/*
 * Columns [0, width) of out rows [i0, i0 + rows) = the probabilities (ROWS rows of stride floats)
 * over keys [lo, hi) times those columns of the values (rows of d floats), times each row's inverse
 * sum. Inlined with a constant width, the accumulators stay in registers.
 */
static inline __attribute__((always_inline)) void value_chunk(const float *v, const float *scores,
        const float *inverse, float *out, size_t out_stride, int i0, int rows, int lo, int hi, int d, int stride,
        int width) {
    int vectors = (width + 15) / 16;
    __m512 acc[ROWS][VALUE_CHUNK / 16];
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; r++) {
#pragma GCC unroll 4
        for (int c = 0; c < VALUE_CHUNK / 16; c++) {
            acc[r][c] = _mm512_setzero_ps();
        }
    }
    for (int j = lo; j < hi; j++) {
        const float *vj = v + (size_t)j * d;
        __m512 values[VALUE_CHUNK / 16];
#pragma GCC unroll 4
        for (int c = 0; c < VALUE_CHUNK / 16; c++) {
            values[c] = c < vectors ? _mm512_maskz_loadu_ps(lanes(width, c * 16), vj + c * 16) : _mm512_setzero_ps();
        }
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++) {
            __m512 p = _mm512_set1_ps(scores[(size_t)r * stride + j]);
#pragma GCC unroll 4
            for (int c = 0; c < VALUE_CHUNK / 16; c++) {
                acc[r][c] = _mm512_fmadd_ps(p, values[c], acc[r][c]);
            }
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < ROWS; r++) {
        if (r < rows) {
            __m512 norm = _mm512_set1_ps(inverse[r]);
            float *o = out + (size_t)(i0 + r) * out_stride;
#pragma GCC unroll 4
            for (int c = 0; c < VALUE_CHUNK / 16; c++) {
                if (c < vectors) {
                    _mm512_mask_storeu_ps(o + c * 16, lanes(width, c * 16), _mm512_mul_ps(acc[r][c], norm));
                }
            }
        }
    }
}

/*
 * Rows [i0, i0 + rows) of one query head: q holds the head's t rows of d floats, kt its key/value
 * head's transposed keys (d rows of stride floats, a multiple of KEYS), v the values (s rows of d floats), mask the
 * head's sequence's t rows of s additive values (or NULL), out row i at out + i * out_stride;
 * scores ROWS * stride floats of scratch.
 */
static inline __attribute__((always_inline)) void attend_rows(const float *q, const float *kt, const float *v,
        const float *mask, float *out, size_t out_stride, int i0, int rows, int s, int d, int stride, float scale,
        float cap, float *scores) {
    int start[ROWS];
    int end[ROWS];
    int lo = s;
    int hi = 0;
    for (int r = 0; r < rows; r++) {
        visible(mask == NULL ? NULL : mask + (size_t)(i0 + r) * s, s, &start[r], &end[r]);
        lo = start[r] < lo ? start[r] : lo;
        hi = end[r] > hi ? end[r] : hi;
    }
    lo &= ~(KEYS - 1);
    /* Scores of KEYS keys for ROWS rows: a missing row repeats the last one, its scores unused. */
    const float *qr[ROWS];
    for (int r = 0; r < ROWS; r++) {
        qr[r] = q + (size_t)(i0 + (r < rows ? r : rows - 1)) * d;
    }
    __m512 sc = _mm512_set1_ps(scale);
    for (int j = lo; j < hi; j += KEYS) {
        __m512 acc[ROWS][KEYS / 16];
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++) {
            acc[r][0] = _mm512_setzero_ps();
            acc[r][1] = _mm512_setzero_ps();
        }
#pragma GCC unroll 4
        for (int c = 0; c < d; c++) {
            __m512 k0 = _mm512_loadu_ps(kt + (size_t)c * stride + j);
            __m512 k1 = _mm512_loadu_ps(kt + (size_t)c * stride + j + 16);
#pragma GCC unroll 4
            for (int r = 0; r < ROWS; r++) {
                __m512 x = _mm512_set1_ps(qr[r][c]);
                acc[r][0] = _mm512_fmadd_ps(x, k0, acc[r][0]);
                acc[r][1] = _mm512_fmadd_ps(x, k1, acc[r][1]);
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++) {
            _mm512_storeu_ps(scores + (size_t)r * stride + j, _mm512_mul_ps(acc[r][0], sc));
            _mm512_storeu_ps(scores + (size_t)r * stride + j + 16, _mm512_mul_ps(acc[r][1], sc));
        }
    }
    /* Each row's probabilities over its keys (unnormalized), 0 over the other keys of [lo, hi). */
    float inverse[ROWS];
    for (int r = 0; r < rows; r++) {
        float *row = scores + (size_t)r * stride;
        const float *m = mask == NULL ? NULL : mask + (size_t)(i0 + r) * s;
        __m512 top = _mm512_set1_ps(-__builtin_inff());
        for (int j = start[r]; j < end[r]; j += 16) {
            __mmask16 k = lanes(end[r], j);
            __m512 x = _mm512_maskz_loadu_ps(k, row + j);
            if (cap > 0.0f) {
                __m512 c = _mm512_set1_ps(cap);
                x = _mm512_mul_ps(tanh_ps(_mm512_div_ps(x, c)), c);
            }
            if (m != NULL) {
                x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(k, m + j));
            }
            _mm512_mask_storeu_ps(row + j, k, x);
            top = _mm512_mask_max_ps(top, k, top, x);
        }
        __m512 max = _mm512_set1_ps(_mm512_reduce_max_ps(top));
        __m512 sum = _mm512_setzero_ps();
        for (int j = start[r]; j < end[r]; j += 16) {
            __mmask16 k = lanes(end[r], j);
            __m512 e = exp_nonpositive(_mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), max));
            _mm512_mask_storeu_ps(row + j, k, e);
            sum = _mm512_mask_add_ps(sum, k, sum, e);
        }
        inverse[r] = 1.0f / _mm512_reduce_add_ps(sum);
        for (int j = lo; j < start[r]; j++) {
            row[j] = 0.0f;
        }
        for (int j = end[r]; j < hi; j++) {
            row[j] = 0.0f;
        }
    }
    for (int r = rows; r < ROWS; r++) {
        float *row = scores + (size_t)r * stride;
        for (int j = lo; j < hi; j++) {
            row[j] = 0.0f;
        }
        inverse[r] = 0.0f;
    }
    /* out = p v / sum, VALUE_CHUNK floats of the head at a time. */
    for (int c0 = 0; c0 < d; c0 += VALUE_CHUNK) {
        if (d - c0 >= VALUE_CHUNK) {
            value_chunk(v + c0, scores, inverse, out + c0, out_stride, i0, rows, lo, hi, d, stride, VALUE_CHUNK);
        } else {
            value_chunk(v + c0, scores, inverse, out + c0, out_stride, i0, rows, lo, hi, d, stride, d - c0);
        }
    }
}

#else

/* ---- the portable variant (AVX2, NEON: simd.h): the same passes, 16 keys or 16 floats of a head a
   step (2 vectors by ROWS rows of accumulators fit AVX2's 16 registers) ---- */

/* Keys or head floats per step. */
#define STEP (2 * VL)

static void visible(const float *mask_row, int s, int *start, int *end) {
    *start = 0;
    *end = s;
    if (mask_row == NULL) {
        return;
    }
    int last = s - 1;
    while (last >= 0 && !(mask_row[last] > -FLT_MAX)) {
        last--;
    }
    if (last < 0) {
        return;
    }
    int first = 0;
    while (!(mask_row[first] > -FLT_MAX)) {
        first++;
    }
    *start = first;
    *end = last + 1;
}

static inline __attribute__((always_inline)) void attend_rows(const float *q, const float *kt, const float *v,
        const float *mask, float *out, size_t out_stride, int i0, int rows, int s, int d, int stride, float scale,
        float cap, float *scores) {
    int start[ROWS];
    int end[ROWS];
    int lo = s;
    int hi = 0;
    for (int r = 0; r < rows; r++) {
        visible(mask == NULL ? NULL : mask + (size_t)(i0 + r) * s, s, &start[r], &end[r]);
        lo = start[r] < lo ? start[r] : lo;
        hi = end[r] > hi ? end[r] : hi;
    }
    lo &= ~(KEYS - 1);
    const float *qr[ROWS];
    for (int r = 0; r < ROWS; r++) {
        qr[r] = q + (size_t)(i0 + (r < rows ? r : rows - 1)) * d;
    }
    for (int j = lo; j < hi; j += STEP) {
        vf acc[ROWS][2];
        for (int r = 0; r < ROWS; r++) {
            acc[r][0] = vzero();
            acc[r][1] = vzero();
        }
        for (int c = 0; c < d; c++) {
            vf k0 = vload(kt + (size_t)c * stride + j);
            vf k1 = vload(kt + (size_t)c * stride + j + VL);
            for (int r = 0; r < ROWS; r++) {
                acc[r][0] = k0 * qr[r][c] + acc[r][0];
                acc[r][1] = k1 * qr[r][c] + acc[r][1];
            }
        }
        for (int r = 0; r < ROWS; r++) {
            vstore(scores + (size_t)r * stride + j, acc[r][0] * scale);
            vstore(scores + (size_t)r * stride + j + VL, acc[r][1] * scale);
        }
    }
    float inverse[ROWS];
    for (int r = 0; r < rows; r++) {
        float *row = scores + (size_t)r * stride;
        const float *m = mask == NULL ? NULL : mask + (size_t)(i0 + r) * s;
        float top = -__builtin_inff();
        for (int j = start[r]; j < end[r]; j += VL) {
            int left = end[r] - j;
            vf x = vload_n(row + j, left);
            if (cap > 0.0f) {
                x = vtanh(x / cap) * cap;
            }
            if (m != NULL) {
                x = x + vload_n(m + j, left);
            }
            vstore_n(row + j, x, left);
            for (int l = 0; l < left && l < VL; l++) {
                top = x[l] > top ? x[l] : top;
            }
        }
        vf sum = vzero();
        for (int j = start[r]; j < end[r]; j += VL) {
            int left = end[r] - j;
            vf e = vexp_nonpositive(vload_n(row + j, left) - top);
            if (left < VL) {
                e = vblend((vi){0, 1, 2, 3, 4, 5, 6, 7} < left, e, vzero());
            }
            vstore_n(row + j, e, left);
            sum = sum + e;
        }
        inverse[r] = 1.0f / vsum(sum);
        for (int j = lo; j < start[r]; j++) {
            row[j] = 0.0f;
        }
        for (int j = end[r]; j < hi; j++) {
            row[j] = 0.0f;
        }
    }
    for (int r = rows; r < ROWS; r++) {
        float *row = scores + (size_t)r * stride;
        for (int j = lo; j < hi; j++) {
            row[j] = 0.0f;
        }
        inverse[r] = 0.0f;
    }
    /* out = p v / sum, STEP floats of the head at a time. */
    for (int c0 = 0; c0 < d; c0 += STEP) {
        int width = d - c0;
        vf acc[ROWS][2];
        for (int r = 0; r < ROWS; r++) {
            acc[r][0] = vzero();
            acc[r][1] = vzero();
        }
        for (int j = lo; j < hi; j++) {
            const float *vj = v + (size_t)j * d + c0;
            vf v0 = vload_n(vj, width);
            vf v1 = vload_n(vj + VL, width - VL);
            for (int r = 0; r < ROWS; r++) {
                float p = scores[(size_t)r * stride + j];
                acc[r][0] = v0 * p + acc[r][0];
                acc[r][1] = v1 * p + acc[r][1];
            }
        }
        for (int r = 0; r < rows; r++) {
            float *o = out + (size_t)(i0 + r) * out_stride + c0;
            vstore_n(o, acc[r][0] * inverse[r], width);
            vstore_n(o + VL, acc[r][1] * inverse[r], width - VL);
        }
    }
}

#endif

static void attend_head(const float *q, const float *kt, const float *v, const float *mask, float *out,
        size_t out_stride, int t, int s, int d, int stride, float scale, float cap, float *scores) {
    for (int i0 = 0; i0 < t; i0 += ROWS) {
        int rows = t - i0 < ROWS ? t - i0 : ROWS;
        switch (d) {
            case 64:
                attend_rows(q, kt, v, mask, out, out_stride, i0, rows, s, 64, stride, scale, cap, scores);
                break;
            case 128:
                attend_rows(q, kt, v, mask, out, out_stride, i0, rows, s, 128, stride, scale, cap, scores);
                break;
            default:
                attend_rows(q, kt, v, mask, out, out_stride, i0, rows, s, d, stride, scale, cap, scores);
                break;
        }
    }
}

/*
 * Query heads [from, to) of (sequence, head), unit u = b * heads + h. q: (B, heads, t, d); keys and
 * values: (B, kv_heads, capacity, d) of which the first s positions are read; mask: NULL or (B or 1,
 * 1, t, s), sequence b's at b * mask_stride; out: (B, t, heads, d). Returns 0 when the scratch could
 * not be allocated.
 */
static int attend_units(const float *q, const float *keys, const float *values, const float *mask, float *out,
        int heads, int kv_heads, int t, int s, int d, int capacity, long mask_stride, float scale, float cap,
        int from, int to) {
    int groups = heads / kv_heads;
    int stride = (s + KEYS - 1) & ~(KEYS - 1);
    float *kt = malloc(sizeof(float) * ((size_t)d * stride + (size_t)ROWS * stride));
    if (kt == NULL) {
        return 0;
    }
    float *scores = kt + (size_t)d * stride;
    int transposed = -1;
    for (int u = from; u < to; u++) {
        int b = u / heads;
        int h = u % heads;
        int kv = b * kv_heads + h / groups;
        const float *k = keys + (size_t)kv * capacity * d;
        const float *v = values + (size_t)kv * capacity * d;
        if (kv != transposed) {
            transpose_keys(k, kt, s, d, stride);
            transposed = kv;
        }
        const float *m = mask == NULL ? NULL : mask + (size_t)b * mask_stride;
        attend_head(q + (size_t)u * t * d, kt, v, m, out + ((size_t)b * t * heads + h) * d, (size_t)heads * d, t,
                s, d, stride, scale, cap, scores);
    }
    free(kt);
    return 1;
}

static void *address(JNIEnv *env, jobject buffer) {
    return buffer == NULL ? NULL : (*env)->GetDirectBufferAddress(env, buffer);
}

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_PrefillAttention_attend(JNIEnv *env, jclass cls,
        jobject q_buffer, jobject keys_buffer, jobject values_buffer, jobject mask_buffer, jobject out_buffer,
        jint heads, jint kv_heads, jint positions, jint length, jint head_dim, jint capacity, jlong mask_stride,
        jfloat scale, jfloat softcap, jint from, jint to) {
    (void)cls;
    const float *q = address(env, q_buffer);
    const float *keys = address(env, keys_buffer);
    const float *values = address(env, values_buffer);
    const float *mask = address(env, mask_buffer);
    float *out = address(env, out_buffer);
    if (q == NULL || keys == NULL || values == NULL || out == NULL || (mask_buffer != NULL && mask == NULL)) {
        (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
                "prefill attention: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (head_dim < 1 || head_dim > MAX_HEAD_DIM || kv_heads < 1 || heads % kv_heads != 0 || positions < 1
            || length < 1 || length > capacity || mask_stride < 0 || !(softcap >= 0.0f) || from < 0 || to < from) {
        (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
                "prefill attention: head_dim must be 1 to 256, heads a multiple of kv_heads, length 1 to capacity,"
                " softcap non-negative");
        return;
    }
    if (!attend_units(q, keys, values, mask, out, heads, kv_heads, positions, length, head_dim, capacity,
                mask_stride, scale, softcap, from, to)) {
        (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/OutOfMemoryError"),
                "prefill attention: no memory for the scratch");
    }
}
