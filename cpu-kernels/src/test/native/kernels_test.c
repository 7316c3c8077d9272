/*
 * The native kernels' JNI entry points against scalar references, without a JVM: a JNIEnv whose
 * GetDirectBufferAddress, FindClass and ThrowNew are the few functions the kernels call, over plain
 * arrays. Built and run per variant by run-native-tests.sh, the NEON ones under qemu-aarch64, so every
 * build checks the variants this machine cannot run (the Java kernel tests check those it can).
 * Tolerances: float32 kernels against a double reference within 1e-5 of the sum of |terms| (float32
 * rounding of sums of a few hundred terms, about n * 2^-24 of it, with room); int8 dot products against
 * the reference over x on its own int8 grid (the kernel's exact integer sums, float32 scales).
 */
#include <jni.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "simd.h" /* the float16 rounding checked on its own */

/* ---- a JNIEnv for direct buffers ---- */

typedef struct {
    void *address;
} Buffer;

static const char *thrown;

static void *JNICALL buffer_address(JNIEnv *env, jobject buffer) {
    (void)env;
    return buffer == NULL ? NULL : ((Buffer *)buffer)->address;
}

/* The buffers here are allocated at the size the kernels ask for: any capacity passes. */
static jlong JNICALL buffer_capacity(JNIEnv *env, jobject buffer) {
    (void)env;
    (void)buffer;
    return (jlong)1 << 40;
}

static jclass JNICALL find_class(JNIEnv *env, const char *name) {
    (void)env;
    return (jclass)name;
}

static jint JNICALL throw_new(JNIEnv *env, jclass cls, const char *message) {
    (void)env;
    (void)cls;
    thrown = message;
    return 0;
}

/* An int[] as the kernels see it: its length and elements. */
typedef struct {
    jsize length;
    const jint *elements;
} IntArray;

static jsize JNICALL array_length(JNIEnv *env, jarray array) {
    (void)env;
    return ((IntArray *)array)->length;
}

static void JNICALL int_array_region(JNIEnv *env, jintArray array, jsize start, jsize length, jint *into) {
    (void)env;
    memcpy(into, ((IntArray *)array)->elements + start, sizeof(jint) * (size_t)length);
}

/* A float[] as the kernels see it: its length (first, as IntArray's, which array_length reads) and elements. */
typedef struct {
    jsize length;
    const jfloat *elements;
} FloatArray;

static void JNICALL float_array_region(JNIEnv *env, jfloatArray array, jsize start, jsize length, jfloat *into) {
    (void)env;
    memcpy(into, ((FloatArray *)array)->elements + start, sizeof(jfloat) * (size_t)length);
}

static struct JNINativeInterface_ table;
static JNIEnv env_value;
static JNIEnv *env = &env_value;

#define MAX_BUFFERS 16
static Buffer buffers[MAX_BUFFERS];
static int used;

/* A direct buffer over p (NULL for NULL). */
static jobject B(void *p) {
    if (p == NULL) {
        return NULL;
    }
    buffers[used % MAX_BUFFERS].address = p;
    return (jobject)&buffers[used++ % MAX_BUFFERS];
}

/* ---- the entry points ---- */

#define ENTRY(CLASS, NAME) JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_##CLASS##_##NAME
ENTRY(FewRowProduct, multiplyOutIn)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jint);
ENTRY(FewRowProduct, multiplyInOut)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jint);
ENTRY(FewRowProduct, multiplyInOutRows)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jint,
        jboolean);
ENTRY(DecodeAttention, attend)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jobject, jobject, jobject, jint,
        jintArray, jintArray, jint, jint, jint, jint, jint, jint, jfloat, jfloat, jboolean, jint, jint);
ENTRY(PrefillAttention, attend)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jobject, jint, jint, jint, jint,
        jint, jint, jlong, jfloat, jfloat, jboolean, jint, jint);
ENTRY(DecodeOps, norm)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jfloat, jint);
ENTRY(DecodeOps, rotate)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jboolean,
        jboolean, jint, jint);
ENTRY(DecodeOps, activate)(JNIEnv *, jclass, jobject, jobject, jobject, jlong, jint);
ENTRY(LoraUpdate, add)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jintArray, jintArray, jfloatArray, jint,
        jint, jint, jint, jint, jint, jint);
ENTRY(CompressedProduct, multiply)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jobject, jint, jint, jint,
        jint, jint, jint, jint);
ENTRY(CompressedProduct, widen)(JNIEnv *, jclass, jobject, jobject, jobject, jint, jint, jint, jint);
ENTRY(CompressedGemm, multiply)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jobject, jint, jint, jint, jint,
        jint, jint);
JNIEXPORT jint JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_features(JNIEnv *, jclass);
JNIEXPORT jint JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_preparedBytes(JNIEnv *, jclass, jint, jint, jint,
        jint);
ENTRY(CompressedProduct, prepare)(JNIEnv *, jclass, jobject, jobject, jint, jint, jint, jint);
ENTRY(CompressedProduct, multiplyPrepared)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jobject, jint, jint,
        jint, jint, jint, jint);

/* ---- checks ---- */

static int failures;
static int checked;

/* actual[i] against expected[i] within tolerance[i]. */
static void check(const char *what, const float *actual, const double *expected, const double *tolerance, int n) {
    checked++;
    if (thrown != NULL) {
        printf("FAIL %s: threw %s\n", what, thrown);
        failures++;
        thrown = NULL;
        return;
    }
    for (int i = 0; i < n; i++) {
        if (!(fabs(actual[i] - expected[i]) <= tolerance[i])) {
            printf("FAIL %s: [%d] %.9g, expected %.9g within %.3g\n", what, i, actual[i], expected[i], tolerance[i]);
            failures++;
            return;
        }
    }
}

static unsigned seed = 12345;

static float uniform(void) { /* in [-1, 1) */
    seed = seed * 1103515245u + 12345u;
    return (float)((seed >> 8) & 0xffffff) / 8388608.0f - 1.0f;
}

static float *randoms(int n) {
    float *p = malloc(sizeof(float) * (n > 0 ? n : 1));
    for (int i = 0; i < n; i++) {
        p[i] = uniform();
    }
    return p;
}

static double *doubles(int n) {
    return calloc(n > 0 ? n : 1, sizeof(double));
}

#define SUM_TOLERANCE 1e-5

/* ---- few-row products ---- */

static void few_row_products(void) {
    const int in = 100, out = 37;
    /* 1 and 2 rows: one weight row at a time, in several sums (weight_row); more: weight_rows. */
    const int row_counts[] = {1, 2, 4, 7};
    for (size_t count = 0; count < sizeof row_counts / sizeof row_counts[0]; count++) {
        int rows = row_counts[count];
        float *x = randoms(rows * in), *w = randoms(out * in), *bias = randoms(out), *o = randoms(rows * out);
        double *e = doubles(rows * out), *t = doubles(rows * out);
        for (int layout = 0; layout < 2; layout++) {
            for (int r = 0; r < rows; r++) {
                for (int n = 0; n < out; n++) {
                    double sum = bias[n], size = fabs(bias[n]);
                    for (int k = 0; k < in; k++) {
                        double term = (double)x[r * in + k] * (layout == 0 ? w[n * in + k] : w[k * out + n]);
                        sum += term;
                        size += fabs(term);
                    }
                    e[r * out + n] = sum;
                    t[r * out + n] = SUM_TOLERANCE * size;
                }
            }
            if (layout == 0) {
                Java_io_github_djlllmzoo_cpu_FewRowProduct_multiplyOutIn(env, NULL, B(x), B(w), B(bias), B(o), rows, in,
                        out, 0, out);
            } else {
                Java_io_github_djlllmzoo_cpu_FewRowProduct_multiplyInOut(env, NULL, B(x), B(w), B(bias), B(o), rows, in,
                        out, 0, out);
            }
            check(layout == 0 ? "few-row product (out, in)" : "few-row product (in, out)", o, e, t, rows * out);
        }
        if (rows == 1) {
            for (int four = 0; four < 2; four++) {
                Java_io_github_djlllmzoo_cpu_FewRowProduct_multiplyInOutRows(env, NULL, B(x), B(w), B(bias), B(o), out,
                        0, in, (jboolean)four);
                check(four ? "one row by (in, out) rows, four at a time" : "one row by (in, out) rows", o, e, t, out);
            }
        }
        free(x), free(w), free(bias), free(o), free(e), free(t);
    }
}

/* ---- attention ---- */

/* softmax(cap(q k^T * scale) + mask) v of one query row over s keys (d floats each) into e. */
static void attend_reference(const float *q, const float *k, const float *v, const float *mask, int s, int d,
        float scale, float cap, double *e, double *t) {
    double scores[512], top = -INFINITY, sum = 0;
    for (int j = 0; j < s; j++) {
        double dot = 0;
        for (int c = 0; c < d; c++) {
            dot += (double)q[c] * k[j * d + c];
        }
        dot *= scale;
        if (cap > 0) {
            dot = tanh(dot / cap) * cap;
        }
        scores[j] = dot + (mask ? mask[j] : 0);
        top = scores[j] > top ? scores[j] : top;
    }
    for (int j = 0; j < s; j++) {
        scores[j] = exp(scores[j] - top);
        sum += scores[j];
    }
    for (int c = 0; c < d; c++) {
        double acc = 0, size = 0;
        for (int j = 0; j < s; j++) {
            acc += scores[j] / sum * v[j * d + c];
            size += fabs(scores[j] / sum * v[j * d + c]);
        }
        e[c] = acc;
        t[c] = SUM_TOLERANCE * size + 1e-6;
    }
}

static void decode_attention(void) {
    const int batch = 2, heads = 4, kv_heads = 2, d = 40, capacity = 20, length = 13, slot = 12;
    const int groups = heads / kv_heads;
    for (int capped = 0; capped < 2; capped++) {
        float cap = capped ? 2.0f : 0.0f;
        float *q = randoms(batch * heads * d), *keys = randoms(batch * kv_heads * capacity * d);
        float *values = randoms(batch * kv_heads * capacity * d), *mask = randoms(batch * length);
        float *fresh_k = randoms(batch * kv_heads * d), *fresh_v = randoms(batch * kv_heads * d);
        float *o = randoms(batch * heads * d);
        double *e = doubles(batch * heads * d), *t = doubles(batch * heads * d);
        mask[3] = -3.4028235e38f;
        for (int u = 0; u < batch * kv_heads; u++) {
            memcpy(keys + ((size_t)u * capacity + slot) * d, fresh_k + u * d, sizeof(float) * d);
            memcpy(values + ((size_t)u * capacity + slot) * d, fresh_v + u * d, sizeof(float) * d);
        }
        for (int b = 0; b < batch; b++) {
            for (int h = 0; h < heads; h++) {
                int u = b * kv_heads + h / groups;
                attend_reference(q + (b * heads + h) * d, keys + (size_t)u * capacity * d,
                        values + (size_t)u * capacity * d, mask + b * length, length, d, 0.125f, cap,
                        e + (b * heads + h) * d, t + (b * heads + h) * d);
            }
        }
        for (int u = 0; u < batch * kv_heads; u++) { /* the kernel writes the fresh rows itself */
            memset(keys + ((size_t)u * capacity + slot) * d, 0, sizeof(float) * d);
            memset(values + ((size_t)u * capacity + slot) * d, 0, sizeof(float) * d);
        }
        Java_io_github_djlllmzoo_cpu_DecodeAttention_attend(env, NULL, B(q), B(keys), B(values), B(mask), B(o),
                B(fresh_k), B(fresh_v), slot, NULL, NULL, heads, kv_heads, d, capacity, length, length, 0.125f, cap,
                JNI_FALSE, 0, batch * kv_heads);
        check(capped ? "decode attention, soft-capped" : "decode attention", o, e, t, batch * heads * d);
        free(q), free(keys), free(values), free(mask), free(fresh_k), free(fresh_v), free(o), free(e), free(t);
    }
}

/* Rows at lengths of their own (a slot cache): each writes its new key and value at its own slot and
   attends over its own positions only; those past them hold NaN, which would spoil a row that read them. */
static void decode_attention_rows(void) {
    const int batch = 3, heads = 4, kv_heads = 2, d = 40, capacity = 24, length = 21;
    const jint slots[] = {4, 20, 11}, lengths[] = {5, 21, 12};
    const int groups = heads / kv_heads;
    float *q = randoms(batch * heads * d), *keys = randoms(batch * kv_heads * capacity * d);
    float *values = randoms(batch * kv_heads * capacity * d);
    float *fresh_k = randoms(batch * kv_heads * d), *fresh_v = randoms(batch * kv_heads * d);
    float *o = randoms(batch * heads * d), *mask = calloc((size_t)batch * length, sizeof(float));
    double *e = doubles(batch * heads * d), *t = doubles(batch * heads * d);
    for (int u = 0; u < batch * kv_heads; u++) {
        int b = u / kv_heads;
        memcpy(keys + ((size_t)u * capacity + slots[b]) * d, fresh_k + u * d, sizeof(float) * d);
        memcpy(values + ((size_t)u * capacity + slots[b]) * d, fresh_v + u * d, sizeof(float) * d);
    }
    for (int b = 0; b < batch; b++) {
        for (int h = 0; h < heads; h++) {
            int u = b * kv_heads + h / groups;
            attend_reference(q + (b * heads + h) * d, keys + (size_t)u * capacity * d,
                    values + (size_t)u * capacity * d, mask + b * length, lengths[b], d, 0.125f, 0.0f,
                    e + (b * heads + h) * d, t + (b * heads + h) * d);
        }
    }
    for (int u = 0; u < batch * kv_heads; u++) {
        int b = u / kv_heads;
        for (size_t i = (size_t)slots[b] * d; i < (size_t)capacity * d; i++) {
            keys[(size_t)u * capacity * d + i] = __builtin_nanf("");
            values[(size_t)u * capacity * d + i] = __builtin_nanf("");
        }
    }
    IntArray slot_array = {batch, slots}, length_array = {batch, lengths};
    Java_io_github_djlllmzoo_cpu_DecodeAttention_attend(env, NULL, B(q), B(keys), B(values), B(mask), B(o),
            B(fresh_k), B(fresh_v), -1, (jintArray)&slot_array, (jintArray)&length_array, heads, kv_heads, d,
            capacity, length, length, 0.125f, 0.0f, JNI_FALSE, 0, batch * kv_heads);
    check("decode attention, rows of their own lengths", o, e, t, batch * heads * d);
    free(q), free(keys), free(values), free(mask), free(fresh_k), free(fresh_v), free(o), free(e), free(t);
}


/* ---- a float16 KV cache ---- */

/* f as an IEEE half, rounded to nearest with ties to even, bit by bit (no instruction of the kernels'). */
static uint16_t half_of(float f) {
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u, magnitude = x & 0x7fffffffu;
    if (magnitude >= 0x7f800000u) { /* infinity, NaN (quiet) */
        return (uint16_t)(sign | 0x7c00u | (magnitude > 0x7f800000u ? 0x200u : 0));
    }
    if (magnitude >= 0x477ff000u) { /* 65520 and above round to infinity */
        return (uint16_t)(sign | 0x7c00u);
    }
    if (magnitude < 0x38800000u) { /* below 2^-14: a subnormal half, in units of 2^-24 */
        float a;
        memcpy(&a, &magnitude, sizeof a);
        double units = (double)a * 16777216.0, whole = floor(units), rest = units - whole;
        uint32_t h = (uint32_t)whole + (rest > 0.5 || (rest == 0.5 && ((uint32_t)whole & 1)) ? 1 : 0);
        return (uint16_t)(sign | h);
    }
    uint32_t h = ((((magnitude >> 23) - 112u)) << 10) | ((magnitude & 0x7fffffu) >> 13), rest = magnitude & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1))) {
        h++; /* a carry into the exponent is the next power of two, as it should be */
    }
    return (uint16_t)(sign | h);
}

static float float_of(uint16_t h) {
    int exponent = (h >> 10) & 0x1f, mantissa = h & 0x3ff;
    double magnitude = exponent == 0 ? ldexp(mantissa, -24) : ldexp(1024 + mantissa, exponent - 25);
    return (float)((h & 0x8000) ? -magnitude : magnitude);
}

/* n random floats rounded to halves: the codes into codes, their values (exact in float) returned. */
static float *half_randoms(int n, uint16_t **codes) {
    float *x = randoms(n);
    *codes = malloc(sizeof(uint16_t) * (size_t)n);
    for (int i = 0; i < n; i++) {
        (*codes)[i] = half_of(x[i]);
        x[i] = float_of((*codes)[i]);
    }
    return x;
}

/* The rounding itself: ties, subnormals, overflow and the largest half, through the kernels' narrowing. */
static void half_rounding(void) {
    const float cases[] = {1.0f + 0x1p-11f, 1.0f + 3 * 0x1p-11f, -1.0f - 0x1p-11f, 0x1p-25f, 0x1.8p-24f, 3e-8f,
            65504.0f, 65519.0f, 65520.0f, -1e6f, 0.1f, 1.0f / 3.0f, 0.0f, -0.0f, 6.1e-5f};
    const int n = (int)(sizeof cases / sizeof cases[0]);
    uint16_t *codes = calloc(64, sizeof(uint16_t));
    float *rows = calloc(64, sizeof(float));
    memcpy(rows, cases, sizeof cases);
    for (int c = 0; c < n; c += VL) {
        narrow_f16_n(codes + c, vload_n(rows + c, n - c), n - c);
    }
    checked++;
    for (int i = 0; i < n; i++) {
        if (codes[i] != half_of(cases[i])) {
            printf("FAIL float16 rounding of %.9g: 0x%04x, expected 0x%04x\n", cases[i], codes[i], half_of(cases[i]));
            failures++;
        }
    }
    free(codes), free(rows);
}

/* A decode step over a float16 cache: its new keys and values rounded to halves as the kernel writes them
   (bit for bit the reference rounding), every key and value widened exactly, rows at lengths of their own. */
static void decode_attention_half(void) {
    const int batch = 2, heads = 4, kv_heads = 2, d = 40, capacity = 20, length = 13;
    const jint slots[] = {12, 6}, lengths[] = {13, 7};
    const int groups = heads / kv_heads, cached = batch * kv_heads * capacity * d;
    uint16_t *keys, *values;
    float *k = half_randoms(cached, &keys), *v = half_randoms(cached, &values);
    float *q = randoms(batch * heads * d), *mask = calloc((size_t)batch * length, sizeof(float));
    float *fresh_k = randoms(batch * kv_heads * d), *fresh_v = randoms(batch * kv_heads * d);
    float *o = randoms(batch * heads * d);
    double *e = doubles(batch * heads * d), *t = doubles(batch * heads * d);
    for (int u = 0; u < batch * kv_heads; u++) {
        for (int c = 0; c < d; c++) {
            size_t at = ((size_t)u * capacity + slots[u / kv_heads]) * d + c;
            k[at] = float_of(half_of(fresh_k[u * d + c]));
            v[at] = float_of(half_of(fresh_v[u * d + c]));
            keys[at] = values[at] = 0;
        }
    }
    for (int b = 0; b < batch; b++) {
        for (int h = 0; h < heads; h++) {
            int u = b * kv_heads + h / groups;
            attend_reference(q + (b * heads + h) * d, k + (size_t)u * capacity * d, v + (size_t)u * capacity * d,
                    mask + b * length, lengths[b], d, 0.125f, 0.0f, e + (b * heads + h) * d, t + (b * heads + h) * d);
        }
    }
    IntArray slot_array = {batch, slots}, length_array = {batch, lengths};
    Java_io_github_djlllmzoo_cpu_DecodeAttention_attend(env, NULL, B(q), B(keys), B(values), B(mask), B(o),
            B(fresh_k), B(fresh_v), -1, (jintArray)&slot_array, (jintArray)&length_array, heads, kv_heads, d,
            capacity, length, length, 0.125f, 0.0f, JNI_TRUE, 0, batch * kv_heads);
    check("decode attention over a float16 cache", o, e, t, batch * heads * d);
    checked++;
    for (int i = 0; i < cached; i++) {
        if (keys[i] != half_of(k[i]) || values[i] != half_of(v[i])) {
            printf("FAIL decode attention over a float16 cache: the cache's element %d is 0x%04x/0x%04x, expected"
                    " 0x%04x/0x%04x\n", i, keys[i], values[i], half_of(k[i]), half_of(v[i]));
            failures++;
            break;
        }
    }
    free(k), free(v), free(keys), free(values), free(q), free(mask), free(fresh_k), free(fresh_v), free(o), free(e),
            free(t);
}

/* A causal prefill over a float32 cache, or (half) a float16 one whose keys and values are widened exactly as
   they are read. */
static void prefill_attention(int half) {
    const int heads = 2, kv_heads = 1, positions = 7, d = 24, capacity = 9;
    uint16_t *half_keys = NULL, *half_values = NULL;
    float *k = half ? half_randoms(capacity * d, &half_keys) : randoms(capacity * d);
    float *v = half ? half_randoms(capacity * d, &half_values) : randoms(capacity * d);
    float *q = randoms(heads * positions * d);
    float *mask = malloc(sizeof(float) * positions * positions), *o = randoms(positions * heads * d);
    double *e = doubles(positions * heads * d), *t = doubles(positions * heads * d);
    for (int i = 0; i < positions; i++) {
        for (int j = 0; j < positions; j++) {
            mask[i * positions + j] = j <= i ? 0.0f : -3.4028235e38f;
        }
    }
    for (int h = 0; h < heads; h++) {
        for (int i = 0; i < positions; i++) {
            attend_reference(q + (h * positions + i) * d, k, v, mask + i * positions, positions, d, 0.2f, 0,
                    e + (i * heads + h) * d, t + (i * heads + h) * d);
        }
    }
    void *keys = half ? (void *)half_keys : (void *)k, *values = half ? (void *)half_values : (void *)v;
    Java_io_github_djlllmzoo_cpu_PrefillAttention_attend(env, NULL, B(q), B(keys), B(values), B(mask), B(o), heads,
            kv_heads, positions, positions, d, capacity, 0, 0.2f, 0.0f, half ? JNI_TRUE : JNI_FALSE, 0, heads);
    check(half ? "prefill attention over a float16 cache" : "prefill attention, causal", o, e, t,
            positions * heads * d);
    free(k), free(v), free(half_keys), free(half_values), free(q), free(mask), free(o), free(e), free(t);
}

/* ---- elementwise operations ---- */

static void decode_ops(void) {
    const int rows = 3, width = 52;
    float *x = randoms(rows * width), *w = randoms(width), *b = randoms(width), *o = randoms(rows * width);
    double *e = doubles(rows * width), *t = doubles(rows * width);
    for (int kind = 0; kind < 3; kind++) {
        for (int r = 0; r < rows; r++) {
            const float *row = x + r * width;
            double mean = 0, squares = 0;
            for (int k = 0; k < width; k++) {
                mean += kind == 2 ? row[k] / (double)width : 0;
            }
            for (int k = 0; k < width; k++) {
                squares += (row[k] - mean) * (row[k] - mean) / width;
            }
            double s = 1 / sqrt(squares + 1e-5);
            for (int k = 0; k < width; k++) {
                double y = (row[k] - mean) * s * (kind == 1 ? 1 + w[k] : w[k]) + (kind == 2 ? b[k] : 0);
                e[r * width + k] = y;
                t[r * width + k] = 1e-5 * (fabs(y) + 1);
            }
        }
        Java_io_github_djlllmzoo_cpu_DecodeOps_norm(env, NULL, B(x), B(w), B(b), B(o), rows, width, 1e-5f, kind);
        check(kind == 0 ? "RMSNorm" : kind == 1 ? "RMSNorm (1 + w)" : "LayerNorm", o, e, t, rows * width);
    }
    for (int activation = 0; activation < 2; activation++) {
        int n = rows * width;
        for (int i = 0; i < n; i++) {
            double g = x[i] * 6, y;
            if (activation == 0) {
                y = g / (1 + exp(-g));
            } else {
                y = 0.5 * g * (1 + tanh(0.7978845608028654 * (g + 0.044715 * g * g * g)));
            }
            e[i] = y * b[i % width];
            t[i] = 1e-5 * (fabs(e[i]) + 1e-3);
        }
        float *gate = malloc(sizeof(float) * n), *up = malloc(sizeof(float) * n);
        for (int i = 0; i < n; i++) {
            gate[i] = x[i] * 6;
            up[i] = b[i % width];
        }
        Java_io_github_djlllmzoo_cpu_DecodeOps_activate(env, NULL, B(gate), B(up), B(o), n, activation);
        check(activation == 0 ? "SiLU times up" : "GELU-tanh times up", o, e, t, n);
        free(gate), free(up);
    }
    /* rotation of 2 heads of one sequence at 3 positions, head_dim 20 */
    const int heads = 2, positions = 3, d = 20;
    float *cos = randoms(positions * d), *sin = randoms(positions * d), *h = randoms(heads * positions * d);
    float *r = randoms(heads * positions * d);
    for (int u = 0; u < heads; u++) {
        for (int p = 0; p < positions; p++) {
            const float *xr = h + (u * positions + p) * d;
            for (int k = 0; k < d; k++) {
                double rotated = k < d / 2 ? -xr[k + d / 2] : xr[k - d / 2];
                int at = (u * positions + p) * d + k;
                e[at] = xr[k] * (double)cos[p * d + k] + rotated * (k < d / 2 ? -1.0 : 1.0) * sin[p * d + k];
                t[at] = 1e-6;
            }
        }
    }
    Java_io_github_djlllmzoo_cpu_DecodeOps_rotate(env, NULL, B(h), B(cos), B(sin), B(r), 1, heads, positions, d, 0, 0,
            0, heads);
    check("rotary embedding", r, e, t, heads * positions * d);
    free(x), free(w), free(b), free(o), free(e), free(t), free(cos), free(sin), free(h), free(r);
}

/* ---- per-row LoRA updates ---- */

/*
 * y += scale_b (x_u A_b^T) B_b^T for each position u of batch row b, over its own adapter's rank columns of
 * the concatenated pairs (ranks 4, 8 and 70: more than the kernel's piece of 64 columns), one row without an
 * update, at 1 and 3 positions a row and output widths with and without whole blocks, the positions computed
 * in two ranges. Tolerance: the float32 sums of the down product (x . A_j, in terms) carried through |B^T|,
 * and those of the update (rank terms) on top of y.
 */
static void lora_updates(void) {
    enum { ROWS = 5, ADAPTERS = 3 };
    const int in = 100, ranks[ADAPTERS] = {4, 8, 70}, adapter_of_row[ROWS] = {1, -1, 0, 2, 1};
    const float scalings[ADAPTERS] = {2.0f, 0.5f, 0.125f};
    const int outs[] = {37, 150};
    int total = 0, first_of[ADAPTERS];
    for (int i = 0; i < ADAPTERS; i++) {
        first_of[i] = total;
        total += ranks[i];
    }
    jint first[ROWS], rank[ROWS];
    jfloat scale[ROWS];
    for (int b = 0; b < ROWS; b++) {
        int adapter = adapter_of_row[b];
        first[b] = adapter < 0 ? 0 : first_of[adapter];
        rank[b] = adapter < 0 ? 0 : ranks[adapter];
        scale[b] = adapter < 0 ? 0 : scalings[adapter];
    }
    IntArray firsts = {ROWS, first}, rank_array = {ROWS, rank};
    FloatArray scale_array = {ROWS, scale};
    for (size_t o = 0; o < sizeof outs / sizeof outs[0]; o++) {
        int out = outs[o];
        for (int positions = 1; positions <= 3; positions += 2) {
            int units = ROWS * positions;
            float *x = randoms(units * in), *a = randoms(total * in), *bt = randoms(total * out), *y = randoms(units * out);
            double *e = doubles(units * out), *t = doubles(units * out);
            for (int u = 0; u < units; u++) {
                int b = u / positions;
                for (int n = 0; n < out; n++) {
                    e[u * out + n] = y[u * out + n];
                    t[u * out + n] = SUM_TOLERANCE * fabs(y[u * out + n]);
                }
                for (int j = first[b]; j < first[b] + rank[b]; j++) {
                    double down = 0, size = 0;
                    for (int k = 0; k < in; k++) {
                        down += (double)x[u * in + k] * a[j * in + k];
                        size += fabs((double)x[u * in + k] * a[j * in + k]);
                    }
                    for (int n = 0; n < out; n++) {
                        double weight = bt[j * out + n];
                        e[u * out + n] += scale[b] * down * weight;
                        t[u * out + n] += SUM_TOLERANCE * scale[b] * size * fabs(weight) * 2;
                    }
                }
            }
            int half = units / 2;
            Java_io_github_djlllmzoo_cpu_LoraUpdate_add(env, NULL, B(x), B(a), B(bt), B(y), (jintArray)&firsts,
                    (jintArray)&rank_array, (jfloatArray)&scale_array, ROWS, positions, in, out, total, 0, half);
            Java_io_github_djlllmzoo_cpu_LoraUpdate_add(env, NULL, B(x), B(a), B(bt), B(y), (jintArray)&firsts,
                    (jintArray)&rank_array, (jfloatArray)&scale_array, ROWS, positions, in, out, total, half, units);
            check(positions == 1 ? "LoRA update per row, one position" : "LoRA update per row, three positions", y, e,
                    t, units * out);
            free(x), free(a), free(bt), free(y), free(e), free(t);
        }
    }
    /* a row whose columns lie past the pairs is refused, nothing written */
    jint past[ROWS] = {0, 0, 0, total - 2, 0};
    IntArray past_array = {ROWS, past};
    float *x = randoms(ROWS * in), *a = randoms(total * in), *bt = randoms(total * 8), *y = randoms(ROWS * 8);
    Java_io_github_djlllmzoo_cpu_LoraUpdate_add(env, NULL, B(x), B(a), B(bt), B(y), (jintArray)&past_array,
            (jintArray)&rank_array, (jfloatArray)&scale_array, ROWS, 1, in, 8, total, 0, ROWS);
    checked++;
    if (thrown == NULL) {
        printf("FAIL LoRA update: columns past the pairs were not refused\n");
        failures++;
    }
    thrown = NULL;
    free(x), free(a), free(bt), free(y);
}

/* ---- compressed weights ---- */

static float half_to_float(uint16_t h) {
    int exponent = (h >> 10) & 31, mantissa = h & 1023;
    float magnitude = exponent == 0 ? ldexpf((float)mantissa, -24) : ldexpf((float)(mantissa | 1024), exponent - 25);
    return (h & 0x8000) ? -magnitude : magnitude;
}

/* Truncated, for values below float16's largest: those under its normal range become a signed zero (a uniform()
   draw can come that close to 0, and its exponent would then wrap into a huge one). Exact either way: the
   expected values are widened from the codes. */
static uint16_t float_to_half(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    int exponent = (int)((bits >> 23) & 255) - 127 + 15;
    if (exponent <= 0) {
        return (uint16_t)((bits >> 16) & 0x8000);
    }
    return (uint16_t)(((bits >> 16) & 0x8000) | (exponent << 10) | ((bits >> 13) & 1023));
}

enum { BFLOAT16 = 0, FLOAT16 = 1, INT8 = 2, INT4 = 3, INT6 = 4 };

/* A weight (out, in) in format with its scales, and its float32 values. */
static void *compressed(int format, int out, int in, uint16_t **scales, float *values) {
    int groups = in / 32;
    *scales = malloc(sizeof(uint16_t) * out * groups);
    if (format == INT4) { /* llama.cpp's Q4_0: element j in the low nibble of byte j, j + 16 in its high one */
        uint8_t *packed = calloc((size_t)out * groups, 16);
        for (int n = 0; n < out; n++) {
            for (int g = 0; g < groups; g++) {
                uint16_t s = float_to_half(0.01f + 0.02f * (uniform() + 1));
                (*scales)[n * groups + g] = s;
                for (int j = 0; j < 32; j++) {
                    int q = (int)((uniform() + 1) * 8) & 15;
                    packed[(n * groups + g) * 16 + j % 16] |= (uint8_t)(q << (j < 16 ? 0 : 4));
                    values[n * in + g * 32 + j] = (q - 8) * half_to_float(s);
                }
            }
        }
        return packed;
    }
    if (format == INT6) { /* 24 bytes a group: u's low nibbles as Q4_0's, then byte 16 + k holds the high 2 bits of
                             elements k, k + 8, k + 16, k + 24 in bits 0-1, 2-3, 4-5, 6-7; value (u - 32) * scale */
        uint8_t *packed = calloc((size_t)out * groups, 24);
        for (int n = 0; n < out; n++) {
            for (int g = 0; g < groups; g++) {
                uint16_t s = float_to_half(0.01f + 0.02f * (uniform() + 1));
                (*scales)[n * groups + g] = s;
                uint8_t *at = packed + (size_t)(n * groups + g) * 24;
                for (int j = 0; j < 32; j++) {
                    int u = (int)((uniform() + 1) * 32) & 63;
                    at[j % 16] |= (uint8_t)((u & 15) << (j < 16 ? 0 : 4));
                    at[16 + j % 8] |= (uint8_t)((u >> 4) << (2 * (j / 8)));
                    values[n * in + g * 32 + j] = (u - 32) * half_to_float(s);
                }
            }
        }
        return packed;
    }
    if (format == INT8) {
        int8_t *codes = malloc((size_t)out * in);
        for (int n = 0; n < out; n++) {
            for (int g = 0; g < groups; g++) {
                uint16_t s = float_to_half(0.01f + 0.02f * (uniform() + 1));
                (*scales)[n * groups + g] = s;
                for (int k = g * 32; k < g * 32 + 32; k++) {
                    codes[n * in + k] = (int8_t)(int)(uniform() * 127);
                    values[n * in + k] = codes[n * in + k] * half_to_float(s);
                }
            }
        }
        return codes;
    }
    uint16_t *codes = malloc(sizeof(uint16_t) * out * in);
    for (int i = 0; i < out * in; i++) {
        float v = uniform();
        uint32_t bits;
        memcpy(&bits, &v, sizeof bits);
        codes[i] = format == BFLOAT16 ? (uint16_t)(bits >> 16) : float_to_half(v);
        uint32_t widened = (uint32_t)codes[i] << 16;
        memcpy(&values[i], &widened, sizeof v);
        if (format == FLOAT16) {
            values[i] = half_to_float(codes[i]);
        }
    }
    return codes;
}

/* x on its int8 grid per group of 32, as the kernels quantize it. */
static void int8_grid(const float *x, int n, float *grid) {
    for (int g = 0; g < n; g += 32) {
        float max = 0;
        for (int k = g; k < g + 32; k++) {
            max = fabsf(x[k]) > max ? fabsf(x[k]) : max;
        }
        float d = max / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
        for (int k = g; k < g + 32; k++) {
            float q = rintf(x[k] * inverse);
            grid[k] = (q < -127 ? -127 : q > 127 ? 127 : q) * d;
        }
    }
}

static void product_reference(const float *x, const float *w, const float *bias, int rows, int in, int out, double *e,
        double *t) {
    for (int r = 0; r < rows; r++) {
        for (int n = 0; n < out; n++) {
            double sum = bias ? bias[n] : 0, size = fabs(sum);
            for (int k = 0; k < in; k++) {
                sum += (double)x[r * in + k] * w[n * in + k];
                size += fabs((double)x[r * in + k] * w[n * in + k]);
            }
            e[r * out + n] = sum;
            t[r * out + n] = SUM_TOLERANCE * size;
        }
    }
}

/* A prefill's product: 5 rows by a weight (out, in) in format, the columns from 16 (int8, int4, int6 with x on its
   int8 grid, as the kernel's integer dot products take it). */
static void prefill_product(int format, int in, int out) {
    const int rows = 5;
    char what[96];
    float *values = malloc(sizeof(float) * out * in);
    uint16_t *scales;
    void *codes = compressed(format, out, in, &scales, values);
    float *x = randoms(rows * in), *grid = malloc(sizeof(float) * rows * in), *o = calloc(rows * out, sizeof(float));
    double *e = doubles(rows * out), *t = doubles(rows * out);
    if (format >= INT8) {
        int8_grid(x, rows * in, grid);
    } else {
        memcpy(grid, x, sizeof(float) * rows * in);
    }
    product_reference(grid, values, NULL, rows, in, out, e, t);
    for (int i = 0; i < rows * out; i++) {
        if (i % out < 16) {
            e[i] = 0;
        }
    }
    Java_io_github_djlllmzoo_cpu_CompressedGemm_multiply(env, NULL, B(x), B(codes), B(scales), NULL, B(o), format,
            rows, in, out, 16, out);
    snprintf(what, sizeof what, "prefill product of format %d, %d inputs, columns 16 on", format, in);
    check(what, o, e, t, rows * out);
    free(values), free(scales), free(codes), free(x), free(grid), free(o), free(e), free(t);
}

/* in: 96 (no whole block of the AVX-512 transposed kernel's 256 inputs), 320 (one whole block and a ragged one). */
/*
 * Where the variant has a prepared form for the product (int8 and int4 by the int8 dot product; AVX-512: in blocks),
 * the product of x prepared once (prepare, then multiplyPrepared over two runs of the columns) is bit for bit
 * expected, the product multiply computed quantizing x itself.
 */
static void prepared_product(const float *x, void *codes, uint16_t *scales, float *bias, const float *expected,
        int format, int rows, int in, int out, int dots) {
    jint bytes = Java_io_github_djlllmzoo_cpu_CompressedProduct_preparedBytes(env, NULL, format, rows, in, dots);
    if (bytes == 0) {
        return;
    }
    void *form = malloc((size_t)bytes);
    float *o = malloc(sizeof(float) * rows * out);
    Java_io_github_djlllmzoo_cpu_CompressedProduct_prepare(env, NULL, B((void *)x), B(form), format, rows, in, dots);
    Java_io_github_djlllmzoo_cpu_CompressedProduct_multiplyPrepared(env, NULL, B(form), B(codes), B(scales), B(bias),
            B(o), format, rows, in, out, 0, out / 2);
    Java_io_github_djlllmzoo_cpu_CompressedProduct_multiplyPrepared(env, NULL, B(form), B(codes), B(scales), B(bias),
            B(o), format, rows, in, out, out / 2, out);
    checked++;
    if (thrown != NULL || memcmp(o, expected, sizeof(float) * rows * out) != 0) {
        printf("FAIL prepared product of format %d, %d inputs, %d rows, dot products %d: %s\n", format, in, rows,
                dots, thrown != NULL ? thrown : "not the product of multiply bit for bit");
        thrown = NULL;
        failures++;
    }
    free(form), free(o);
}

static void compressed_products(int in) {
    const int out = 19;
    char what[96];
    for (int format = 0; format <= INT6; format++) {
        float *values = malloc(sizeof(float) * out * in), *widened = malloc(sizeof(float) * out * in);
        uint16_t *scales;
        void *codes = compressed(format, out, in, &scales, values);
        Java_io_github_djlllmzoo_cpu_CompressedProduct_widen(env, NULL, B(codes), B(scales), B(widened), format, in, 0,
                out);
        double *exact = doubles(out * in), *zero = doubles(out * in);
        for (int i = 0; i < out * in; i++) {
            exact[i] = values[i];
        }
        snprintf(what, sizeof what, "widening of format %d", format);
        check(what, widened, exact, zero, out * in);
        for (int rows = 1; rows <= 8; rows += 3) {
            float *x = randoms(rows * in), *grid = malloc(sizeof(float) * rows * in), *bias = randoms(out);
            float *o = randoms(rows * out);
            double *e = doubles(rows * out), *t = doubles(rows * out);
            /* int8, int4, int6: the widening kernel, the int8 dot product, and (AVX-512) its transposed blocks */
            int dots = format >= INT8 ? 3 : 1;
            for (int dot = 0; dot < dots; dot++) {
                if (dot) {
                    int8_grid(x, rows * in, grid);
                } else {
                    memcpy(grid, x, sizeof(float) * rows * in);
                }
                product_reference(grid, values, bias, rows, in, out, e, t);
                Java_io_github_djlllmzoo_cpu_CompressedProduct_multiply(env, NULL, B(x), B(codes), B(scales), B(bias),
                        B(o), format, rows, in, out, 0, out, dot == 2 ? 1 | 4 : dot);
                snprintf(what, sizeof what, "decode product of format %d, %d inputs, %d rows%s", format, in, rows,
                        dot == 2 ? ", int8 dot product in blocks" : dot ? ", int8 dot product" : "");
                check(what, o, e, t, rows * out);
                prepared_product(x, codes, scales, bias, o, format, rows, in, out, dot == 2 ? 1 | 4 : dot);
            }
            free(x), free(grid), free(bias), free(o), free(e), free(t);
        }
        free(values), free(widened), free(scales), free(codes), free(exact), free(zero);
        prefill_product(format, in, out);
        if (format >= INT8) { /* inputs past one span of compressed_gemm.c (SPAN 1024): a second pass over them */
            prefill_product(format, 1120, out);
        }
    }
}

int main(void) {
    table.GetDirectBufferAddress = buffer_address;
    table.FindClass = find_class;
    table.GetDirectBufferCapacity = buffer_capacity;
    table.ThrowNew = throw_new;
    table.GetArrayLength = array_length;
    table.GetIntArrayRegion = int_array_region;
    table.GetFloatArrayRegion = float_array_region;
    env_value = &table;
    few_row_products();
    decode_attention();
    decode_attention_rows();
    prefill_attention(0);
    half_rounding();
    decode_attention_half();
    prefill_attention(1);
    decode_ops();
    lora_updates();
    if (Java_io_github_djlllmzoo_cpu_CompressedProduct_features(env, NULL) & 1) {
        compressed_products(96);
        /* 7 rows of 3520 int8 codes outgrow X_TILE_BYTES: the int8 dot product's sums are carried between tiles */
        compressed_products(3520);
        compressed_products(320);
    } else {
        printf("skipped: compressed products (no int8 dot product on this CPU)\n");
    }
    printf("%s: %d checks, %d failed\n", failures ? "FAILED" : "passed", checked, failures);
    return failures != 0;
}
