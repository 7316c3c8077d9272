/*
 * The memory's streaming read rate on one or two cores, as a one-row decode product reads its weight: 64-byte
 * loads over a 600 MB buffer (past every cache), each thread pinned to its core and reading its half (or, on one
 * thread, all of it), best of 15 passes. With HUGE=1 in the environment the buffer is madvise(MADV_HUGEPAGE)d
 * first (transparent huge pages in "madvise" mode). With `resident MB MODE` instead, one thread reads a buffer of MB
 * MiB and then streams the 600 MB past it (MODE 0: plain loads, 1: with prefetchnta 2 KB ahead, 2: movntdqa loads,
 * 3: no stream), 12 times: whether a set of weights read every step could stay in L3 while the rest streams past
 * it. docs/PERFORMANCE.md, "int4 one-row decode step (session 19)".
 *
 *   cc -O2 -mavx512f -o /tmp/stream cpu-kernels/src/test/native/stream_read_bench.c -lpthread && \
 *       /tmp/stream 2 && /tmp/stream 1 && HUGE=1 /tmp/stream 2 && /tmp/stream resident 8 3 && /tmp/stream resident 8 1
 *   (argument: threads, 1 or 2)
 */
#define _GNU_SOURCE
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include "bench_clock.h"

static size_t bytes;
static char *buffer;
static atomic_int go, done;
static volatile long long sink;

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

/* The time to read n bytes from p in MODE (see the header), one thread. */
static double read_all(const char *p, size_t n, int mode) {
    double start = now();
    __m512i a = _mm512_setzero_si512();
    for (size_t i = 0; i < n; i += 64) {
        if (mode == 1) {
            _mm_prefetch(p + i + 2048, _MM_HINT_NTA);
        }
        a = _mm512_xor_si512(a, mode == 2 ? _mm512_stream_load_si512((void *)(p + i)) : _mm512_load_si512(p + i));
    }
    sink += _mm512_reduce_add_epi64(a);
    return now() - start;
}

/* A resident set read, then the stream past it: the set's read rate, L3's where it stayed. */
static int resident(size_t resident_bytes, int mode) {
    char *set = aligned_alloc(64, resident_bytes);
    buffer = aligned_alloc(64, bytes + 4096);
    memset(set, 1, resident_bytes);
    memset(buffer, 2, bytes + 4096);
    pin(pthread_self(), 0);
    double best = 1e9, sum = 0;
    for (int pass = 0; pass < 12; pass++) {
        double seconds = read_all(set, resident_bytes, 0);
        if (mode < 3) {
            read_all(buffer, bytes, mode);
        }
        if (pass >= 2) {
            sum += seconds;
            best = seconds < best ? seconds : best;
        }
    }
    printf("resident %zu MiB, stream mode %d: the set read at best %.1f GB/s, mean %.1f\n", resident_bytes >> 20, mode,
            resident_bytes / best / 1e9, resident_bytes * 10 / sum / 1e9);
    return 0;
}

static void *worker(void *arg) {
    (void)arg;
    pin(pthread_self(), 1);
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
    bytes = (size_t)600 << 20;
    if (argc > 3 && strcmp(argv[1], "resident") == 0) {
        return resident((size_t)atoi(argv[2]) << 20, atoi(argv[3]));
    }
    int threads = argc > 1 ? atoi(argv[1]) : 2;
    int huge = getenv("HUGE") != NULL;
    if (threads < 1 || threads > 2) {
        fprintf(stderr, "usage: stream THREADS(1|2)\n");
        return 2;
    }
    buffer = aligned_alloc(1 << 21, bytes);
    if (huge) {
        madvise(buffer, bytes, MADV_HUGEPAGE);
    }
    for (size_t i = 0; i < bytes; i++) {
        buffer[i] = (char)i;
    }
    pthread_t thread;
    pthread_create(&thread, NULL, worker, NULL);
    pin(pthread_self(), 0);
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
