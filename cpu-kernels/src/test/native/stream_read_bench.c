/*
 * The memory's streaming read rate on one or two cores, as a one-row decode product reads its weight: 64-byte
 * loads over a 600 MB buffer (past every cache), each thread pinned to its core and reading its half (or, on one
 * thread, all of it), best of 15 passes. With HUGE=1 in the environment the buffer is madvise(MADV_HUGEPAGE)d
 * first (transparent huge pages in "madvise" mode). docs/PERFORMANCE.md, "int4 one-row decode step (session 19)".
 *
 *   cc -O2 -mavx512f -o /tmp/stream cpu-kernels/src/test/native/stream_read_bench.c -lpthread && \
 *       /tmp/stream 2 && /tmp/stream 1 && HUGE=1 /tmp/stream 2
 *   (argument: threads, 1 or 2)
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

static size_t bytes;
static char *buffer;
static atomic_int go, done;
static volatile long long sink;

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void pin(int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof set, &set);
}

/* Part `part` of `parts` of the buffer, two loads a 128 bytes. */
static void read_part(int part, int parts) {
    size_t length = bytes / parts;
    const char *at = buffer + length * part;
    __m512i a = _mm512_setzero_si512(), b = a;
    for (size_t i = 0; i < length; i += 128) {
        a = _mm512_xor_si512(a, _mm512_load_si512(at + i));
        b = _mm512_xor_si512(b, _mm512_load_si512(at + i + 64));
    }
    sink += _mm512_reduce_add_epi64(_mm512_xor_si512(a, b));
}

static void *worker(void *arg) {
    (void)arg;
    pin(1);
    int seen = 0;
    for (;;) {
        int g;
        while ((g = atomic_load(&go)) == seen) {
        }
        if (g < 0) {
            return NULL;
        }
        seen = g;
        read_part(1, 2);
        atomic_fetch_add(&done, 1);
    }
}

int main(int argc, char **argv) {
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    int huge = getenv("HUGE") != NULL;
    if (threads < 1 || threads > 2) {
        fprintf(stderr, "usage: stream THREADS(1|2)\n");
        return 2;
    }
    bytes = (size_t)600 << 20;
    buffer = aligned_alloc(1 << 21, bytes);
    if (huge) {
        madvise(buffer, bytes, MADV_HUGEPAGE);
    }
    for (size_t i = 0; i < bytes; i++) {
        buffer[i] = (char)i;
    }
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    pin(0);
    double best = 1e9;
    for (int pass = 0; pass < 15; pass++) {
        double start = now();
        if (threads == 2) {
            int finished = atomic_load(&done);
            atomic_fetch_add(&go, 1);
            read_part(0, 2);
            while (atomic_load(&done) == finished) {
            }
        } else {
            read_part(0, 1);
        }
        double seconds = now() - start;
        best = seconds < best ? seconds : best;
    }
    atomic_store(&go, -1);
    pthread_join(thread, NULL);
    printf("threads %d, huge pages %s: best %.1f GB/s\n", threads, huge ? "madvised" : "no", bytes / best / 1e9);
    return 0;
}
