#!/usr/bin/env bash
# Streaming load of any OpenAI-compatible /v1/completions endpoint (ours, llama.cpp's llama-server,
# vLLM): N closed-loop clients, each sending its requests one after another, every request a seeded
# draw of a prompt of 8-300 words and max_tokens 16-128 (greedy, ignore_eos), read as server-sent
# events. Prints throughput (generated tokens/s), time to first token p50/p90/p99 and time per
# output token p50/p90/p99. The same --seed sends every server the same requests.
#
#   scripts/load-openai.sh http://127.0.0.1:8080 --clients 8 --requests-per-client 3
#   scripts/load-openai.sh http://127.0.0.1:8080 --clients 32 --disconnect 0.3   # clients leave at random
#   scripts/load-openai.sh http://127.0.0.1:8080 --soak --max-tokens 8          # memory over 5,000 requests
# Options: --clients N (4) --requests-per-client K (3) --seed S (1) --model NAME (none sent)
#          --api-key KEY (default: $LLMZOO_API_KEY) --disconnect P (0: share of requests left early)
# With --disconnect, every other admitted request must end cleanly, and on our server /metrics must
# show every admitted request ended (completed, cancelled or timed out; none failed or still
# active); the exit status is 1 otherwise. The server should serve nothing else meanwhile.
# --soak: --requests N (5000) from --clients C (8), sampling the server's resident memory
# (/proc/PID/status) and /metrics gauges every --every K (250) requests after --warmup W (N/10);
# --max-tokens T caps the drawn max_tokens; --pid PID (default: the process listening on URL's
# port). Exit status 1 when memory grew past the bound it prints (docs/serving-production.md).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export OPT_OUT_TRACKING=true
if [ $# -lt 1 ] || [[ "$1" == -* ]]; then
  sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
main=io.github.djlllmzoo.benchmarks.StreamingLoadTest
args=()
for arg in "$@"; do
  if [ "$arg" = --soak ]; then
    main=io.github.djlllmzoo.benchmarks.SoakTest
  else
    args+=("$arg")
  fi
done
if [ "$main" != "${main%SoakTest}" ] && [[ " ${args[*]} " != *" --pid "* ]]; then
  port="${1##*:}"
  port="${port%%/*}"
  pid="$(ss -ltnpH "sport = :$port" 2>/dev/null | grep -o 'pid=[0-9]*' | head -1 | cut -d= -f2 || true)"
  if [ -z "$pid" ]; then
    echo "error: no process of this user listens on port $port; pass --pid PID" >&2
    exit 2
  fi
  args+=(--pid "$pid")
fi
"$root/bin/llmzoo" --version >/dev/null # builds the project on first use
classpath="$(cat "$root/cli/target/llmzoo.classpath")"
echo "machine: $(grep -c ^processor /proc/cpuinfo) cores; load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
java -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$classpath" "$main" "${args[@]}" || status=$?
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
exit $status
