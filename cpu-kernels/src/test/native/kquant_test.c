/*
 * kquant_product.c's entry points (q4_k product of a decode step's and a prefill's rows, and widening) against a scalar reference in
 * double precision, without a JVM, per variant (run-native-tests.sh: AVX-512 and AVX2 natively, NEON
 * with and without sdot under qemu-aarch64). The reference widens each weight as llama.cpp's
 * dequantize_row_q4_K does and multiplies it with x on its own int8 grid (per 256 inputs, scale
 * max|x| / 127, ties to even: what the kernel multiplies, its integer sums exact), so what is left is
 * float32 rounding of the scaled sums: within 1e-5 of the sum of |terms| (about n * 2^-24 of it for a
 * few hundred terms, with room). The widening within an ulp of twice the row's largest magnitude (a
 * fused multiply-add may skip one rounding). And each row of a product of several equals that row's
 * product alone, bit for bit, also where a batch's x is read in chunks and its row's alone is not.
 */
#include <jni.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply(JNIEnv *, jclass, jobject, jobject,
        jobject, jobject, jint, jint, jint, jint, jint);
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_widen(JNIEnv *, jclass, jobject, jobject, jint,
        jint, jint);
JNIEXPORT jint JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_preparedBytes(JNIEnv *, jclass, jint, jint);
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_prepare(JNIEnv *, jclass, jobject, jobject, jint,
        jint);
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_multiplyPrepared(JNIEnv *, jclass, jobject, jobject,
        jobject, jobject, jint, jint, jint, jint, jint);

/* The JNIEnv the kernel sees: a jobject is the address itself; a refusal is remembered. */
static const char *refused;

static void *JNICALL address_of(JNIEnv *e, jobject object) {
    (void)e;
    return (void *)object;
}

/* The capacity of the buffer prepared() hands the kernel (the only one whose capacity it asks). */
static jlong capacity;

static jlong JNICALL capacity_of(JNIEnv *e, jobject object) {
    (void)e;
    (void)object;
    return capacity;
}

static jclass JNICALL class_named(JNIEnv *e, const char *name) {
    (void)e;
    return (jclass)name;
}

static jint JNICALL refuse(JNIEnv *e, jclass cls, const char *message) {
    (void)e;
    (void)cls;
    refused = message;
    return 0;
}

static int checks, failures;

static void check(int ok, const char *what, int rows, int in, int at) {
    checks++;
    if (!ok) {
        failures++;
        if (failures <= 10) {
            printf("FAILED %s: rows %d, in %d, at %d\n", what, rows, in, at);
        }
    }
}

static float half_to_float(uint16_t h) {
    int exponent = (h >> 10) & 31, mantissa = h & 1023;
    float v = exponent == 0 ? ldexpf((float)mantissa, -24) : ldexpf((float)(mantissa | 1024), exponent - 25);
    return h & 0x8000 ? -v : v;
}

/* Weight n's input k as the reference widens it: (d * sc) * q - dmin * m. */
static float weight_at(const uint8_t *codes, int in, int n, int k) {
    int blocks = (in + 255) / 256;
    const uint8_t *block = codes + ((size_t)n * blocks + k / 256) * 144;
    int j = (k % 256) / 32, l = k % 32;
    const uint8_t *s = block + 4;
    int sc = j < 4 ? s[j] & 63 : (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
    int m = j < 4 ? s[j + 4] & 63 : (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    int q = (block[16 + 32 * (j / 2) + l] >> (4 * (j % 2))) & 15;
    uint16_t d, dmin;
    memcpy(&d, block, 2);
    memcpy(&dmin, block + 2, 2);
    float step = half_to_float(d) * (float)sc;
    return step * (float)q - half_to_float(dmin) * (float)m;
}

/* x on its int8 grid per super-block of 256 inputs (the last one cut at in), as the kernel quantizes it. */
static void on_grid(const float *x, int rows, int in, double *out) {
    for (int r = 0; r < rows; r++) {
        for (int start = 0; start < in; start += 256) {
            int count = in - start < 256 ? in - start : 256;
            const float *xs = x + (size_t)r * in + start;
            float amax = 0;
            for (int l = 0; l < count; l++) {
                amax = fabsf(xs[l]) > amax ? fabsf(xs[l]) : amax;
            }
            float d = amax / 127.0f, inverse = d > 0 ? 1.0f / d : 0.0f;
            for (int l = 0; l < count; l++) {
                out[(size_t)r * in + start + l] = (double)rintf(xs[l] * inverse) * d;
            }
        }
    }
}

static float uniform(void) {
    return (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
}

/* A q4_k weight (out_features, in) of random codes, scales and mins; d and dmin float16 of magnitude 2^-12 to 2^-8. */
static uint8_t *random_weight(int in, int out_features) {
    int blocks = (in + 255) / 256;
    size_t bytes = (size_t)out_features * blocks * 144;
    uint8_t *codes = malloc(bytes);
    for (size_t i = 0; i < bytes; i++) {
        codes[i] = (uint8_t)rand();
    }
    for (int n = 0; n < out_features * blocks; n++) {
        uint16_t d = (uint16_t)((3 + rand() % 4) << 10 | rand() % 1024), dmin = (uint16_t)((3 + rand() % 4) << 10);
        memcpy(codes + (size_t)n * 144, &d, 2);
        memcpy(codes + (size_t)n * 144 + 2, &dmin, 2);
    }
    return codes;
}

static void run(JNIEnv *env, int rows, int in, int out_features, int from, int to) {
    uint8_t *codes = random_weight(in, out_features);
    float *x = malloc(sizeof(float) * rows * in), *bias = malloc(sizeof(float) * out_features);
    float *out = calloc((size_t)rows * out_features, sizeof(float));
    double *grid = malloc(sizeof(double) * rows * in);
    for (int i = 0; i < rows * in; i++) {
        x[i] = uniform() * (1 + i % 3);
    }
    for (int n = 0; n < out_features; n++) {
        bias[n] = uniform();
    }
    on_grid(x, rows, in, grid);
    refused = NULL;
    Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply(env, NULL, (jobject)x, (jobject)codes, (jobject)bias,
            (jobject)out, rows, in, out_features, from, to);
    check(refused == NULL, "q4_k product refused", rows, in, 0);
    for (int r = 0; r < rows; r++) {
        for (int n = from; n < to; n++) {
            double sum = bias[n], magnitude = fabs(bias[n]);
            for (int k = 0; k < in; k++) {
                double term = (double)weight_at(codes, in, n, k) * grid[(size_t)r * in + k];
                sum += term;
                magnitude += fabs(term);
            }
            check(fabs(out[(size_t)r * out_features + n] - sum) <= 1e-5 * magnitude + 1e-30, "q4_k product", rows,
                    in, n);
        }
    }
    float *wide = malloc(sizeof(float) * out_features * in);
    Java_io_github_djlllmzoo_cpu_KQuantProduct_widen(env, NULL, (jobject)codes, (jobject)wide, in, from, to);
    for (int n = from; n < to; n++) {
        float largest = 0;
        for (int k = 0; k < in; k++) {
            largest = fmaxf(largest, fabsf(weight_at(codes, in, n, k)));
        }
        for (int k = 0; k < in; k++) {
            float expected = weight_at(codes, in, n, k);
            check(fabsf(wide[(size_t)n * in + k] - expected) <= nextafterf(2 * largest, INFINITY) - 2 * largest,
                    "q4_k widening", 0, in, n * in + k);
        }
    }
    free(codes);
    free(x);
    free(bias);
    free(out);
    free(grid);
    free(wide);
}

/*
 * Each row of a product of 2 to 8 rows equals the product of that row alone, bit for bit: a row's sums and
 * their order do not depend on the rows beside it (a batch's sequence decodes as it would alone).
 */
static void rows_alone(JNIEnv *env, int rows, int in, int out_features) {
    uint8_t *codes = random_weight(in, out_features);
    float *x = malloc(sizeof(float) * rows * in), *together = malloc(sizeof(float) * rows * out_features);
    float *alone = malloc(sizeof(float) * out_features);
    for (int i = 0; i < rows * in; i++) {
        x[i] = uniform();
    }
    Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply(env, NULL, (jobject)x, (jobject)codes, NULL, (jobject)together,
            rows, in, out_features, 0, out_features);
    for (int r = 0; r < rows; r++) {
        Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply(env, NULL, (jobject)(x + (size_t)r * in), (jobject)codes, NULL,
                (jobject)alone, 1, in, out_features, 0, out_features);
        for (int n = 0; n < out_features; n++) {
            check(memcmp(&alone[n], &together[(size_t)r * out_features + n], sizeof(float)) == 0, "q4_k row alone",
                    rows, in, n);
        }
    }
    free(codes);
    free(x);
    free(together);
    free(alone);
}

/*
 * x prepared once (preparedBytes, prepare) and its product taken in two runs of columns as two cores'
 * calls would (multiplyPrepared): bit for bit multiply's; the form at an address that is not 64-byte
 * aligned, as a Java direct buffer may be.
 */
static void prepared(JNIEnv *env, int rows, int in, int out_features) {
    uint8_t *codes = random_weight(in, out_features);
    float *x = malloc(sizeof(float) * rows * in), *bias = malloc(sizeof(float) * out_features);
    float *direct = malloc(sizeof(float) * rows * out_features), *split = malloc(sizeof(float) * rows * out_features);
    for (int i = 0; i < rows * in; i++) {
        x[i] = uniform() * (1 + i % 5);
    }
    for (int n = 0; n < out_features; n++) {
        bias[n] = uniform();
    }
    jint bytes = Java_io_github_djlllmzoo_cpu_KQuantProduct_preparedBytes(env, NULL, rows, in);
    check(bytes > 0, "q4_k prepared form's size", rows, in, 0);
    char *memory = malloc((size_t)bytes + 16);
    memset(memory, 0x5A, (size_t)bytes + 16); /* not zeros: the padding is the kernel's to write */
    capacity = bytes;
    refused = NULL;
    Java_io_github_djlllmzoo_cpu_KQuantProduct_prepare(env, NULL, (jobject)x, (jobject)(memory + 4), rows, in);
    check(refused == NULL, "q4_k prepare refused", rows, in, 0);
    Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply(env, NULL, (jobject)x, (jobject)codes, (jobject)bias,
            (jobject)direct, rows, in, out_features, 0, out_features);
    int half = out_features / 2 + 1;
    Java_io_github_djlllmzoo_cpu_KQuantProduct_multiplyPrepared(env, NULL, (jobject)(memory + 4), (jobject)codes,
            (jobject)bias, (jobject)split, rows, in, out_features, half, out_features);
    Java_io_github_djlllmzoo_cpu_KQuantProduct_multiplyPrepared(env, NULL, (jobject)(memory + 4), (jobject)codes,
            (jobject)bias, (jobject)split, rows, in, out_features, 0, half);
    check(refused == NULL, "q4_k prepared product refused", rows, in, 0);
    for (int i = 0; i < rows * out_features; i++) {
        check(memcmp(&direct[i], &split[i], sizeof(float)) == 0, "q4_k prepared product", rows, in, i);
    }
    capacity = bytes - 1;
    Java_io_github_djlllmzoo_cpu_KQuantProduct_prepare(env, NULL, (jobject)x, (jobject)(memory + 4), rows, in);
    check(refused != NULL, "q4_k prepare into too small a buffer refused", rows, in, 0);
    free(codes);
    free(x);
    free(bias);
    free(direct);
    free(split);
    free(memory);
}

int main(void) {
    struct JNINativeInterface_ table;
    memset(&table, 0, sizeof table);
    table.GetDirectBufferAddress = address_of;
    table.GetDirectBufferCapacity = capacity_of;
    table.FindClass = class_named;
    table.ThrowNew = refuse;
    JNIEnv env_value = &table;
    JNIEnv *env = &env_value;
    srand(31);
    for (int rows = 1; rows <= 8; rows++) {
        run(env, rows, 256, 9, 0, 9);
        run(env, rows, 288, 13, 2, 11); /* a super-block cut short at one sub-block, a run of columns */
        run(env, rows, 1024 + 96, 5, 0, 5); /* three sub-blocks of the last */
    }
    run(env, 1, 512, 8, 1, 7); /* one row's outputs two at a time: an even run from an odd column */
    run(env, 1, 2048 + 32, 6, 0, 5); /* and an odd one, the last super-block one sub-block long */
    run(env, 3, 4096, 40, 1, 40);
    /* a prefill: tiles of 8 rows and a last shorter one, over more than one panel of 64 columns */
    run(env, 21, 288, 150, 3, 147);
    run(env, 9, 512, 70, 0, 70);
    /*
     * x past L1 (kq_chunk): a down projection's 8 rows of 5632 inputs in two chunks of 11 super-blocks, 23
     * super-blocks (the last cut short) in chunks of 12 and 11, over spans of 16 columns and a last shorter
     * one; and a prefill's tiles chunked the same way
     */
    run(env, 8, 5632, 40, 3, 37);
    run(env, 5, 5632 + 96, 20, 0, 20);
    run(env, 7, 5632 + 96, 19, 1, 18);
    run(env, 13, 5632 + 96, 18, 0, 18);
    for (int rows = 2; rows <= 8; rows++) {
        rows_alone(env, rows, 1024 + 96, 7);
        rows_alone(env, rows, 5632 + 96, 18); /* chunked from 5 rows on, not alone */
    }
    for (int rows = 1; rows <= 8; rows++) {
        prepared(env, rows, 288, 11);
        prepared(env, rows, 5632 + 96, 21);
    }
    check(Java_io_github_djlllmzoo_cpu_KQuantProduct_preparedBytes(env, NULL, 9, 256) == 0
                    && Java_io_github_djlllmzoo_cpu_KQuantProduct_preparedBytes(env, NULL, 1, 48) == 0,
            "q4_k prepared form only for 1 to 8 rows and whole groups", 9, 48, 0);
    printf("%s: %d checks, %d failed\n", failures ? "FAILED" : "passed", checks, failures);
    return failures ? 1 : 0;
}
