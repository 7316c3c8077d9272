#!/usr/bin/env bash
# Load test of `llmzoo serve` on loopback: starts the server on a checkpoint, runs LoadTest at 1, 8
# and 32 concurrent clients (requests/s, tokens/s, latency, mean batch), prints the load average
# (the machine may be shared), and stops the server. The work is bounded: every level sends
# clients x --requests-per-client requests of --max-tokens tokens each.
#
#   scripts/load-test.sh --random small            # random GPT-2-small-shaped model (124M), written once
#   scripts/load-test.sh --random tiny             # random 32-wide 2-layer GPT-2 (fast)
#   scripts/load-test.sh --model DIR              # any checkpoint with a tokenizer
# Options: --clients 1,8,32 --requests-per-client 2 --max-tokens 32 --port 18080
#          --max-concurrency 32 --max-batch 8 --workers 2 --batch-wait-ms 5
# The environment reaches the server: e.g. OMP_NUM_THREADS=1 gives each worker one PyTorch thread.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
export OPT_OUT_TRACKING=true

model="" random="" port=18080 clients="1,8,32" per_client=2 max_tokens=32
max_concurrency=32 max_batch=8 workers=2 batch_wait_ms=5
while [ $# -gt 0 ]; do
  case "$1" in
    --model) model="$2" ;;
    --random) random="$2" ;;
    --port) port="$2" ;;
    --clients) clients="$2" ;;
    --requests-per-client) per_client="$2" ;;
    --max-tokens) max_tokens="$2" ;;
    --max-concurrency) max_concurrency="$2" ;;
    --max-batch) max_batch="$2" ;;
    --workers) workers="$2" ;;
    --batch-wait-ms) batch_wait_ms="$2" ;;
    *) echo "unknown option $1 (see the header of $0)" >&2; exit 2 ;;
  esac
  shift 2
done

"$root/bin/llmzoo" --version >/dev/null # builds the project on first use
classpath="$(cat "$root/cli/target/llmzoo.classpath")"
java_cmd=(java -DOPT_OUT_TRACKING=true -Doffline=true -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$classpath")

if [ -z "$model" ]; then
  case "$random" in
    tiny|small) ;;
    *) echo "give --model DIR or --random tiny|small" >&2; exit 2 ;;
  esac
  tokenizer="${LLMZOO_FIXTURES:-$root/../shared/fixtures}/gpt2-tokenizer"
  [ -f "$tokenizer/tokenizer.json" ] || { echo "no GPT-2 tokenizer at $tokenizer (set LLMZOO_FIXTURES)" >&2; exit 2; }
  model="${TMPDIR:-/tmp}/llmzoo-random-gpt2-$random"
  if [ ! -f "$model/config.json" ]; then
    echo "writing a random GPT-2 ($random) to $model" >&2
    "${java_cmd[@]}" io.github.djlllmzoo.benchmarks.RandomGpt2Checkpoint "$model" "$tokenizer" "$random"
  fi
fi

log="$(mktemp)"
"$root/bin/llmzoo" serve --model "$model" --host 127.0.0.1 --port "$port" \
  --max-concurrency "$max_concurrency" --max-batch "$max_batch" --workers "$workers" \
  --batch-wait-ms "$batch_wait_ms" 2>"$log" &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null; rm -f "$log"' EXIT

echo "model: $model; server: --max-concurrency $max_concurrency --max-batch $max_batch --workers $workers --batch-wait-ms $batch_wait_ms"
echo "machine: $(grep -c ^processor /proc/cpuinfo) cores; OMP_NUM_THREADS=${OMP_NUM_THREADS:-unset}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
if ! "${java_cmd[@]}" io.github.djlllmzoo.benchmarks.LoadTest "http://127.0.0.1:$port" \
    --clients "$clients" --requests-per-client "$per_client" --max-tokens "$max_tokens"; then
  echo "server log:" >&2; cat "$log" >&2; exit 1
fi
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
