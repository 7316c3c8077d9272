#!/usr/bin/env bash
# Runs every measurement behind docs/PERFORMANCE.md, each once the machine is quiet (see
# scripts/when-quiet.sh), and leaves the JSON and text results in target/bench/results.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/target/bench/results"
mkdir -p "$out"
quiet="$root/scripts/when-quiet.sh"
llmzoo="$root/bin/llmzoo"
run() { # name command...
  local name="$1"; shift
  echo "== $name: $*" >&2
  "$quiet" "$@" > "$out/$name" 2> "$out/$name.log"
}

run gpt2-small-b1.json $llmzoo bench --shape gpt2-small --output json
run gpt2-small-b8.json $llmzoo bench --shape gpt2-small --batch 8 --long-positions 0 --output json
run llama-110m-b1.json $llmzoo bench --shape llama-110m --output json
run llama-110m-b8.json $llmzoo bench --shape llama-110m --batch 8 --long-positions 0 --output json
for threads in "1 1" "2 1" "2 2"; do
  set -- $threads
  run "gpt2-small-intra$1-inter$2.json" $llmzoo bench --shape gpt2-small --intra-op-threads "$1" \
    --inter-op-threads "$2" --long-positions 0 --output json
done
for policy in ACTIVE PASSIVE; do
  run "gpt2-small-omp-$policy.json" env OMP_WAIT_POLICY=$policy $llmzoo bench --shape gpt2-small \
    --long-positions 0 --output json
done
run jlama-gpt2-small.txt "$root/scripts/bench-jlama.sh" --shape gpt2-small
run jlama-llama-110m.txt "$root/scripts/bench-jlama.sh" --shape llama-110m
echo "results in $out" >&2
