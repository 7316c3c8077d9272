/*
 * Two builds of the q4_k decode product (kquant_product.c) in one process, called in turn on the same x, for a
 * change measured against the kernel before it on a busy machine (the alternation cancels most of the load):
 * medians of ROUNDS calls each, a weight (OUT, IN) of random codes in COPIES copies taken in turn (16: past L3,
 * from memory as in a decode step), and a check that both wrote the same bits. The old source is compiled with
 * every entry point renamed (old_multiply and old_widen are the ones called; the others would clash):
 *   N=cpu-kernels/src/main/native; I="-I$N -I$JAVA_HOME/include -I$JAVA_HOME/include/linux"
 *   git show REV:$N/kquant_product.c > /tmp/kq-old.c
 *   R=$(grep -o 'Java_io_github_djlllmzoo_cpu_KQuantProduct_[A-Za-z]*' /tmp/kq-old.c | sort -u | sed 's/.*_\([A-Za-z]*\)$/-D&=old_\1/')
 *   cc -mavx512f -mfma -mf16c -O3 -ffp-contract=fast $I -c -o /tmp/kq-old.o /tmp/kq-old.c $R
 *   cc -mavx512f -mfma -mf16c -O3 -ffp-contract=fast $I -o /tmp/kq-ab /tmp/kq-old.o $N/kquant_product.c \
 *     cpu-kernels/src/test/native/kquant_ab_bench.c -lm && /tmp/kq-ab ROWS COPIES IN OUT ROUNDS
 * (-mavx2 -mfma -mf16c for AVX2, in both). Figures need a quiet machine to be absolute; the ratio holds up.
 */
#define _GNU_SOURCE
#include <jni.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "bench_clock.h"

typedef void (*kq_product)(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jint);
void old_multiply(JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jint);
JNIEXPORT void JNICALL Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply(
        JNIEnv *, jclass, jobject, jobject, jobject, jobject, jint, jint, jint, jint, jint);
static void *JNICALL addr(JNIEnv *e, jobject o) { (void)e; return (void *)o; }
static int by_time(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return x < y ? -1 : x > y; }
int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s ROWS COPIES IN OUT ROUNDS\n", argv[0]);
        return 2;
    }
    int rows = atoi(argv[1]), copies = atoi(argv[2]), in = atoi(argv[3]), out = atoi(argv[4]), rounds = atoi(argv[5]);
    kq_product builds[2] = {old_multiply, Java_io_github_djlllmzoo_cpu_KQuantProduct_multiply};
    struct JNINativeInterface_ table; memset(&table, 0, sizeof table); table.GetDirectBufferAddress = addr;
    JNIEnv ev = &table; JNIEnv *env = &ev;
    size_t bytes = (size_t)out * ((in + 255) / 256) * 144;
    uint8_t *weights = malloc(bytes * copies); for (size_t i = 0; i < bytes * copies; i++) weights[i] = rand();
    for (size_t b = 0; b < bytes * copies / 144; b++) { uint16_t d = 0x1400; memcpy(weights + b * 144, &d, 2); memcpy(weights + b * 144 + 2, &d, 2); }
    float *x = malloc(sizeof(float) * rows * in); for (int i = 0; i < rows * in; i++) x[i] = rand() / (float)RAND_MAX - 0.5f;
    float *y[2] = {malloc(sizeof(float) * rows * out), malloc(sizeof(float) * rows * out)};
    double *times = calloc((size_t)2 * rounds, sizeof(double));
    for (int r = 0, call = 0; r < rounds; r++) {
        for (int c = 0; c < 2; c++, call++) {
            double t0 = now();
            builds[c](env, NULL, (jobject)x, (jobject)(weights + (size_t)(call % copies) * bytes), NULL, (jobject)y[c], rows, in, out, 0, out);
            times[(size_t)c * rounds + r] = now() - t0;
        }
    }
    for (int c = 0; c < 2; c++) { /* the same weight for both, to compare their bits */
        builds[c](env, NULL, (jobject)x, (jobject)weights, NULL, (jobject)y[c], rows, in, out, 0, out);
    }
    int same = memcmp(y[0], y[1], sizeof(float) * rows * out) == 0;
    for (int c = 0; c < 2; c++) {
        double *t = times + (size_t)c * rounds;
        qsort(t, rounds, sizeof *t, by_time);
        printf("rows %d, %d x %d, %d copies, %s: best %.3f ms, median %.3f%s\n", rows, out, in, copies, c ? "new" : "old",
                t[0] * 1e3, t[rounds / 2] * 1e3, c && !same ? " (outputs differ)" : "");
    }
    return 0;
}
