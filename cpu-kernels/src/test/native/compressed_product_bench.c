/*
 * The compressed decode product alone (no JVM, no engine): weight bytes read per second by
 * compressed_product.c's kernels on one core, for each format and path, on weights of a chosen shape.
 * It says how much of a decode step's time the products take, next to bench's whole-step rate.
 *
 *   cc -O3 -mavx512f -mfma -I$JAVA_HOME/include -I$JAVA_HOME/include/linux \
 *      -o /tmp/cpbench cpu-kernels/src/test/native/compressed_product_bench.c -lpthread && /tmp/cpbench 2048 768 1
 *   (arguments: out in rows [copies [threads]]; the weight out x in, repeated copies times (default 16)
 *   to pass the caches or once to stay in them; threads split the columns, a thread started per product)
 * Each line gives the bytes read per second and the weights multiplied per second: formats of fewer bytes a
 * weight (int6 against int8) compare by the latter, the product's speed. int8 against int6, 1 and 8 rows, a
 * TinyLlama down_proj-shaped weight 16 times over (~130-190 MB, past L3):
 *   /tmp/cpbench 2048 5632 1 && /tmp/cpbench 2048 5632 8
 */
#include "../../main/native/compressed_product.c"

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>


static int threads = 1;

/* One core: CPU time, the rate of the core while it ran beside other loads; several: wall time. */
static double now(void) {
    struct timespec t;
    clock_gettime(threads == 1 ? CLOCK_THREAD_CPUTIME_ID : CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

typedef struct {
    const float *x;
    const void *codes;
    const uint16_t *scales;
    float *out;
    int format, dot, rows, in, out_features, from, to;
} Slice;

static void *product(void *arg) {
    const Slice *s = arg;
    if (s->dot) {
        dot_multiply(s->x, s->codes, s->scales, NULL, s->out, s->format, s->rows, s->in, s->out_features, s->from,
                s->to, 1);
    } else {
        widening_multiply(s->x, s->codes, s->scales, NULL, s->out, s->format, s->rows, s->in, s->out_features,
                s->from, s->to);
    }
    return NULL;
}

int main(int argc, char **argv) {
    int out_features = argc > 1 ? atoi(argv[1]) : 2048;
    int in = argc > 2 ? atoi(argv[2]) : 768;
    int rows = argc > 3 ? atoi(argv[3]) : 1;
    int copies = argc > 4 ? atoi(argv[4]) : 16; /* 1: a weight that stays in the caches */
    threads = argc > 5 ? atoi(argv[5]) : 1;     /* each its share of the columns, as CoreWorkers split */
    size_t elements = (size_t)out_features * in;
    int groups = in / GROUP;
    float *x = malloc(sizeof(float) * rows * in);
    float *out = malloc(sizeof(float) * rows * out_features);
    for (int i = 0; i < rows * in; i++) {
        x[i] = (float)((i * 7919 % 1000) - 500) / 500.0f;
    }
    void *codes[5];
    uint16_t *scales = malloc(sizeof(uint16_t) * copies * out_features * groups);
    for (int i = 0; i < copies * out_features * groups; i++) {
        scales[i] = 0x211f; /* 0.01 as float16, as CompressedWeight holds its scales */
    }
    /* bytes a weight's codes take: int4 two codes a byte, int6 four codes in three */
    const double code_bytes[] = {2, 2, 1, 0.5, 0.75};
    for (int f = 0; f < 5; f++) {
        size_t bytes = (size_t)(copies * elements * code_bytes[f]);
        codes[f] = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) {
            ((unsigned char *)codes[f])[i] = (unsigned char)(i * 31 % 97 + 20);
        }
    }
    const char *names[] = {"bfloat16", "float16", "int8", "int4", "int6"};
    int features = cpu_features();
    printf("weight %d x %d, %d rows, %d threads; CPU features %d (1 VNNI, 2 BF16)\n", out_features, in, rows, threads,
            features);
    for (int f = 0; f < 5; f++) {
        for (int dot = 0; dot <= 1; dot++) {
            if (dot && !((f >= INT8 && (features & FEATURE_VNNI)) || (f == BFLOAT16 && (features & FEATURE_BF16)))) {
                continue;
            }
            double element = code_bytes[f];
            double best = 0;
            for (int rep = 0; rep < 5; rep++) {
                int passes = 8;
                double start = now();
                for (int pass = 0; pass < passes; pass++) {
                    for (int c = 0; c < copies; c++) {
                        const char *w = (const char *)codes[f] + (size_t)(c * elements * element);
                        const uint16_t *s = scales + (size_t)c * out_features * groups;
                        Slice slices[16];
                        pthread_t ids[16];
                        for (int t = 0; t < threads; t++) {
                            slices[t] = (Slice){x, w, s, out, f, dot, rows, in, out_features,
                                    (int)((long)out_features * t / threads), (int)((long)out_features * (t + 1) / threads)};
                            if (t > 0) {
                                pthread_create(&ids[t], NULL, product, &slices[t]);
                            }
                        }
                        product(&slices[0]);
                        for (int t = 1; t < threads; t++) {
                            pthread_join(ids[t], NULL);
                        }
                    }
                }
                double seconds = now() - start;
                double rate = (double)passes * copies * elements * (element + (f >= INT8 ? 2.0 / GROUP : 0)) / seconds / 1e9;
                best = rate > best ? rate : best;
            }
            printf("%-8s %-9s %6.1f GB/s %6.1f G weights/s\n", names[f], dot ? "dot" : "widening", best,
                    best / (element + (f >= INT8 ? 2.0 / GROUP : 0)));
        }
    }
    return 0;
}
