#!/usr/bin/env bash
# Where a bin/llmzoo process's peak resident set is, recorded as the peak grows: a library preloaded
# into the JVM (scripts/native/malloc_peaks.c) writes, each time the peak (VmHWM) has grown by STEP
# KiB, glibc's malloc_info (each arena's heaps, free chunks) and the resident set split into the
# Java heap, glibc's arena heaps, other anonymous memory and files; `--calls` also keeps every live
# allocation of 64 KiB or more with its call stack (`--calls-from BYTES`: of BYTES or more; slower, and
# its table adds ~7 MiB). A bench's reset
# of the peak after its load starts the records again. At the end it prints the process's peak
# (ru_maxrss, as scripts/bench-llamacpp.sh takes it) and scripts/malloc-peaks.py's summary.
#
#   scripts/malloc-peaks.sh OUT [--calls | --calls-from BYTES] [--step KIB] -- bench --model /tmp/tl --dtype q4_k \
#       --prompt-tokens 128 --new-tokens 64 --runs 2 --warmup 2 --long-positions 0 --bandwidth-mib 0 \
#       --compute-size 0 --output json
#
# LLMZOO_JAVA_OPTS and the malloc environment (MALLOC_ARENA_MAX, ...) pass through to the JVM.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
usage() {
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}
[ $# -ge 2 ] || usage
out="$1"
shift
calls=0 step=4096 from=65536
while [ $# -gt 0 ] && [ "$1" != -- ]; do
  case "$1" in
    --calls) calls=1 ;;
    --calls-from) calls=1; from="${2:?--calls-from needs BYTES}"; shift ;;
    --step) step="${2:?--step needs KiB}"; shift ;;
    *) usage ;;
  esac
  shift
done
[ "${1:-}" = -- ] || usage
shift
lib="$root/target/malloc-peaks/libmalloc_peaks.so"
src="$root/scripts/native/malloc_peaks.c"
if [ ! -f "$lib" ] || [ "$src" -nt "$lib" ]; then
  mkdir -p "$(dirname "$lib")"
  cc -O2 -shared -fPIC -Wall -Werror -o "$lib.$$.tmp" "$src" -ldl -lpthread
  mv "$lib.$$.tmp" "$lib"
fi
rm -rf "$out"
mkdir -p "$out"
MALLOC_PEAKS_DIR="$(cd "$out" && pwd)" MALLOC_PEAKS_ONLY=java MALLOC_PEAKS_STEP_KIB="$step" MALLOC_PEAKS_CALLS="$calls" MALLOC_PEAKS_CALLS_FROM="$from" \
  LD_PRELOAD="$lib${LD_PRELOAD:+:$LD_PRELOAD}" python3 -c 'import resource, subprocess, sys
code = subprocess.call(sys.argv[2:], stdout=open(sys.argv[1] + "/stdout", "w"), stderr=open(sys.argv[1] + "/stderr", "w"))
print("peak resident set (ru_maxrss): %.0f MiB" % (resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024))
sys.exit(code)' "$out" "$root/bin/llmzoo" "$@"
python3 "$root/scripts/malloc-peaks.py" "$out"
