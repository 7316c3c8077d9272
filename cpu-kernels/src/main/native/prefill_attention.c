/*
 * Attention of many new positions at once (a prefill, a scoring pass), VL floats a vector (simd.h):
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
 * scores of a vector of keys for 4 query rows are 4 * D fused multiply-adds, the scores of a row stay in a
 * scratch row, and the values are read once per 4 rows into accumulators held in registers.
 *
 * A float16 cache (--kv-cache-dtype float16) is read as IEEE halves, widened to float32 as the keys are
 * transposed and as the values are loaded.
 *
 * Called by io.github.djlllmzoo.cpu.PrefillAttention with direct buffers over PyTorch tensors that
 * Java has checked: float32 (a cache's buffers float32 or float16), contiguous, the sizes below. One source for every instruction set,
 * compiled once per target (build.sh).
 */
#include <float.h>
#include <jni.h>
#include <stddef.h>
#include <stdlib.h>

#include "simd.h"

/* The widest head the kernel takes (floats). */
#define MAX_HEAD_DIM 256
/* Query rows computed together: the keys and values they read are loaded once for all of them. */
#define ROWS 4
/* The transposed keys' rows are padded to a multiple of this many keys: two vectors (STEP) on every target. */
#define KEYS 32

/* kt[c * stride + j] = k[j * d + c] for j < s, zero for s <= j < stride (stride: s rounded up to KEYS);
   k holds IEEE halves where half is set (a float16 cache), widened as they are transposed. */
static void transpose_keys(const void *k, float *kt, int s, int d, int stride, int half) {
    for (int c = 0; c < d; c++) {
        float *row = kt + (size_t)c * stride;
        if (half) {
            for (int j = 0; j < s; j++) {
                row[j] = half_value((const uint16_t *)k + (size_t)j * d + c);
            }
        } else {
            for (int j = 0; j < s; j++) {
                row[j] = ((const float *)k)[(size_t)j * d + c];
            }
        }
        for (int j = s; j < stride; j++) {
            row[j] = 0.0f;
        }
    }
}


/* Keys whose scores are computed together: two vectors by ROWS rows of accumulators. */
#define STEP (2 * VL)
/* Vectors of a head the value pass keeps in registers at once by ROWS rows: 16 accumulators of AVX-512's
   32 registers, 8 of AVX2's 16. */
#define VALUE_VECTORS (VL == 16 ? 4 : 2)

/* The keys [*start, *end) a query row attends: those from its first to its last key whose mask is
   above -FLT_MAX; every key where the mask is NULL or masks them all. */
static void visible(const float *mask_row, int s, int *start, int *end) {
    *start = 0;
    *end = s;
    if (mask_row == NULL) {
        return;
    }
    int last = -1;
    for (int j = (s - 1) / VL * VL; j >= 0; j -= VL) {
        int n = s - j < VL ? s - j : VL;
        unsigned seen = vabove(vload_n(mask_row + j, n), -FLT_MAX) & (unsigned)((1ull << n) - 1);
        if (seen != 0) {
            last = j + 31 - __builtin_clz(seen);
            break;
        }
    }
    if (last < 0) {
        return;
    }
    for (int j = 0; j <= last; j += VL) {
        int n = s - j < VL ? s - j : VL;
        unsigned seen = vabove(vload_n(mask_row + j, n), -FLT_MAX) & (unsigned)((1ull << n) - 1);
        if (seen != 0) {
            *start = j + __builtin_ctz(seen);
            break;
        }
    }
    *end = last + 1;
}

/* v: the unit's values, float32, or IEEE halves where half is set, widened as they are read. */
static inline __attribute__((always_inline)) void attend_rows(const float *q, const float *kt, const void *v,
        const float *mask, float *out, size_t out_stride, int i0, int rows, int s, int d, int stride, float scale,
        float cap, float *scores, int half) {
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
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++) {
            acc[r][0] = vzero();
            acc[r][1] = vzero();
        }
#pragma GCC unroll 4
        for (int c = 0; c < d; c++) {
            vf k0 = vload(kt + (size_t)c * stride + j);
            vf k1 = vload(kt + (size_t)c * stride + j + VL);
#pragma GCC unroll 4
            for (int r = 0; r < ROWS; r++) {
                acc[r][0] = k0 * qr[r][c] + acc[r][0];
                acc[r][1] = k1 * qr[r][c] + acc[r][1];
            }
        }
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++) {
            vstore(scores + (size_t)r * stride + j, acc[r][0] * scale);
            vstore(scores + (size_t)r * stride + j + VL, acc[r][1] * scale);
        }
    }
    float inverse[ROWS];
    for (int r = 0; r < rows; r++) {
        float *row = scores + (size_t)r * stride;
        const float *m = mask == NULL ? NULL : mask + (size_t)(i0 + r) * s;
        vf tops = vset1(-__builtin_inff());
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
            if (left >= VL) {
                tops = vmax(tops, x);
            } else {
                for (int l = 0; l < left; l++) {
                    top = x[l] > top ? x[l] : top;
                }
            }
        }
        top = vmaxall(tops) > top ? vmaxall(tops) : top;
        vf sum = vzero();
        for (int j = start[r]; j < end[r]; j += VL) {
            int left = end[r] - j;
            vf e = vexp_nonpositive(vload_n(row + j, left) - top);
            if (left < VL) {
                e = vtail(e, left);
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
    /* out = p v / sum, VALUE_VECTORS vectors of the head at a time. */
    for (int c0 = 0; c0 < d; c0 += VALUE_VECTORS * VL) {
        int width = d - c0;
        vf acc[ROWS][VALUE_VECTORS];
#pragma GCC unroll 4
        for (int r = 0; r < ROWS; r++) {
#pragma GCC unroll 4
            for (int c = 0; c < VALUE_VECTORS; c++) {
                acc[r][c] = vzero();
            }
        }
        const int whole = width >= VALUE_VECTORS * VL; /* unmasked loads: no tail in this chunk */
        for (int j = lo; j < hi; j++) {
            const float *vj = (const float *)v + (size_t)j * d + c0;
            const uint16_t *hj = (const uint16_t *)v + (size_t)j * d + c0;
            vf values[VALUE_VECTORS];
#pragma GCC unroll 4
            for (int c = 0; c < VALUE_VECTORS; c++) {
                values[c] = half ? widen_f16_n(hj + c * VL, width - c * VL)
                                 : whole ? vload(vj + c * VL) : vload_n(vj + c * VL, width - c * VL);
            }
#pragma GCC unroll 4
            for (int r = 0; r < ROWS; r++) {
                float p = scores[(size_t)r * stride + j];
#pragma GCC unroll 4
                for (int c = 0; c < VALUE_VECTORS; c++) {
                    acc[r][c] = values[c] * p + acc[r][c];
                }
            }
        }
        for (int r = 0; r < rows; r++) {
            float *o = out + (size_t)(i0 + r) * out_stride + c0;
            for (int c = 0; c < VALUE_VECTORS; c++) {
                vstore_n(o + c * VL, acc[r][c] * inverse[r], width - c * VL);
            }
        }
    }
}

static inline __attribute__((always_inline)) void attend_head_as(const float *q, const float *kt, const void *v,
        const float *mask, float *out, size_t out_stride, int t, int s, int d, int stride, float scale, float cap,
        float *scores, int half) {
    for (int i0 = 0; i0 < t; i0 += ROWS) {
        int rows = t - i0 < ROWS ? t - i0 : ROWS;
        switch (d) {
            case 64:
                attend_rows(q, kt, v, mask, out, out_stride, i0, rows, s, 64, stride, scale, cap, scores, half);
                break;
            case 128:
                attend_rows(q, kt, v, mask, out, out_stride, i0, rows, s, 128, stride, scale, cap, scores, half);
                break;
            default:
                attend_rows(q, kt, v, mask, out, out_stride, i0, rows, s, d, stride, scale, cap, scores, half);
                break;
        }
    }
}

/* One query head's rows, its values float32 or (half set) IEEE halves: one inlined copy for each. */
static void attend_head(const float *q, const float *kt, const void *v, const float *mask, float *out,
        size_t out_stride, int t, int s, int d, int stride, float scale, float cap, float *scores, int half) {
    if (half) {
        attend_head_as(q, kt, v, mask, out, out_stride, t, s, d, stride, scale, cap, scores, 1);
    } else {
        attend_head_as(q, kt, v, mask, out, out_stride, t, s, d, stride, scale, cap, scores, 0);
    }
}

/*
 * Query heads [from, to) of (sequence, head), unit u = b * heads + h. q: (B, heads, t, d); keys and
 * values: (B, kv_heads, capacity, d) of which the first s positions are read; mask: NULL or (B or 1,
 * 1, t, s), sequence b's at b * mask_stride; out: (B, t, heads, d); half: whether keys and values hold
 * IEEE halves (a float16 cache), else floats. Returns 0 when the scratch could not be allocated.
 */
static int attend_units(const float *q, const void *keys, const void *values, const float *mask, float *out,
        int heads, int kv_heads, int t, int s, int d, int capacity, long mask_stride, float scale, float cap,
        int half, int from, int to) {
    const size_t bytes = half ? sizeof(uint16_t) : sizeof(float);
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
        const char *k = (const char *)keys + (size_t)kv * capacity * d * bytes;
        const char *v = (const char *)values + (size_t)kv * capacity * d * bytes;
        if (kv != transposed) {
            transpose_keys(k, kt, s, d, stride, half);
            transposed = kv;
        }
        const float *m = mask == NULL ? NULL : mask + (size_t)b * mask_stride;
        attend_head(q + (size_t)u * t * d, kt, v, m, out + ((size_t)b * t * heads + h) * d, (size_t)heads * d, t,
                s, d, stride, scale, cap, scores, half);
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
        jfloat scale, jfloat softcap, jboolean half_cache, jint from, jint to) {
    (void)cls;
    const float *q = address(env, q_buffer);
    const void *keys = address(env, keys_buffer);
    const void *values = address(env, values_buffer);
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
                mask_stride, scale, softcap, half_cache != JNI_FALSE, from, to)) {
        (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/OutOfMemoryError"),
                "prefill attention: no memory for the scratch");
    }
}
