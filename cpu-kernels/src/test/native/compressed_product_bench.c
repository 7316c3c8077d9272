/*
 * The compressed decode product alone (no JVM, no engine): weight bytes read per second by
 * compressed_product.c's kernels on one core, for each format and path, on weights of a chosen shape.
 * It says how much of a decode step's time the products take, next to bench's whole-step rate.
 *
 *   cc -O3 -mavx512f -mfma -I$JAVA_HOME/include -I$JAVA_HOME/include/linux \
 *      -o /tmp/cpbench cpu-kernels/src/test/native/compressed_product_bench.c && /tmp/cpbench 2048 768 1
 *   (arguments: out in rows [copies]; the weight out x in, repeated copies times (default 16) to pass
 *   the caches or once to stay in them)
 */
#include "../../main/native/compressed_product.c"

#include <stdio.h>
#include <string.h>
#include <time.h>


static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t); /* CPU time: the rate of the core while it ran, beside other loads */
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int out_features = argc > 1 ? atoi(argv[1]) : 2048;
    int in = argc > 2 ? atoi(argv[2]) : 768;
    int rows = argc > 3 ? atoi(argv[3]) : 1;
    int copies = argc > 4 ? atoi(argv[4]) : 16; /* 1: a weight that stays in the caches */
    size_t elements = (size_t)out_features * in;
    int groups = in / GROUP;
    float *x = malloc(sizeof(float) * rows * in);
    float *out = malloc(sizeof(float) * rows * out_features);
    for (int i = 0; i < rows * in; i++) {
        x[i] = (float)((i * 7919 % 1000) - 500) / 500.0f;
    }
    void *codes[3];
    float *scales = malloc(sizeof(float) * copies * out_features * groups);
    for (int i = 0; i < copies * out_features * groups; i++) {
        scales[i] = 0.01f;
    }
    for (int f = 0; f < 3; f++) {
        size_t bytes = copies * elements * (f == INT8 ? 1 : 2);
        codes[f] = malloc(bytes);
        for (size_t i = 0; i < bytes; i++) {
            ((unsigned char *)codes[f])[i] = (unsigned char)(i * 31 % 97 + 20);
        }
    }
    const char *names[] = {"bfloat16", "float16", "int8"};
    int features = cpu_features();
    printf("weight %d x %d, %d rows, one core; CPU features %d (1 VNNI, 2 BF16)\n", out_features, in, rows, features);
    for (int f = 0; f < 3; f++) {
        for (int dot = 0; dot <= 1; dot++) {
            if (dot && !((f == INT8 && (features & FEATURE_VNNI)) || (f == BFLOAT16 && (features & FEATURE_BF16)))) {
                continue;
            }
            size_t element = f == INT8 ? 1 : 2;
            double best = 0;
            for (int rep = 0; rep < 5; rep++) {
                int passes = 8;
                double start = now();
                for (int pass = 0; pass < passes; pass++) {
                    for (int c = 0; c < copies; c++) {
                        const char *w = (const char *)codes[f] + c * elements * element;
                        const float *s = scales + (size_t)c * out_features * groups;
                        if (dot) {
                            dot_multiply(x, w, s, NULL, out, f, rows, in, out_features, 0, out_features);
                        } else {
                            switch (f) {
                                case BFLOAT16: columns(x, w, s, NULL, out, rows, in, out_features, 0, out_features, BFLOAT16); break;
                                case FLOAT16: columns(x, w, s, NULL, out, rows, in, out_features, 0, out_features, FLOAT16); break;
                                default: columns(x, w, s, NULL, out, rows, in, out_features, 0, out_features, INT8); break;
                            }
                        }
                    }
                }
                double seconds = now() - start;
                double rate = (double)passes * copies * elements * (element + (f == INT8 ? 4.0 / GROUP : 0)) / seconds / 1e9;
                best = rate > best ? rate : best;
            }
            printf("%-8s %-9s %6.1f GB/s\n", names[f], dot ? "dot" : "widening", best);
        }
    }
    return 0;
}
