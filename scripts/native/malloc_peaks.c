/* Preloaded into a bin/llmzoo process by scripts/malloc-peaks.sh: each time the process's peak resident
 * set (VmHWM) has grown by MALLOC_PEAKS_STEP_KIB (default 4096) past the last record, writes glibc's
 * malloc_info (every arena's heaps and free chunks) to $MALLOC_PEAKS_DIR/mi.N.MiB.xml and appends where
 * the resident set is (the Java heap, glibc's arena heaps, other anonymous memory, file pages) to
 * $MALLOC_PEAKS_DIR/breakdown.txt. A peak reset (echo 5 > /proc/PID/clear_refs, as bench does after a
 * load) starts the steps again from the new peak. With MALLOC_PEAKS_CALLS=1 it also records every live
 * allocation of MALLOC_PEAKS_CALLS_FROM bytes (default 64 KiB) or more with its call stack and writes them beside each record (live.N.MiB.txt):
 * the process runs slower, and the record's own table adds ~7 MiB to the peak. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void __libc_free(void *);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);

#define SLOTS (1 << 16)
#define DEPTH 10
#define GONE ((void *)1)
/* The compressed-oops Java heap of bin/llmzoo's -Xmx8g starts here (HotSpot's zero-based placement). */
#define JAVA_HEAP_FROM 0x600000000UL
#define JAVA_HEAP_TO 0x800000000UL
/* glibc maps each non-main arena's heaps at multiples of their maximum size (64 MiB on 64-bit). */
#define ARENA_HEAP_ALIGN (64UL << 20)

typedef struct {
    void *address;
    size_t bytes;
    int depth;
    void *stack[DEPTH];
} Allocation;

static Allocation live[SLOTS];
static volatile int table_lock;
static __thread int in_probe;
static int tracing;
/* the smallest allocation recorded: MALLOC_PEAKS_CALLS_FROM bytes, 64 KiB unless set */
static size_t traced_bytes = 64 * 1024;
static char dir[1024];

static void lock(void) {
    while (__sync_lock_test_and_set(&table_lock, 1)) {
    }
}

static void unlock(void) { __sync_lock_release(&table_lock); }

static size_t slot_of(void *address) { return ((uintptr_t)address >> 12) & (SLOTS - 1); }

static void remember(void *address, size_t bytes) {
    if (address == NULL || bytes < traced_bytes || !tracing || in_probe) {
        return;
    }
    in_probe = 1;
    void *stack[DEPTH + 1];
    int depth = backtrace(stack, DEPTH + 1) - 1; /* without this function's own frame */
    lock();
    for (size_t i = 0, s = slot_of(address); i < SLOTS; i++, s = (s + 1) & (SLOTS - 1)) {
        if (live[s].address == NULL || live[s].address == GONE) {
            live[s].address = address;
            live[s].bytes = bytes;
            live[s].depth = depth < 0 ? 0 : depth;
            memcpy(live[s].stack, stack + 1, sizeof(void *) * live[s].depth);
            break;
        }
    }
    unlock();
    in_probe = 0;
}

static void forget(void *address) {
    if (address == NULL || !tracing || malloc_usable_size(address) < traced_bytes) {
        return;
    }
    lock();
    for (size_t i = 0, s = slot_of(address); i < SLOTS && live[s].address != NULL; i++, s = (s + 1) & (SLOTS - 1)) {
        if (live[s].address == address) {
            live[s].address = GONE;
            break;
        }
    }
    unlock();
}

void *malloc(size_t bytes) {
    void *p = __libc_malloc(bytes);
    remember(p, bytes);
    return p;
}

void *calloc(size_t count, size_t size) {
    void *p = __libc_calloc(count, size);
    remember(p, count * size);
    return p;
}

void free(void *address) {
    forget(address);
    __libc_free(address);
}

void *realloc(void *old, size_t bytes) {
    forget(old);
    void *p = __libc_realloc(old, bytes);
    remember(p, bytes);
    return p;
}

void *memalign(size_t alignment, size_t bytes) {
    void *p = __libc_memalign(alignment, bytes);
    remember(p, bytes);
    return p;
}

void *aligned_alloc(size_t alignment, size_t bytes) { return memalign(alignment, bytes); }

int posix_memalign(void **result, size_t alignment, size_t bytes) {
    void *p = memalign(alignment, bytes);
    if (p == NULL) {
        return 12; /* ENOMEM */
    }
    *result = p;
    return 0;
}

static long status_kib(const char *field) {
    FILE *in = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;
    size_t length = strlen(field);
    while (in != NULL && fgets(line, sizeof line, in)) {
        if (strncmp(line, field, length) == 0) {
            kib = atol(line + length);
        }
    }
    if (in != NULL) {
        fclose(in);
    }
    return kib;
}

static void write_breakdown(long peak_kib) {
    FILE *in = fopen("/proc/self/smaps", "r");
    if (in == NULL) {
        return;
    }
    char line[512];
    unsigned long from = 0, to = 0;
    int file = 0;
    long java_heap = 0, arenas = 0, other = 0, files = 0;
    while (fgets(line, sizeof line, in)) {
        unsigned long a, b, offset, inode;
        char perms[8], device[16];
        if (sscanf(line, "%lx-%lx %7s %lx %15s %lu", &a, &b, perms, &offset, device, &inode) == 6) {
            from = a;
            to = b;
            file = inode != 0;
        } else if (strncmp(line, "Rss:", 4) == 0) {
            long kib = atol(line + 4);
            if (from >= JAVA_HEAP_FROM && to <= JAVA_HEAP_TO) {
                java_heap += kib;
            } else if (file) {
                files += kib;
            } else if (from % ARENA_HEAP_ALIGN == 0) {
                arenas += kib;
            } else {
                other += kib;
            }
        }
    }
    fclose(in);
    char path[1200];
    snprintf(path, sizeof path, "%s/breakdown.txt", dir);
    FILE *out = fopen(path, "a");
    if (out != NULL) {
        fprintf(out, "peak %ld MiB; resident now: java heap %ld, glibc arena heaps %ld, other anonymous %ld, files %ld\n", peak_kib / 1024,
                java_heap / 1024, arenas / 1024, other / 1024, files / 1024);
        fclose(out);
    }
}

static void write_live(const char *path) {
    static Allocation copy[SLOTS];
    FILE *out = fopen(path, "w");
    if (out == NULL) {
        return;
    }
    lock();
    memcpy(copy, live, sizeof copy);
    unlock();
    for (int i = 0; i < SLOTS; i++) {
        if ((uintptr_t)copy[i].address <= (uintptr_t)GONE) {
            continue;
        }
        fprintf(out, "%zu", copy[i].bytes);
        for (int k = 0; k < copy[i].depth; k++) {
            Dl_info info;
            if (dladdr(copy[i].stack[k], &info) && info.dli_fname != NULL) {
                const char *name = strrchr(info.dli_fname, '/');
                fprintf(out, " %s:%s", name == NULL ? info.dli_fname : name + 1, info.dli_sname == NULL ? "?" : info.dli_sname);
            } else {
                fprintf(out, " %p", copy[i].stack[k]);
            }
        }
        fputc('\n', out);
    }
    fclose(out);
}

static void *watch(void *unused) {
    (void)unused;
    in_probe = 1; /* this thread's own allocations are not the process's */
    const char *step_env = getenv("MALLOC_PEAKS_STEP_KIB");
    long step = step_env == NULL ? 4096 : atol(step_env);
    long recorded = 0;
    char path[1200];
    for (int n = 0;;) {
        usleep(100000);
        long peak = status_kib("VmHWM:");
        if (peak < recorded) {
            recorded = peak; /* the peak was reset */
        }
        if (peak - recorded < step) {
            continue;
        }
        recorded = peak;
        snprintf(path, sizeof path, "%s/mi.%03d.%ld.xml", dir, n, peak / 1024);
        FILE *out = fopen(path, "w");
        if (out != NULL) {
            malloc_info(0, out);
            fclose(out);
        }
        write_breakdown(peak);
        if (tracing) {
            snprintf(path, sizeof path, "%s/live.%03d.%ld.txt", dir, n, peak / 1024);
            write_live(path);
        }
        n++;
    }
    return NULL;
}

__attribute__((constructor)) static void start(void) {
    const char *out = getenv("MALLOC_PEAKS_DIR");
    const char *only = getenv("MALLOC_PEAKS_ONLY"); /* e.g. java: not the launcher's shells */
    if (out == NULL || (only != NULL && strstr(program_invocation_short_name, only) == NULL)) {
        return;
    }
    snprintf(dir, sizeof dir, "%s", out);
    const char *calls = getenv("MALLOC_PEAKS_CALLS");
    if (calls != NULL && strcmp(calls, "1") == 0) {
        void *stack[2];
        in_probe = 1;
        backtrace(stack, 2); /* loads libgcc_s now, not inside an allocation */
        const char *from = getenv("MALLOC_PEAKS_CALLS_FROM");
        if (from != NULL && atol(from) > 0) {
            traced_bytes = (size_t)atol(from);
        }
        in_probe = 0;
        tracing = 1;
    }
    pthread_t thread;
    if (pthread_create(&thread, NULL, watch, NULL) == 0) {
        pthread_detach(thread);
    }
}
