#!/usr/bin/env bash
# What a long prompt joining the decode loop costs the streams already running, in process (no
# HTTP): N streams decode in a ContinuousBatch; a prompt of T random tokens joins and is prefilled C
# tokens a step between their decode steps. Prints the running streams' time between tokens (median,
# p90, p99) over the run and while the prompt joined, and p99-while-joining / median (target <= 3).
#
#   scripts/join-latency.sh --model DIR --weights int8 --streams 4 --prompt 1000 --chunk 64
# Options: --model DIR (required) --weights float32|int8 (float32) --streams N (4) --prompt T (1000)
#          --chunk C[,C...] (64; several: each in turn, back to back) --tokens K (200: each stream's tokens)
#          --step-tokens B|decode[,...] (the chunk: a step's prefill work while streams decode, in tokens
#          through every layer; decode: as long as the last decode pass)
#          --pass-chunks P[,...] (4: whole chunks a pass where passes split exactly, int8/int4/q4_k)
#          --warmup W (20: tokens before the join) --repeat R (1: every variant R times over)
# (LLMZOO_LATENCY_MAIN runs another in-process benchmark class with the same launcher.)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export OPT_OUT_TRACKING=true
if [ $# -lt 1 ]; then
  sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
"$root/bin/llmzoo" --version >/dev/null # builds the project on first use
classpath="$(cat "$root/cli/target/llmzoo.classpath")"
# the runtime bin/llmzoo serve runs with: its JVM options, one PyTorch thread, the allocator settings, MKL's CPU fix
source "$root/bin/lib/launch.sh"
export_runtime_settings
mkl_cpu_fix
echo "machine: $(grep -c ^processor /proc/cpuinfo) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
# the JVM settings bin/llmzoo serve runs with
java_opts=(${LLMZOO_JAVA_OPTS:--Xmx8g})
add_decoding_java_opts serve
echo "JVM options: ${java_opts[*]}"
java "${java_opts[@]}" -Dai.djl.pytorch.num_threads="${LLMZOO_TORCH_THREADS:-1}" \
  -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$classpath" "${LLMZOO_LATENCY_MAIN:-io.github.djlllmzoo.benchmarks.JoinLatency}" "$@"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
