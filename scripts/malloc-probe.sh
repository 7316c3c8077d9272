#!/usr/bin/env bash
# glibc's heap of a running server, from inside it: a small library preloaded into the JVM answers,
# when asked, with mallinfo2()'s totals (memory in use, the heaps' size, their free part), and can
# run malloc_trim(0) first. A heap whose in-use part stays flat while its size and free part grow
# keeps holes (fragmentation), not leaked memory (docs/PERFORMANCE.md, server memory, session 17).
#
#   LD_PRELOAD="$(scripts/malloc-probe.sh lib)" bin/llmzoo serve ... &    # build it, start the server with it
#   scripts/malloc-probe.sh read [--trim] [LABEL]                          # one line of totals, in bytes
# The library polls $MALLOC_PROBE_DIR (default /tmp/llmzoo-malloc-probe-$UID) every 200 ms; every
# process started with it polls, so start only the server so.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dir="${MALLOC_PROBE_DIR:-/tmp/llmzoo-malloc-probe-$(id -u)}"
case "${1:-}" in
  lib)
    out="$root/target/malloc-probe"
    mkdir -p "$out" "$dir"
    cat > "$out/malloc_probe.c" <<'C'
#define _GNU_SOURCE
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
static char ask[4096], answer[4096];
static void *watch(void *unused) {
    (void) unused;
    for (;;) {
        usleep(200000);
        FILE *in = fopen(ask, "r");
        if (!in) continue;
        char label[256] = {0};
        if (!fgets(label, sizeof label, in)) label[0] = 0;
        fclose(in);
        unlink(ask);
        label[strcspn(label, "\n")] = 0;
        struct mallinfo2 before = mallinfo2();
        int trimmed = strncmp(label, "trim", 4) == 0 ? malloc_trim(0) : -1;
        struct mallinfo2 after = mallinfo2();
        FILE *out = fopen(answer, "a");
        if (!out) continue;
        fprintf(out, "%s in_use=%zu heap=%zu free=%zu mmapped=%zu trimmed=%d heap_after=%zu\n", label,
                before.uordblks, before.arena, before.fordblks, before.hblkhd, trimmed, after.arena);
        fclose(out);
    }
    return NULL;
}
__attribute__((constructor)) static void start(void) {
    const char *dir = getenv("MALLOC_PROBE_DIR");
    char fallback[64];
    if (!dir) {
        snprintf(fallback, sizeof fallback, "/tmp/llmzoo-malloc-probe-%u", (unsigned) getuid());
        dir = fallback;
    }
    snprintf(ask, sizeof ask, "%s/ask", dir);
    snprintf(answer, sizeof answer, "%s/answers", dir);
    pthread_t thread;
    if (pthread_create(&thread, NULL, watch, NULL) == 0) pthread_detach(thread);
}
C
    cc -O2 -shared -fPIC -o "$out/libmalloc_probe.so" "$out/malloc_probe.c" -lpthread
    echo "$out/libmalloc_probe.so"
    ;;
  read)
    shift
    label=snap
    if [ "${1:-}" = --trim ]; then label=trim; shift; fi
    label="$label ${1:-}"
    lines=0
    if [ -f "$dir/answers" ]; then lines=$(wc -l < "$dir/answers"); fi
    echo "$label" > "$dir/ask"
    for _ in $(seq 100); do
      [ -e "$dir/ask" ] || break
      sleep 0.1
    done
    if [ -e "$dir/ask" ]; then
      rm -f "$dir/ask"
      echo "error: no process preloaded with the probe answered in $dir" >&2
      exit 1
    fi
    sleep 0.2
    tail -n +"$((lines + 1))" "$dir/answers"
    ;;
  *)
    sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
    ;;
esac
