/*
 * The wall clock and the thread pinning the native benchmarks of this folder share. A benchmark defines
 * _GNU_SOURCE before its first include (pthread_setaffinity_np is a GNU extension), then includes this.
 */
#ifndef LLMZOO_BENCH_CLOCK_H
#define LLMZOO_BENCH_CLOCK_H

#include <pthread.h>
#include <sched.h>
#include <time.h>

/* Seconds on the monotonic clock. */
static inline double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Keeps `thread` on core `cpu`. */
static inline void pin(pthread_t thread, int cpu) {
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(thread, sizeof set, &set);
}

#endif
