/*
 * Attention of one new token per sequence (a decode step) over the KV cache, VL floats a vector (simd.h):
 * softmax(cap(q k^T * scale) + mask) v for each sequence and key/value head, the G query heads of a
 * group sharing the group's keys and values; cap(s) is s, or tanh(s / C) * C where a soft cap C is
 * given (Gemma 2's attn_logit_softcapping).
 *
 * PyTorch computes it as a batched product for the scores, a scaling, a softmax and a second
 * batched product, each a separate pass with its own output array, and reads the cache more
 * slowly than this kernel (figures in docs/PERFORMANCE.md). Here the keys are read once (a tile
 * of positions at a time for all G query heads, so a tile is read from memory once), the scores
 * stay in a small buffer, and the values are read once into accumulators held in registers.
 *
 * A float16 cache (--kv-cache-dtype float16) is read as IEEE halves, half the bytes of a float32 cache,
 * widened to float32 a tile at a time (vcvtph2ps on x86-64, fcvtl on ARM64) into a scratch the group's
 * query heads then read, and the step's new key and value are rounded to halves as they are written
 * (vcvtps2ph, fcvtn: to nearest, ties to even).
 *
 * Called by io.github.djlllmzoo.cpu.DecodeAttention with direct buffers over PyTorch tensors
 * that Java has checked: float32 (the cache float32 or float16), contiguous, the sizes below. One source for every instruction set,
 * compiled once per target (build.sh).
 */
#include <jni.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "simd.h"

/* The widest head the kernel takes (floats): its accumulators are 16 registers of 16 floats. */
#define MAX_HEAD_DIM 256
/* Positions of a tile: the tile's keys or values (16 KiB for 64-float heads) stay in L1/L2 while
   every query head of the group reads them. */
#define TILE 64
/* Bytes ahead of the current key or value row that the next rows are prefetched. */
#define PREFETCH_BYTES 1024

static void soft_cap(float *row, const float *mask, int s, float cap) {
    for (int t = 0; t < s; t += VL) {
        int left = s - t;
        vf capped = vtanh(vload_n(row + t, left) / cap) * cap;
        if (mask != NULL) {
            capped = capped + vload_n(mask + t, left);
        }
        vstore_n(row + t, capped, left);
    }
}

static float softmax_numerators(float *scores, int s) {
    vf top = vset1(-__builtin_inff());
    int t = 0;
    for (; t + VL <= s; t += VL) {
        top = vmax(top, vload(scores + t));
    }
    float max = vmaxall(top);
    for (; t < s; t++) {
        max = scores[t] > max ? scores[t] : max;
    }
    vf sum = vzero();
    for (int t = 0; t < s; t += VL) {
        int left = s - t;
        vf e = vexp_nonpositive(vload_n(scores + t, left) - max);
        if (left < VL) {
            e = vtail(e, left);
        }
        vstore_n(scores + t, e, left);
        sum = sum + e;
    }
    return vsum(sum);
}

/* Rows [from, to) of a unit's float16 keys or values (d halves each) widened into dst, row t at
   (t - from) * d: each element is converted once a tile, however many query heads of the group then read
   it (converting it per head cost G conversions an element, more than the halved reads saved). */
static inline __attribute__((always_inline)) void widen_rows(
        const uint16_t *src, float *dst, int from, int to, int d) {
    for (int t = from; t < to; t++) {
        const uint16_t *row = src + (size_t)t * d;
        __builtin_prefetch((const char *)row + PREFETCH_BYTES);
        for (int c = 0; c < d; c += VL) {
            vstore_n(dst + (size_t)(t - from) * d + c, widen_f16_n(row + c, d - c), d - c);
        }
    }
}

/* k and v: a unit's rows of keys and values, float32, or IEEE halves where half is set (a float16
   cache), widened a tile at a time into widened (TILE * d floats) before the group's heads read them. */
static inline __attribute__((always_inline)) void attend_group(
        const float *q, const void *k, const void *v, const float *mask, float *out, int groups,
        int d, int s, float scale, float cap, float *scores, float *widened, int half) {
    const float *inline_mask = cap > 0.0f ? NULL : mask;
    int chunks = (d + VL - 1) / VL;
    for (int tile = 0; tile < s; tile += TILE) {
        int end = tile + TILE < s ? tile + TILE : s;
        const float *keys = (const float *)k + (size_t)tile * d; /* the tile's row t at (t - tile) * d */
        if (half) {
            widen_rows((const uint16_t *)k, widened, tile, end, d);
            keys = widened;
        }
        for (int g = 0; g < groups; g++) {
            float *row = scores + (size_t)g * s;
            vf qv[MAX_HEAD_DIM / VL];
            for (int c = 0; c < chunks; c++) {
                qv[c] = vload_n(q + (size_t)g * d + c * VL, d - c * VL);
            }
            for (int t = tile; t < end; t++) {
                const float *kt = keys + (size_t)(t - tile) * d;
                if (!half) {
                    __builtin_prefetch((const char *)kt + PREFETCH_BYTES);
                }
                vf acc = qv[0] * vload_n(kt, d);
                for (int c = 1; c < chunks; c++) {
                    acc = qv[c] * vload_n(kt + c * VL, d - c * VL) + acc;
                }
                row[t] = vsum(acc) * scale + (inline_mask == NULL ? 0.0f : inline_mask[t]);
            }
        }
    }
    float inverse[groups];
    for (int g = 0; g < groups; g++) {
        if (cap > 0.0f) {
            soft_cap(scores + (size_t)g * s, mask, s, cap);
        }
        inverse[g] = 1.0f / softmax_numerators(scores + (size_t)g * s, s);
        memset(out + (size_t)g * d, 0, sizeof(float) * d);
    }
    for (int tile = 0; tile < s; tile += TILE) {
        int end = tile + TILE < s ? tile + TILE : s;
        const float *values = (const float *)v + (size_t)tile * d; /* the tile's row t at (t - tile) * d */
        if (half) {
            widen_rows((const uint16_t *)v, widened, tile, end, d);
            values = widened;
        }
        for (int g = 0; g < groups; g++) {
            vf acc[MAX_HEAD_DIM / VL];
            float *o = out + (size_t)g * d;
            for (int c = 0; c < chunks; c++) {
                acc[c] = vload_n(o + c * VL, d - c * VL);
            }
            const float *p = scores + (size_t)g * s;
            for (int t = tile; t < end; t++) {
                const float *vt = values + (size_t)(t - tile) * d;
                if (!half) {
                    __builtin_prefetch((const char *)vt + PREFETCH_BYTES);
                }
                for (int c = 0; c < chunks; c++) {
                    acc[c] = vload_n(vt + c * VL, d - c * VL) * p[t] + acc[c];
                }
            }
            for (int c = 0; c < chunks; c++) {
                vstore_n(o + c * VL, end == s ? acc[c] * inverse[g] : acc[c], d - c * VL);
            }
        }
    }
}

/* Writes one new key or value row of d floats at dst: copied into a float32 cache, rounded to halves
   into a float16 one (half set). */
static void store_row(void *dst, const float *src, int d, int half) {
    if (!half) {
        memcpy(dst, src, sizeof(float) * d);
        return;
    }
    for (int c = 0; c < d; c += VL) {
        narrow_f16_n((uint16_t *)dst + c, vload_n(src + c, d - c), d - c);
    }
}

/* One unit's attention, its head width a constant where it is a common one. */
static inline __attribute__((always_inline)) void attend_unit(const float *q, const void *k, const void *v,
        const float *mask, float *out, int groups, int d, int s, float scale, float cap, float *scores,
        float *widened, int half) {
    switch (d) {
        case 64:
            attend_group(q, k, v, mask, out, groups, 64, s, scale, cap, scores, widened, half);
            break;
        case 128:
            attend_group(q, k, v, mask, out, groups, 128, s, scale, cap, scores, widened, half);
            break;
        default:
            attend_group(q, k, v, mask, out, groups, d, s, scale, cap, scores, widened, half);
            break;
    }
}

/*
 * Units [from, to) of (sequence, key/value head), unit u = b * kv_heads + h. q and out: (B, H, 1,
 * D); keys and values: (B, kv_heads, capacity, D) of which the first length positions are read;
 * fresh_keys and fresh_values: NULL, or the step's new key and value (B, kv_heads, 1, D), written
 * to position slot of each unit's rows before it is attended over (the cache's update);
 * row_slots, row_lengths: NULL, or per sequence (a cache whose rows each hold a length of their own)
 * the position its new key and value go to and the positions it attends over, in place of slot and
 * length;
 * mask: NULL or the additive mask rows, sequence b's at b * mask_stride (0: one row for all);
 * cap: the soft cap of the scores, 0 for none; half: whether keys and values hold IEEE halves (a float16
 * cache: the new ones rounded as they are written, every one widened as it is read), else floats.
 * Returns 0 when the scratch could not be allocated.
 */
static int attend_units(const float *q, void *keys, void *values, const float *fresh_keys,
        const float *fresh_values, int slot, const jint *row_slots, const jint *row_lengths, const float *mask,
        float *out, int heads, int kv_heads, int d, int capacity, int length, int mask_stride, float scale,
        float cap, int half, int from, int to) {
    int groups = heads / kv_heads;
    const size_t bytes = half ? sizeof(uint16_t) : sizeof(float);
    /* the scores of the group's heads, then (a float16 cache) a tile of widened keys or values */
    float *scores = malloc(sizeof(float) * ((size_t)groups * length + (half ? (size_t)TILE * d : 0)));
    if (scores == NULL) {
        return 0;
    }
    float *widened = half ? scores + (size_t)groups * length : NULL;
    for (int u = from; u < to; u++) {
        int b = u / kv_heads;
        size_t rows = (size_t)u * groups * d; /* the group's first query row: b * H + h * G */
        char *k = (char *)keys + (size_t)u * capacity * d * bytes;
        char *v = (char *)values + (size_t)u * capacity * d * bytes;
        const float *m = mask == NULL ? NULL : mask + (size_t)b * mask_stride;
        int at = row_slots == NULL ? slot : row_slots[b];
        int s = row_lengths == NULL ? length : row_lengths[b];
        if (fresh_keys != NULL) {
            store_row(k + (size_t)at * d * bytes, fresh_keys + (size_t)u * d, d, half);
            store_row(v + (size_t)at * d * bytes, fresh_values + (size_t)u * d, d, half);
        }
        if (half) {
            attend_unit(q + rows, k, v, m, out + rows, groups, d, s, scale, cap, scores, widened, 1);
        } else {
            attend_unit(q + rows, k, v, m, out + rows, groups, d, s, scale, cap, scores, NULL, 0);
        }
    }
    free(scores);
    return 1;
}

static void *address(JNIEnv *env, jobject buffer) {
    return buffer == NULL ? NULL : (*env)->GetDirectBufferAddress(env, buffer);
}

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_DecodeAttention_attend(JNIEnv *env, jclass cls,
        jobject q_buffer, jobject keys_buffer, jobject values_buffer, jobject mask_buffer,
        jobject out_buffer, jobject fresh_keys_buffer, jobject fresh_values_buffer, jint slot,
        jintArray row_slots_array, jintArray row_lengths_array, jint heads, jint kv_heads, jint head_dim,
        jint capacity, jint length, jint mask_stride, jfloat scale, jfloat softcap, jboolean half_cache, jint from,
        jint to) {
    (void)cls;
    const float *q = address(env, q_buffer);
    void *keys = address(env, keys_buffer);
    void *values = address(env, values_buffer);
    const float *mask = address(env, mask_buffer);
    float *out = address(env, out_buffer);
    const float *fresh_keys = address(env, fresh_keys_buffer);
    const float *fresh_values = address(env, fresh_values_buffer);
    if (q == NULL || keys == NULL || values == NULL || out == NULL || (mask_buffer != NULL && mask == NULL)
            || (fresh_keys == NULL) != (fresh_values == NULL) || (fresh_keys_buffer != NULL && fresh_keys == NULL)) {
        (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
                "decode attention: an array's memory is not reachable as a direct buffer");
        return;
    }
    if (head_dim < 1 || head_dim > MAX_HEAD_DIM || kv_heads < 1 || heads % kv_heads != 0 || length < 1
            || length > capacity || !(softcap >= 0.0f)
            || (fresh_keys != NULL && row_slots_array == NULL && (slot < 0 || slot >= length))) {
        (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
                "decode attention: head_dim must be 1 to 256, heads a multiple of kv_heads, length 1 to capacity,"
                " softcap non-negative, the new position's slot below length");
        return;
    }
    int batch = (to + kv_heads - 1) / kv_heads; /* the sequences the units reach */
    jint *row_slots = NULL;
    jint *row_lengths = NULL;
    if (row_slots_array != NULL || row_lengths_array != NULL) {
        if (row_slots_array == NULL || row_lengths_array == NULL
                || (*env)->GetArrayLength(env, row_slots_array) < batch
                || (*env)->GetArrayLength(env, row_lengths_array) < batch) {
            (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
                    "decode attention: per-row slots and lengths come together, one per sequence");
            return;
        }
        row_slots = malloc(sizeof(jint) * 2 * (size_t)batch);
        if (row_slots == NULL) {
            (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/OutOfMemoryError"),
                    "decode attention: no memory for the rows' lengths");
            return;
        }
        row_lengths = row_slots + batch;
        (*env)->GetIntArrayRegion(env, row_slots_array, 0, batch, row_slots);
        (*env)->GetIntArrayRegion(env, row_lengths_array, 0, batch, row_lengths);
        for (int b = from / kv_heads; b < batch; b++) {
            if (row_lengths[b] < 1 || row_lengths[b] > length || row_slots[b] < 0 || row_slots[b] >= row_lengths[b]) {
                free(row_slots);
                (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/IllegalArgumentException"),
                        "decode attention: a row's length must be 1 to length, its new position's slot below it");
                return;
            }
        }
    }
    int done = attend_units(q, keys, values, fresh_keys, fresh_values, slot, row_slots, row_lengths, mask, out,
            heads, kv_heads, head_dim, capacity, length, mask_stride, scale, softcap, half_cache != JNI_FALSE, from, to);
    free(row_slots);
    if (!done) {
        (*env)->ThrowNew(env, (*env)->FindClass(env, "java/lang/OutOfMemoryError"),
                "decode attention: no memory for the scores");
    }
}
