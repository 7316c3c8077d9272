#!/usr/bin/env bash
# Where a bin/llmzoo process's resident memory is, over its life (load, prefill, decode): runs it with
# Native Memory Tracking, samples /proc/PID/status every 0.5 s (VmHWM, VmRSS, RssAnon, RssFile) into
# OUT/rss.log, and every INTERVAL seconds appends `jcmd VM.native_memory summary`, `jcmd GC.heap_info`
# and /proc/PID/smaps_rollup to OUT/jcmd.log and copies /proc/PID/smaps to OUT/smaps.T; at the end
# prints the process's peak resident set (ru_maxrss, as scripts/bench-llamacpp.sh takes it).
#
#   scripts/memory-trace.sh OUT INTERVAL -- bench --model /tmp/tl --dtype q4_k --runs 2 --warmup 2 \
#       --new-tokens 64 --long-positions 0 --bandwidth-mib 0 --compute-size 0 --output json
#
# LLMZOO_JAVA_OPTS (default -Xmx8g) gets -XX:NativeMemoryTracking=summary added. The C heap's own
# account (arenas, their free bytes) is glibc's malloc_info, which gdb can ask a running process for:
#   gdb -p PID -batch -ex 'handle SIGSEGV nostop noprint pass' -ex 'set $f = (void*)fopen("/tmp/mi.xml", "w")' \
#       -ex 'call (int)malloc_info(0, $f)' -ex 'call (int)fclose($f)'
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
if [ $# -lt 3 ] || [ "$3" != -- ]; then
  echo "usage: $0 OUT INTERVAL_SECONDS -- LLMZOO_ARGS..." >&2
  exit 2
fi
out="$1" every="$2"
shift 3
mkdir -p "$out"
export LLMZOO_JAVA_OPTS="${LLMZOO_JAVA_OPTS:--Xmx8g} -XX:NativeMemoryTracking=summary"
start=$(date +%s)
python3 -c 'import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)' "$out/maxrss" "$root/bin/llmzoo" "$@" > "$out/stdout" 2> "$out/stderr" &
runner=$!
pid=""
while [ -z "$pid" ] && kill -0 "$runner" 2> /dev/null; do
  sleep 0.2
  pid="$(pgrep -x -P "$runner" java | head -1 || true)" # once bin/llmzoo has exec'd java
done
last=-"$every"
while [ -n "$pid" ] && kill -0 "$pid" 2> /dev/null; do
  now=$(($(date +%s) - start))
  echo "$now $(awk '/VmHWM|VmRSS|RssAnon|RssFile/{printf "%s %s ", $1, $2}' "/proc/$pid/status" 2> /dev/null || true)" >> "$out/rss.log"
  if ((now - last >= every)); then
    last=$now
    { echo "=== t=$now"; jcmd "$pid" VM.native_memory summary; jcmd "$pid" GC.heap_info; cat "/proc/$pid/smaps_rollup"; } >> "$out/jcmd.log" 2>&1 || true
    cp "/proc/$pid/smaps" "$out/smaps.$now" 2> /dev/null || true
  fi
  sleep 0.5
done
wait "$runner" || true
echo "peak resident set (ru_maxrss): $(($(cat "$out/maxrss") / 1024)) MiB"
