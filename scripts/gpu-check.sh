# The CUDA check of issue 35 in one run on a GPU machine that has PyTorch but no Java
# (../shared/gpu/README.md). Here, from the project root, after the build:
#   ../shared/gpu/pack.sh
# then, with the working tree and .gpukit/ copied to that machine, from its project root, one command:
#   bash .gpukit/device-run.sh 'source scripts/gpu-check.sh'
# (sourced, so that device-run.sh's llmzoo and junit functions and $OUT are defined). It runs every
# golden case on the GPU in float32 and float16 (GpuGoldenCasesTest), then `llmzoo bench` in float16 at
# batch 1 and batch 8 beside Hugging Face transformers (eager, float16) on the same card, and writes
# the figures to $OUT (bench-*.json, hf-*.json, gpu-check-summary.json, and gpu-check-log.txt with the
# golden cases, a generation and where a decode step's host time goes) with the targets checked:
# batch-1 decode >= 3x transformers', batch-8 prefill >= 1.0x, "dtype": "float16". Both engines get the
# same untimed warm-up runs (WARMUP): the JVM's optimizing compiler is still compiling the decode loop
# through the first run, which one warm-up leaves in the first timed runs.
set -o pipefail
PROMPT=${PROMPT:-128}; NEW=${NEW:-128}; RUNS=${RUNS:-5}; WARMUP=${WARMUP:-3}
status=0
log="$OUT/gpu-check-log.txt"
echo "=== GPU golden cases (float32 and float16)" | tee "$log" >&2
junit --select-class io.github.djlllmzoo.zoo.GpuGoldenCasesTest 2>&1 | tail -80 | tee -a "$log" || status=1
for b in 1 8; do
  echo "=== llmzoo bench float16 batch $b" >&2
  llmzoo bench --shape tinyllama-1.1b --device gpu --dtype float16 --batch "$b" --prompt-tokens "$PROMPT" \
      --new-tokens "$NEW" --runs "$RUNS" --warmup "$WARMUP" --long-positions 0 --output json > "$OUT/bench-b$b.json" || status=1
  echo "=== transformers float16 batch $b" >&2
  python3 scripts/hf_bench.py --batch "$b" --prompt-tokens "$PROMPT" --new-tokens "$NEW" --runs "$RUNS" \
      --warmup "$WARMUP" > "$OUT/hf-b$b.json" || status=1
done
echo "=== generate on the default model, float16, RUST_FLAVOR unset (EngineDefaults must keep the tokenizers on the CPU)" | tee -a "$log" >&2
(unset RUST_FLAVOR; llmzoo generate --device gpu --dtype float16 --prompt "Once upon a time" --max-new-tokens 24) \
    2>&1 | tee -a "$log" | tail -3 >&2 || status=1
echo "=== where a batch-1 float16 decode step's host time goes" | tee -a "$log" >&2
jrun io.github.djlllmzoo.benchmarks.EngineStepProfile tinyllama-1.1b gpu float16 "$PROMPT" "$NEW" 8 /tmp/gpu-check-trace \
    2>&1 | grep -v ' INFO ' | tee -a "$log" | tail -4 >&2 || status=1
python3 - "$OUT" <<'PY' || status=1
import json, sys
out = sys.argv[1]
r = {k: json.load(open(f"{out}/{k}.json")) for k in ("bench-b1", "bench-b8", "hf-b1", "hf-b8")}
s = {
    "device": r["hf-b1"]["device"],
    "dtype_b1": r["bench-b1"]["dtype"], "weight_bytes_b1": r["bench-b1"]["weight_bytes"],
    "peak_gpu_mb_b1": r["bench-b1"].get("peak_gpu_mb"), "hf_peak_gpu_mb_b1": r["hf-b1"]["peak_gpu_mb"],
    "decode_b1": r["bench-b1"]["decode_tokens_per_s"], "hf_decode_b1": r["hf-b1"]["decode_tokens_per_s"],
    "prefill_b8": r["bench-b8"]["prefill_tokens_per_s"], "hf_prefill_b8": r["hf-b8"]["prefill_tokens_per_s"],
    "decode_b8": r["bench-b8"]["decode_tokens_per_s"], "hf_decode_b8": r["hf-b8"]["decode_tokens_per_s"],
}
s["decode_b1_over_hf"] = s["decode_b1"] / s["hf_decode_b1"]
s["prefill_b8_over_hf"] = s["prefill_b8"] / s["hf_prefill_b8"]
s["targets_met"] = s["dtype_b1"] == "float16" and s["decode_b1_over_hf"] >= 3 and s["prefill_b8_over_hf"] >= 1.0
json.dump(s, open(f"{out}/gpu-check-summary.json", "w"), indent=1)
print(json.dumps(s, indent=1))
PY
echo "=== gpu-check status $status" >&2
