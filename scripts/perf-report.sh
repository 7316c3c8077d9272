#!/usr/bin/env bash
# Runs every measurement behind docs/PERFORMANCE.md, each once the machine is quiet (see
# scripts/when-quiet.sh), and leaves the JSON and text results in target/bench/results.
#   scripts/perf-report.sh            # all
#   scripts/perf-report.sh jlama      # only the runs whose name contains "jlama"
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="$root/target/bench/results"
mkdir -p "$out"
quiet="$root/scripts/when-quiet.sh"
llmzoo="$root/bin/llmzoo"
only="${1:-}"
run() { # name command...
  local name="$1"; shift
  case "$name" in *"$only"*) ;; *) return 0;; esac
  echo "== $name: $*" >&2
  "$quiet" "$@" > "$out/$name" 2> "$out/$name.log"
}

# The table: GPT-2 small and the 110M Llama, batch 1 (with the long sequences) and batch 8.
run gpt2-small-b1.json $llmzoo bench --shape gpt2-small --output json
run gpt2-small-b8.json $llmzoo bench --shape gpt2-small --batch 8 --long-positions 0 --output json
run llama-110m-b1.json $llmzoo bench --shape llama-110m --output json
run llama-110m-b8.json $llmzoo bench --shape llama-110m --batch 8 --long-positions 0 --output json
# oneMKL's generic kernels (no libllmzoo-mkl-cpu preload), for the before/after table.
for shape in gpt2-small llama-110m; do
  for batch in 1 8; do
    run "$shape-b$batch-mkloff.json" env LLMZOO_MKL_CPU_FIX=off \
      $llmzoo bench --shape "$shape" --batch "$batch" --long-positions 0 --output json
  done
done
# Threads: PyTorch intra-op threads with and without the projections split across the cores.
for setting in "1 2" "2 2" "1 1" "2 1"; do
  set -- $setting # intra-op threads, projection threads
  run "gpt2-small-intra$1-split$2.json" env LLMZOO_TORCH_THREADS="$1" \
    LLMZOO_JAVA_OPTS="-Xmx8g -Dllmzoo.cpu.threads=$2" \
    $llmzoo bench --shape gpt2-small --long-positions 0 --output json
done
run gpt2-small-b8-intra2.json env LLMZOO_TORCH_THREADS=2 \
  $llmzoo bench --shape gpt2-small --batch 8 --long-positions 0 --output json
run gpt2-small-interop1.json $llmzoo bench --shape gpt2-small --inter-op-threads 1 --long-positions 0 --output json
# OpenMP waiting with two intra-op threads (matters only then).
for policy in "OMP_WAIT_POLICY=ACTIVE" "OMP_WAIT_POLICY=PASSIVE" "GOMP_SPINCOUNT=10000"; do
  run "gpt2-small-intra2-$policy.json" env OMP_WAIT_POLICY= "$policy" LLMZOO_TORCH_THREADS=2 \
    $llmzoo bench --shape gpt2-small --long-positions 0 --output json
done
run jlama-gpt2-small.txt "$root/scripts/bench-jlama.sh" --shape gpt2-small
run jlama-llama-110m.txt "$root/scripts/bench-jlama.sh" --shape llama-110m
echo "results in $out" >&2
