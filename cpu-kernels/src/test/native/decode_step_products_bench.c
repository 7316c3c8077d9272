/*
 * A Llama-110M decode step's products alone (no JVM, no engine): the 84 products of 12 layers (q, k, v, o, gate,
 * up, down) and the 32000 x 768 head, each weight its own memory (200 MB in 16 bits), each product's columns
 * halved between two threads pinned to the two cores that spin between products, as CoreWorkers hands them
 * over. Next to `bench`'s whole step it says how much of a step is outside the products (docs/PERFORMANCE.md,
 * "Rounds beside llama.cpp; bfloat16's decode product by widening").
 *
 *   cc -O3 -mavx512f -mfma -I$JAVA_HOME/include -I$JAVA_HOME/include/linux -o /tmp/stepbench \
 *      cpu-kernels/src/test/native/decode_step_products_bench.c -lpthread && /tmp/stepbench 1 0 60
 *   (arguments: format (0 bfloat16, 1 float16, 2 int8), dot (1: the dot-product kernel, int8 VNNI or
 *   bfloat16 vdpbf16ps; 0: widening), steps)
 */
#define _GNU_SOURCE
#include "../../main/native/compressed_product.c"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

typedef struct {
    int out, in;
    void *codes;
    uint16_t *scales;
} Weight;

static Weight weights[128];
static int count;
static float x[2048];
static float out[32000];
static int format, dot;
static atomic_int posted, finished;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Half the columns of a product: the first half (0) on the calling thread, the second (1) on the worker. */
static void half(const Weight *w, int which) {
    int mid = w->out / 2;
    int from = which ? mid : 0, to = which ? w->out : mid;
    if (dot) {
        dot_multiply(x, w->codes, w->scales, NULL, out, format, 1, w->in, w->out, from, to, 1);
    } else {
        widening_multiply(x, w->codes, w->scales, NULL, out, format, 1, w->in, w->out, from, to);
    }
}

static void *worker(void *arg) {
    (void)arg;
    int seen = 0;
    for (;;) {
        int p;
        while ((p = atomic_load(&posted)) == seen) {
        }
        if (p < 0) {
            return NULL;
        }
        seen = p;
        half(&weights[(p - 1) % count], 1);
        atomic_fetch_add(&finished, 1);
    }
}

static void add(int out_features, int in) {
    Weight w = {out_features, in, NULL, NULL};
    size_t n = (size_t)out_features * in;
    size_t element = format == INT8 ? 1 : 2;
    w.codes = aligned_alloc(64, n * element);
    for (size_t i = 0; i < n * element; i++) {
        ((unsigned char *)w.codes)[i] = (unsigned char)(i * 31 % 97 + 20); /* small finite 16-bit values */
    }
    if (format == INT8) {
        w.scales = aligned_alloc(64, n / GROUP * sizeof(uint16_t));
        for (size_t i = 0; i < n / GROUP; i++) {
            w.scales[i] = 0x211f; /* 0.01 as float16 */
        }
    }
    weights[count++] = w;
}

static void pin(pthread_t thread, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(thread, sizeof set, &set);
}

int main(int argc, char **argv) {
    format = argc > 1 ? atoi(argv[1]) : FLOAT16;
    dot = argc > 2 ? atoi(argv[2]) : 0;
    int steps = argc > 3 ? atoi(argv[3]) : 60;
    if (format < BFLOAT16 || format > INT8 || steps < 3) {
        fprintf(stderr, "usage: stepbench FORMAT(0-2) DOT(0|1) STEPS(>=3)\n");
        return 2;
    }
    for (int layer = 0; layer < 12; layer++) {
        add(768, 768);  /* q_proj */
        add(256, 768);  /* k_proj */
        add(256, 768);  /* v_proj */
        add(768, 768);  /* o_proj */
        add(2048, 768); /* gate_proj */
        add(2048, 768); /* up_proj */
        add(768, 2048); /* down_proj */
    }
    add(32000, 768); /* lm_head */
    for (int i = 0; i < 2048; i++) {
        x[i] = (float)((i * 37) % 100 - 50) * 0.01f;
    }
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    pin(pthread_self(), 0);
    pin(thread, 1);
    double bytes = 0;
    for (int i = 0; i < count; i++) {
        bytes += (double)weights[i].out * weights[i].in * (format == INT8 ? 1 + 2.0 / GROUP : 2);
    }
    int post = 0;
    double best = 1e9, sum = 0;
    for (int step = 0; step < steps; step++) {
        double start = now();
        for (int i = 0; i < count; i++) {
            int done = atomic_load(&finished);
            atomic_store(&posted, ++post);
            half(&weights[i], 0);
            while (atomic_load(&finished) == done) {
            }
        }
        double seconds = now() - start;
        if (step >= 2) { /* the first two bring the code and the page tables in */
            best = seconds < best ? seconds : best;
            sum += seconds;
        }
    }
    atomic_store(&posted, -1);
    pthread_join(thread, NULL);
    printf("format %d dot %d: %.1f MB a step, mean %.2f ms, best %.2f ms (%.1f GB/s)\n", format, dot, bytes / 1e6,
            sum / (steps - 2) * 1e3, best * 1e3, bytes / best / 1e9);
    return 0;
}
