/*
 * The q4_k decode product (kquant_product.c) timed beside int4's (compressed_product.c, dot products on) on
 * one core: a 5632 x 2048 weight of random codes, 1 to 8 rows of x, the best of 30 calls each, interleaved.
 * With a second argument C > 1, C copies of each weight taken in turn (16: 104 MB of q4_k, past L3), so the
 * weight streams from memory as in a decode step rather than from L3; and a third argument M > 0 times only
 * the input's quantization (the product of one output column), M calls. Fourth and fifth arguments IN OUT
 * give the weight's shape (out, in) in place of 5632 x 2048 (2048 5632 for 5632 x 2048, 5632 2048 for a
 * down projection's 2048 x 5632, whose 8 rows of x are 45 KB of int8 codes).
 * Figures need a quiet machine. Build and run (AVX-512; -mavx2 -mfma -mf16c for AVX2):
 *   N=cpu-kernels/src/main/native; cc -mavx512f -mfma -mf16c -O3 -ffp-contract=fast -I$N \
 *     -I$JAVA_HOME/include -I$JAVA_HOME/include/linux -o /tmp/kq-bench $N/kquant_product.c \
 *     $N/compressed_product.c cpu-kernels/src/test/native/kquant_product_bench.c -lm && /tmp/kq-bench 1
 */
#define _GNU_SOURCE
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_clock.h"
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jint);
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_CompressedProduct_multiply(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jint, jint, jint);
static void *JNICALL addr(JNIEnv *e, jobject o) { (void)e; return (void *)o; }
int main(int argc, char **argv) {
    int rows = argc > 1 ? atoi(argv[1]) : 1;
    int copies = argc > 2 ? atoi(argv[2]) : 1;
    int quantize_only = argc > 3 && atoi(argv[3]) > 0;
    int in = argc > 5 ? atoi(argv[4]) : 2048, out = argc > 5 ? atoi(argv[5]) : 5632;
    struct JNINativeInterface_ table; memset(&table, 0, sizeof table); table.GetDirectBufferAddress = addr;
    JNIEnv ev = &table; JNIEnv *env = &ev;
    size_t kb = (size_t)out * in / 256 * 144, qb = (size_t)out * in / 2;
    uint8_t *kqs = malloc(kb * copies); for (size_t i = 0; i < kb * copies; i++) kqs[i] = rand();
    for (size_t b = 0; b < kb * copies / 144; b++) { uint16_t d = 0x1400; memcpy(kqs + b * 144, &d, 2); memcpy(kqs + b * 144 + 2, &d, 2); }
    uint8_t *q4s = malloc(qb * copies); for (size_t i = 0; i < qb * copies; i++) q4s[i] = rand();
    uint16_t *sc = malloc((size_t)out * in / 32 * 2); for (size_t i = 0; i < (size_t)out * in / 32; i++) sc[i] = 0x1400;
    float *x = malloc(sizeof(float) * rows * in); for (int i = 0; i < rows * in; i++) x[i] = rand() / (float)RAND_MAX - 0.5f;
    float *y = malloc(sizeof(float) * rows * out);
    double tk = 1e9, t4 = 1e9;
    if (quantize_only) {
        for (int round = 0; round < atoi(argv[3]); round++) {
            double t0 = now();
            Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply(env, NULL, (jobject)x, (jobject)kqs, NULL, (jobject)y, rows, in, out, 0, 1);
            double t1 = now();
            if (t1 - t0 < tk) tk = t1 - t0;
        }
        printf("rows %d%s: q4_k quantization (and one column) %.2f us\n", rows, copies > 1 ? " from memory" : "", tk * 1e6);
        return 0;
    }
    for (int round = 0; round < 30 * copies; round++) {
        uint8_t *kq = kqs + (size_t)(round % copies) * kb, *q4 = q4s + (size_t)(round % copies) * qb;
        double t0 = now();
        Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply(env, NULL, (jobject)x, (jobject)kq, NULL, (jobject)y, rows, in, out, 0, out);
        double t1 = now();
        Java_io_github_djlllmzoo_cpu_CompressedProduct_multiply(env, NULL, (jobject)x, (jobject)q4, (jobject)sc, NULL, (jobject)y, 3, rows, in, out, 0, out, 1 | 4);
        double t2 = now();
        if (t1 - t0 < tk) tk = t1 - t0;
        if (t2 - t1 < t4) t4 = t2 - t1;
    }
    printf("rows %d%s: q4_k %.3f ms (%.1f GB/s), int4 %.3f ms (%.1f GB/s)\n", rows, copies > 1 ? " from memory" : "", tk * 1e3, kb / tk / 1e9, t4 * 1e3,
            ((size_t)out * in / 2 + (size_t)out * in / 16) / t4 / 1e9);
    return 0;
}
