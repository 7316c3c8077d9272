/*
 * What the host gives this VM right now: the memory's two-core read rate, by buffer and over time, and whether
 * the two vCPUs compute as two cores. docs/PERFORMANCE.md, "The two speeds located (session 20)".
 *
 *   cc -O2 -mavx512f -mavx512vnni -mavx512bw -o /tmp/rate cpu-kernels/src/test/native/memory_rate_probe.c -lpthread
 *   /tmp/rate probe        one line: the two-core read rate of a 256 MB buffer now (about 0.3 s), in GB/s
 *   /tmp/rate buffers N    N heap buffers of 600 MB and one in /dev/shm (tmpfs), each read by two threads and
 *                          by one, twice over: does the rate follow the buffer (its pages) or the time?
 *   /tmp/rate cores        a compute-bound loop on two threads against one (2.0: two cores; well under 2: two
 *                          hyperthreads sharing one core's units), then the two-core read rate
 * Each thread is pinned to its CPU (0 and 1) and reads its half of a buffer with 64-byte loads.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <immintrin.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "bench_clock.h"

static volatile long long sink;

/* One thread's job: read [from, from + length) `passes` times, or run the compute loop. */
struct job {
    int cpu;
    const char *from;
    size_t length;
    int passes;
    int compute;
};

static void *run(void *argument) {
    struct job *job = argument;
    pin(pthread_self(), job->cpu);
    if (job->compute) {
        __m512i a[8], w = _mm512_set1_epi8(3), x = _mm512_set1_epi8(5);
        for (int c = 0; c < 8; c++) {
            a[c] = _mm512_set1_epi32(c);
        }
        for (long i = 0; i < 50000000; i++) {
            for (int c = 0; c < 8; c++) {
                a[c] = _mm512_dpbusd_epi32(a[c], w, x);
            }
        }
        for (int c = 1; c < 8; c++) {
            a[0] = _mm512_add_epi32(a[0], a[c]);
        }
        sink += _mm512_reduce_add_epi32(a[0]);
        return NULL;
    }
    __m512i a = _mm512_setzero_si512(), b = a;
    for (int pass = 0; pass < job->passes; pass++) {
        for (size_t i = 0; i < job->length; i += 128) {
            a = _mm512_xor_si512(a, _mm512_load_si512(job->from + i));
            b = _mm512_xor_si512(b, _mm512_load_si512(job->from + i + 64));
        }
    }
    sink += _mm512_reduce_add_epi64(_mm512_xor_si512(a, b));
    return NULL;
}

/* Seconds for `threads` threads (1 or 2) to each do their share: a half of the buffer each, or the compute loop. */
static double timed(int threads, const char *buffer, size_t bytes, int passes, int compute) {
    pthread_t thread[2];
    struct job job[2];
    double start = now();
    for (int t = 0; t < threads; t++) {
        job[t] = (struct job){t, buffer + bytes / threads * t, bytes / threads, passes, compute};
        pthread_create(&thread[t], NULL, run, &job[t]);
    }
    for (int t = 0; t < threads; t++) {
        pthread_join(thread[t], NULL);
    }
    return now() - start;
}

/* Best read rate in GB/s of `rounds` reads of the buffer by `threads` threads. */
static double rate(int threads, const char *buffer, size_t bytes, int rounds) {
    double best = 1e9;
    for (int r = 0; r < rounds; r++) {
        double seconds = timed(threads, buffer, bytes, 1, 0);
        best = seconds < best ? seconds : best;
    }
    return bytes / best / 1e9;
}

static char *filled(size_t bytes) {
    char *buffer = aligned_alloc(1 << 21, bytes);
    if (buffer == NULL) {
        perror("aligned_alloc");
        exit(1);
    }
    memset(buffer, 1, bytes);
    return buffer;
}

static char *shared_memory_file(size_t bytes) {
    int fd = open("/dev/shm/memory_rate_probe.bin", O_RDWR | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) {
        perror("/dev/shm/memory_rate_probe.bin");
        exit(1);
    }
    char *buffer = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (buffer == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    memset(buffer, 1, bytes);
    close(fd);
    return buffer;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "probe";
    if (strcmp(mode, "probe") == 0) {
        size_t bytes = (size_t)256 << 20;
        char *buffer = filled(bytes);
        printf("%.0f\n", 3 * bytes / timed(2, buffer, bytes, 3, 0) / 1e9);
    } else if (strcmp(mode, "buffers") == 0 && argc > 2 && atoi(argv[2]) > 0 && atoi(argv[2]) <= 16) {
        size_t bytes = (size_t)600 << 20;
        int heap = atoi(argv[2]);
        char *buffer[17];
        for (int k = 0; k < heap; k++) {
            buffer[k] = filled(bytes);
        }
        buffer[heap] = shared_memory_file(bytes);
        for (int pass = 0; pass < 2; pass++) {
            for (int k = 0; k <= heap; k++) {
                printf("%s%d %.1f/%.1f  ", k == heap ? "shm" : "heap", k, rate(2, buffer[k], bytes, 6),
                        rate(1, buffer[k], bytes, 6));
            }
            printf("| ");
        }
        printf("(GB/s, two threads / one)\n");
        unlink("/dev/shm/memory_rate_probe.bin");
    } else if (strcmp(mode, "cores") == 0) {
        size_t bytes = (size_t)600 << 20;
        char *buffer = filled(bytes);
        double one = timed(1, NULL, 0, 0, 1), two = timed(2, NULL, 0, 0, 1);
        printf("compute, two threads against one: %.2fx; two-core read rate %.1f GB/s\n", 2 * one / two,
                5 * bytes / timed(2, buffer, bytes, 5, 0) / 1e9);
    } else {
        fprintf(stderr, "usage: %s probe | buffers N (1-16) | cores\n", argv[0]);
        return 2;
    }
    return 0;
}
