/*
 * A decode step's products alone (no JVM, no engine): the products of every layer (q, k, v, o, gate, up, down)
 * and the head, each weight its own memory, each product's columns halved between two threads pinned to the
 * two cores that spin between products, as CoreWorkers hands them over. Next to `bench`'s whole step it says how
 * much of a step is outside the products (docs/PERFORMANCE.md, "Rounds beside llama.cpp; bfloat16's decode
 * product by widening", "int4 one-row decode step (session 19)"). Shapes: Llama-110M (12 layers of 768, the
 * 32000 x 768 head) or TinyLlama-1.1B (22 layers of 2048, 5632 wide MLP, 4 of 32 heads for k and v, the
 * 32000 x 2048 head). With the transposed-block kernel (dot 2: AVX512_VNNI only), each layer's q, k and v and
 * its gate and up take one hand-over with x prepared once (CompressedProduct's prepared form), as the model
 * runs them; dot 3 times a single hand-over for the whole step's weights (the products' streaming alone, no
 * hand-over between them).
 *
 *   cc -O3 -mavx512f -mavx512bw -mavx512vl -mavx512vnni -mfma -mf16c -I$JAVA_HOME/include \
 *      -I$JAVA_HOME/include/linux -o /tmp/stepbench cpu-kernels/src/test/native/decode_step_products_bench.c \
 *      -lpthread && /tmp/stepbench 1 0 60 && /tmp/stepbench 3 2 60 tinyllama
 *   (arguments: format (0 bfloat16, 1 float16, 2 int8, 3 int4), dot (1: the dot-product kernel, int8 VNNI or
 *   bfloat16 vdpbf16ps; 2, 3: the prepared transposed blocks as above; 0: widening), steps, shape (llama-110m
 *   or tinyllama), and the caller's work alone after each hand-over in microseconds (a busy wait, 0):
 *   `/tmp/stepbench 3 2 60 tinyllama 20`)
 */
#define _GNU_SOURCE
#include "../../main/native/compressed_product.c"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "bench_clock.h"

typedef struct {
    int out, in;
    void *codes;
    uint16_t *scales;
} Weight;

/* A hand-over: the products one share of the columns of each of which a core computes. */
typedef struct {
    int first, count;
} HandOver;

static Weight weights[256];
static int count;
static HandOver hand_overs[256];
static int hand_over_count;
static float x[8192];
static float out[256][32000];
static void *form[PREPARED_ARRAYS];
static int format, dot;
static atomic_int posted, finished;
/* The caller's work alone between hand-overs (microseconds). */
static double gap_us;

/* Half the columns of a hand-over's products: the first half (0) on the calling thread, the second (1) on the
   worker. */
static void half(const HandOver *h, int which) {
    for (int i = h->first; i < h->first + h->count; i++) {
        const Weight *w = &weights[i];
        int mid = w->out / 2;
        int from = which ? mid : 0, to = which ? w->out : mid;
        if (dot >= 2) {
            prepared_multiply(form, w->codes, w->scales, NULL, out[i], format, 1, w->in, w->out, from, to);
        } else if (dot) {
            dot_multiply(x, w->codes, w->scales, NULL, out[i], format, 1, w->in, w->out, from, to, 1);
        } else {
            widening_multiply(x, w->codes, w->scales, NULL, out[i], format, 1, w->in, w->out, from, to);
        }
    }
}

static double code_bytes(void) {
    return format == INT8 ? 1 : format == INT4 ? 0.5 : 2;
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
        half(&hand_overs[(p - 1) % hand_over_count], 1);
        atomic_fetch_add(&finished, 1);
    }
}

static void add(int out_features, int in) {
    Weight w = {out_features, in, NULL, NULL};
    size_t n = (size_t)out_features * in;
    size_t bytes = (size_t)(n * code_bytes());
    w.codes = aligned_alloc(64, bytes);
    for (size_t i = 0; i < bytes; i++) {
        ((unsigned char *)w.codes)[i] = (unsigned char)(i * 31 % 97 + 20); /* small finite 16-bit values */
    }
    if (format == INT8 || format == INT4) {
        w.scales = aligned_alloc(64, n / GROUP * sizeof(uint16_t));
        for (size_t i = 0; i < n / GROUP; i++) {
            w.scales[i] = 0x211f; /* 0.01 as float16 */
        }
    }
    weights[count++] = w;
}

/* The next products added (the last `products` weights) as one hand-over, or each its own without dot >= 2
   (x's form made per call). */
static void hand_over(int products) {
    if (dot >= 2) {
        hand_overs[hand_over_count++] = (HandOver){count - products, products};
        return;
    }
    for (int i = count - products; i < count; i++) {
        hand_overs[hand_over_count++] = (HandOver){i, 1};
    }
}

int main(int argc, char **argv) {
    format = argc > 1 ? atoi(argv[1]) : FLOAT16;
    dot = argc > 2 ? atoi(argv[2]) : 0;
    int steps = argc > 3 ? atoi(argv[3]) : 60;
    int tiny = argc > 4 && strcmp(argv[4], "tinyllama") == 0;
    gap_us = argc > 5 ? atof(argv[5]) : 0;
    if (format < BFLOAT16 || format > INT4 || dot < 0 || dot > 3 || steps < 3
            || (dot >= 2 && !prepared_form(format, FEATURE_VNNI | VNNI_BLOCKS))) {
        fprintf(stderr, "usage: stepbench FORMAT(0-3) DOT(0-3; 2, 3: int8 or int4 with AVX512_VNNI) STEPS(>=3) "
                        "[llama-110m|tinyllama]\n");
        return 2;
    }
    int hidden = tiny ? 2048 : 768, kv = tiny ? 256 : 256, mlp = tiny ? 5632 : 2048, layers = tiny ? 22 : 12;
    for (int layer = 0; layer < layers; layer++) {
        add(hidden, hidden); /* q_proj */
        add(kv, hidden);     /* k_proj */
        add(kv, hidden);     /* v_proj */
        hand_over(3);
        add(hidden, hidden); /* o_proj */
        hand_over(1);
        add(mlp, hidden); /* gate_proj */
        add(mlp, hidden); /* up_proj */
        hand_over(2);
        add(hidden, mlp); /* down_proj */
        hand_over(1);
    }
    add(32000, hidden); /* lm_head */
    hand_over(1);
    if (dot == 3) { /* the whole step as one hand-over: x's width is the same (2048) for all but down_proj, whose
                       form reads past it in x's buffer */
        hand_overs[0] = (HandOver){0, count};
        hand_over_count = 1;
    }
    for (int i = 0; i < 8192; i++) {
        x[i] = (float)((i * 37) % 100 - 50) * 0.01f;
    }
    if (dot >= 2) {
        size_t sizes[PREPARED_ARRAYS];
        prepared_sizes(1, 8192, sizes);
        for (int i = 0; i < PREPARED_ARRAYS; i++) {
            form[i] = aligned_alloc(64, (sizes[i] + 63) / 64 * 64);
        }
    }
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    pin(pthread_self(), 0);
    pin(thread, 1);
    double bytes = 0;
    for (int i = 0; i < count; i++) {
        bytes += (double)weights[i].out * weights[i].in * (code_bytes() + (format >= INT8 ? 2.0 / GROUP : 0));
    }
    int post = 0;
    double best = 1e9, sum = 0;
    for (int step = 0; step < steps; step++) {
        double start = now();
        for (int i = 0; i < hand_over_count; i++) {
            if (dot >= 2) { /* one form for the hand-over, of the widest input its products read */
                prepare_form(x, form, format, 1, weights[hand_overs[i].first].in);
            }
            int done = atomic_load(&finished);
            atomic_store(&posted, ++post);
            half(&hand_overs[i], 0);
            while (atomic_load(&finished) == done) {
            }
            if (gap_us > 0) {
                double until = now() + gap_us * 1e-6;
                while (now() < until) {
                }
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
    printf("gap %.0f us: ", gap_us);
    printf("format %d dot %d %s: %d hand-overs, %.1f MB a step, mean %.2f ms, best %.2f ms (%.1f GB/s; mean %.1f)\n",
            format, dot, tiny ? "tinyllama" : "llama-110m", hand_over_count, bytes / 1e6, sum / (steps - 2) * 1e3,
            best * 1e3, bytes / best / 1e9, bytes / (sum / (steps - 2)) / 1e9);
    return 0;
}
