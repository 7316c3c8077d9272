/*
 * The compressed prefill product alone (no JVM, no engine): int8 and int4 weights by compressed_gemm.c's
 * integer dot-product kernel on one core, in multiply-adds per second of CPU time (the core's rate while it ran,
 * beside whatever else the machine ran), for a rows x in input and an out x in weight:
 *
 *   cc -O3 -ffp-contract=fast -mavx512f -mfma -mf16c -Icpu-kernels/src/main/native -I$JAVA_HOME/include \
 *      -I$JAVA_HOME/include/linux -o /tmp/gemmbench cpu-kernels/src/test/native/compressed_gemm_bench.c -lm \
 *      && /tmp/gemmbench 128 2048 2048       (-mavx2 -mfma -mf16c for the AVX2 variant)
 */
#include "../../main/native/compressed_gemm.c"

#include <stdio.h>
#include <time.h>

static void *JNICALL address(JNIEnv *env, jobject buffer) {
    (void)env;
    return (void *)buffer;
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    int rows = argc > 1 ? atoi(argv[1]) : 128;
    int in = argc > 2 ? atoi(argv[2]) : 2048;
    int out = argc > 3 ? atoi(argv[3]) : 2048;
    struct JNINativeInterface_ table = {0};
    table.GetDirectBufferAddress = address;
    JNIEnv env = &table;
    float *x = malloc(sizeof(float) * rows * in), *o = malloc(sizeof(float) * rows * out);
    for (long i = 0; i < (long)rows * in; i++) {
        x[i] = (float)((i * 7919 % 1000) - 500) / 500.0f;
    }
    uint8_t *codes = malloc((size_t)out * in); /* int8's codes; int4 reads the first half as packed nibbles */
    for (long i = 0; i < (long)out * in; i++) {
        codes[i] = (uint8_t)(i * 31 % 97);
    }
    uint16_t *scales = malloc(sizeof(uint16_t) * out * (in / GROUP));
    for (long i = 0; i < (long)out * (in / GROUP); i++) {
        scales[i] = 0x211f; /* 0.01 as float16 */
    }
    const char *names[] = {"int8", "int4"};
    for (int format = INT8; format <= INT4; format++) {
        double best = 1e30;
        for (int rep = 0; rep < 3; rep++) {
            double start = cpu_seconds();
            Java_io_github_djlllmzoo_cpu_CompressedGemm_multiply(&env, NULL, (jobject)x, (jobject)codes,
                    (jobject)scales, NULL, (jobject)o, format, rows, in, out, 0, out);
            double seconds = cpu_seconds() - start;
            best = seconds < best ? seconds : best;
        }
        printf("%s: %.1f GMAC/s (%d x %d by %d x %d, one core, CPU time)\n", names[format - INT8],
                (double)rows * in * out / best / 1e9, rows, in, out, in);
    }
    return 0;
}
