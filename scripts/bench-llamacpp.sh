#!/usr/bin/env bash
# Side by side with llama.cpp (the kit in ../shared/peers/llamacpp): one random-weight checkpoint (written by
# `llmzoo init-random`), converted to GGUF F32, F16, BF16 and Q8_0, measured in one run by llama-bench and by
# `llmzoo bench --dtype` float32, float16, bfloat16 and int8 (and Q4_0 ~ int4 on request); prints both, their
# ratios, the bytes held and each process's peak resident set.
#
#   scripts/bench-llamacpp.sh [--shape gpt2-small|gpt2-tiny|llama-110m|tinyllama-1.1b|qwen2-0.5b] [--runs 3] [--threads 2]
#                             [--prompt-tokens 128] [--new-tokens 128] [--dir DIR] [--formats f32,f16,bf16,q8_0]
#                             (also q4_0) [--warmup 1] [--rounds 1] [--isa avx2] [--kv-cache-dtype float16]
#
# --isa avx2: both engines on their AVX2 paths on an AVX-512 machine: llama.cpp built for AVX2 only
# (scripts/llamacpp-build.sh --avx2) and llmzoo with -Dllmzoo.cpu.isa=avx2 (docs/cpu-kernels.md); the JSON's
# cpu_isa says which variant ran.
#
# --warmup: llmzoo bench's untimed runs before the timed ones (the JVM compiles its hot code over the first
# runs); llama-bench makes one untimed warm-up run of its own.
# --rounds N: measure each format N times, the two engines back to back in each round and their order swapped
# from round to round, so that a slow minute of this shared machine lands on one pair and not on one engine; the
# table gives each round's ratio and their median (the figure to compare with a target).
# Pairs: F32 ~ float32, F16 ~ float16, BF16 ~ bfloat16, Q8_0 ~ int8 (both: symmetric int8 codes, one float
# scale per 32 inputs; llama.cpp's scale is float16, ours float32), Q4_0 ~ int4 (the same layout: 4-bit codes,
# one float16 scale per 32 weights), Q4_K_M ~ q4_k (both Q4_K super-blocks with the same tensors finer: Q6_K
# there, int8 here). The formats alternate engine by engine
# so a change of load hits both. llama-bench decodes tg from an empty context with its default F16 KV cache;
# llmzoo decodes after the prompt with a float32 cache (--kv-cache-dtype float16: a float16 one, as llama-bench's;
# `llmzoo bench --kv-cache-dtype`). llama.cpp is built once into LLAMACPP_HOME (default
# /tmp/llamacpp-peer, outside the repository) and the checkpoint and GGUF files are kept under --dir.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shape=llama-110m runs=3 threads=2 prompt_tokens=128 new_tokens=128 dir="" formats=f32,f16,bf16,q8_0 warmup=1 rounds=1
isa="" kv_cache_dtype=""
while [ $# -gt 0 ]; do
  [ $# -ge 2 ] || { echo "error: $1 needs a value" >&2; exit 2; }
  case "$1" in
    --shape) shape="$2";; --runs) runs="$2";; --threads) threads="$2";; --dir) dir="$2";;
    --prompt-tokens) prompt_tokens="$2";; --new-tokens) new_tokens="$2";; --formats) formats="$2";;
    --warmup) warmup="$2";; --rounds) rounds="$2";; --isa) isa="$2";; --kv-cache-dtype) kv_cache_dtype="$2";;
    *) echo "error: unknown option $1" >&2; exit 2;;
  esac
  shift 2
done
[[ "$warmup" =~ ^[0-9]+$ ]] || { echo "error: --warmup takes a count of runs (0 or more), not '$warmup'" >&2; exit 2; }
[[ "$rounds" =~ ^[1-9][0-9]*$ ]] || { echo "error: --rounds takes a count of rounds (1 or more), not '$rounds'" >&2; exit 2; }
[[ -z "$isa" || "$isa" == avx2 ]] || { echo "error: --isa takes avx2 (or is left out), not '$isa'" >&2; exit 2; }
[[ -z "$kv_cache_dtype" || "$kv_cache_dtype" =~ ^(float32|float16)$ ]] || {
  echo "error: --kv-cache-dtype takes float32 or float16 (or is left out), not '$kv_cache_dtype'" >&2; exit 2; }
kit="${LLAMACPP_KIT:-$root/../shared/peers/llamacpp}"
fixtures="${LLMZOO_FIXTURES:-$root/../shared/fixtures}"
[ -x "$kit/build.sh" ] || { echo "error: no llama.cpp kit at $kit (set LLAMACPP_KIT)" >&2; exit 2; }
case "$shape" in
  gpt2-small|gpt2-tiny) tokenizer="$fixtures/gpt2-tokenizer";;
  llama-110m|tinyllama-1.1b) tokenizer="$fixtures/llama2-tokenizer";;
  qwen2-0.5b) tokenizer="$fixtures/gpt2-tokenizer";; # byte-level BPE; the vocabulary padded to Qwen2's 151,936 rows
  *) echo "error: --shape must be gpt2-small, gpt2-tiny, llama-110m, tinyllama-1.1b (the families the kit converts) or qwen2-0.5b (scripts/qwen2-gguf.py), not '$shape'" >&2
     exit 2;;
esac
dtype_of() {
  case "$1" in
    f32) echo float32;; f16) echo float16;; bf16) echo bfloat16;; q8_0) echo int8;; q4_0) echo int4;;
    q4_k) echo q4_k;; # our q4_k (Q4_K super-blocks mixed as Q4_K_M) against llama-quantize's Q4_K_M
    *) echo "error: --formats takes f32, f16, bf16, q8_0, q4_0 and q4_k, not '$1'" >&2; exit 2;;
  esac
}
IFS=, read -r -a format_list <<< "$formats"
for f in "${format_list[@]}"; do dtype_of "$f" > /dev/null; done
dir="${dir:-$root/target/bench/$shape}"
out="$root/target/bench/results/llamacpp-$shape${isa:+-$isa}"
mkdir -p "$out"

echo "building llama.cpp (once) ..." >&2
if [ "$isa" = avx2 ]; then
  bin="$("$root/scripts/llamacpp-build.sh" --avx2)"
  export LLMZOO_JAVA_OPTS="${LLMZOO_JAVA_OPTS:--Xmx8g} -Dllmzoo.cpu.isa=avx2"
else
  bin="$("$kit/build.sh")"
fi
if [ ! -f "$dir/model.safetensors" ]; then
  echo "writing a random-weight $shape checkpoint to $dir ..." >&2
  "$root/bin/llmzoo" init-random --shape "$shape" --out "$dir" --tokenizer "$tokenizer" >&2
fi
gguf="$dir/gguf"
if [ "$shape" = qwen2-0.5b ]; then
  if [ ! -f "$gguf-f32.gguf" ] || [ "$dir/model.safetensors" -nt "$gguf-f32.gguf" ]; then
    echo "converting to GGUF F32 (scripts/qwen2-gguf.py) ..." >&2
    LLAMACPP_HOME="$(dirname "$(dirname "$(dirname "$bin")")")" python3 "$root/scripts/qwen2-gguf.py" "$dir" "$gguf-f32.gguf" >&2
  fi
elif [ ! -f "$gguf-q8_0.gguf" ] || [ "$dir/model.safetensors" -nt "$gguf-q8_0.gguf" ]; then
  echo "converting to GGUF F32/F16/Q8_0 ..." >&2
  "$kit/to-gguf.sh" "$dir" "$gguf" >&2
fi
# The formats not yet written (the kit's converter writes F16 and Q8_0): llama-quantize makes them from the F32
# file, so both engines start from the same weights (its type names are the format's, upper case; q4_k is Q4_K_M).
for f in "${format_list[@]}"; do
  [ "$f" != f32 ] || continue
  type="${f^^}"
  [ "$f" != q4_k ] || type=Q4_K_M
  if [ ! -f "$gguf-$f.gguf" ] || [ "$gguf-f32.gguf" -nt "$gguf-$f.gguf" ]; then
    "$bin/llama-quantize" "$gguf-f32.gguf" "$gguf-$f.gguf" "$type" 2 > /dev/null 2>&1
  fi
done

# peak_rss FILE CMD...: runs CMD, then writes its peak resident set (the kernel's ru_maxrss of the child, KiB) to
# FILE, the same measure for both engines.
peak_rss() {
  local file="$1"; shift
  python3 -c 'import resource, subprocess, sys
code = subprocess.call(sys.argv[2:])
open(sys.argv[1], "w").write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))
sys.exit(code)' "$file" "$@"
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
run_llamacpp() {
  echo "round $2: llama.cpp $1 ..." >&2
  peak_rss "$out/llamacpp-$1-$2.rss" "$bin/llama-bench" -m "$gguf-$1.gguf" -p "$prompt_tokens" -n "$new_tokens" -t "$threads" -r "$runs" -o json \
    > "$out/llamacpp-$1-$2.json" 2> "$out/llamacpp-$1-$2.log"
}
run_llmzoo() {
  local d; d="$(dtype_of "$1")"
  echo "round $2: llmzoo $d ..." >&2
  peak_rss "$out/llmzoo-$d-$2.rss" "$root/bin/llmzoo" bench --model "$dir" --dtype "$d" --prompt-tokens "$prompt_tokens" --new-tokens "$new_tokens" \
    ${kv_cache_dtype:+--kv-cache-dtype "$kv_cache_dtype"} --runs "$runs" --warmup "$warmup" --long-positions 0 --bandwidth-mib 0 --compute-size 0 --output json \
    > "$out/llmzoo-$d-$2.json" 2> "$out/llmzoo-$d-$2.log"
}
for ((round = 1; round <= rounds; round++)); do
  for f in "${format_list[@]}"; do
    if ((round % 2)); then run_llamacpp "$f" "$round"; run_llmzoo "$f" "$round"
    else run_llmzoo "$f" "$round"; run_llamacpp "$f" "$round"; fi
  done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

cpu="$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')"
echo "$shape, random weights ($dir), $prompt_tokens-token prompt, $new_tokens new tokens, $threads threads, $runs runs, $rounds rounds; $cpu"
python3 - "$out" "$formats" "$rounds" << 'EOF'
import json, statistics, sys
out, formats, rounds = sys.argv[1], sys.argv[2].split(","), int(sys.argv[3])
dtypes = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "q8_0": "int8", "q4_0": "int4", "q4_k": "q4_k"}

def llamacpp(f, r):
    tests = json.load(open(f"{out}/llamacpp-{f}-{r}.json"))
    pp = next(t["avg_ts"] for t in tests if t["n_prompt"] > 0 and t["n_gen"] == 0)
    tg = next(t["avg_ts"] for t in tests if t["n_gen"] > 0 and t["n_prompt"] == 0)
    return pp, tg

def llmzoo(f, r):
    return json.load(open(f"{out}/llmzoo-{dtypes[f]}-{r}.json"))

def peak_rss_mib(engine, f, r):
    # ru_maxrss of the whole process (KiB), taken alike for both engines by peak_rss
    name = f if engine == "llamacpp" else dtypes[f]
    return int(open(f"{out}/{engine}-{name}-{r}.rss").read()) / 1024

def rounds_text(values):
    return " ".join(f"{v:.2f}" for v in values)

print("Each round's tokens/s (llama.cpp pp / tg, llmzoo prefill / decode):")
for f in formats:
    for r in range(1, rounds + 1):
        pp, tg = llamacpp(f, r)
        ours = llmzoo(f, r)
        print(f"  {f.upper()} round {r}: llama.cpp {pp:.1f} / {tg:.1f}, llmzoo {dtypes[f]}"
              f" {ours['prefill_tokens_per_s']:.1f} / {ours['decode_tokens_per_s']:.1f}")
print()
print("| llama.cpp | pp tok/s | tg tok/s | llmzoo | prefill tok/s | decode tok/s | prefill ratio | decode ratio"
      " | prefill ratio by round | decode ratio by round"
      " | llmzoo MB read/token | llmzoo MB held | llmzoo peak RSS MiB | llmzoo load peak MiB | llmzoo anon / file MiB"
      " | process peak RSS MiB, llama.cpp / llmzoo |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
decode_ratios = {}
for f in formats:
    theirs = [llamacpp(f, r) for r in range(1, rounds + 1)]
    ours = [llmzoo(f, r) for r in range(1, rounds + 1)]
    prefill_ratios = [o["prefill_tokens_per_s"] / t[0] for o, t in zip(ours, theirs)]
    decode_ratios[f] = [o["decode_tokens_per_s"] / t[1] for o, t in zip(ours, theirs)]
    last = ours[-1]
    print(f"| {f.upper()} | {statistics.median(t[0] for t in theirs):.1f} | {statistics.median(t[1] for t in theirs):.1f}"
          f" | {dtypes[f]} | {statistics.median(o['prefill_tokens_per_s'] for o in ours):.1f}"
          f" | {statistics.median(o['decode_tokens_per_s'] for o in ours):.1f}"
          f" | {statistics.median(prefill_ratios):.2f} | {statistics.median(decode_ratios[f]):.2f}"
          f" | {rounds_text(prefill_ratios)} | {rounds_text(decode_ratios[f])}"
          f" | {last['weight_bytes'] / 1e6:.1f} | {last['resident_weight_bytes'] / 1e6:.1f}"
          f" | {max(o['peak_rss_mb'] for o in ours):.0f} | {max(o['load_peak_rss_mb'] for o in ours):.0f}"
          f" | {last['rss_anon_mb']:.0f} / {last['rss_file_mb']:.0f}"
          f" | {max(peak_rss_mib('llamacpp', f, r) for r in range(1, rounds + 1)):.0f}"
          f" / {max(peak_rss_mib('llmzoo', f, r) for r in range(1, rounds + 1)):.0f} |")
if "f16" in formats and "bf16" in formats:
    # Issue 21 compares bfloat16's decode with llama.cpp's F16 as well as BF16.
    against_f16 = [llmzoo("bf16", r)["decode_tokens_per_s"] / llamacpp("f16", r)[1] for r in range(1, rounds + 1)]
    print()
    print(f"bfloat16 decode against llama.cpp F16: median {statistics.median(against_f16):.2f}"
          f" (by round {rounds_text(against_f16)})")
EOF
