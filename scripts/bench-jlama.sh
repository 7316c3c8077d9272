#!/usr/bin/env bash
# Side by side with Jlama 0.8.4: the same random-weight checkpoint directory (written by
# `llmzoo init-random`), the same prompt ids and token counts, float32, greedy; prints both engines'
# prefill and decode tokens/s, whether Jlama generated exactly llmzoo's ids, and the ratios.
#
#   scripts/bench-jlama.sh [--shape gpt2-small|gpt2-tiny|llama-110m] [--prompt-tokens 128] [--new-tokens 128]
#                          [--runs 5] [--dir DIR] [--threads N]
#
# Jlama runs three ways: native SIMD backend with its batched prefill (known to produce wrong tokens
# for prompts of 6+ tokens), native SIMD with one-token-at-a-time prefill, and the pure-Java Panama
# backend with batched prefill. Ratios are taken against the fastest Jlama run whose ids are right.
# Needs a Java 21+ JDK for Jlama (JLAMA_JAVA_HOME, default the Temurin 25 JDK) and Maven Central
# access the first time (to fetch jlama-core and jlama-native).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
shape=gpt2-small prompt_tokens=128 new_tokens=128 runs=5 dir="" threads=""
while [ $# -gt 0 ]; do
  case "$1" in
    --shape) shape="$2";; --prompt-tokens) prompt_tokens="$2";; --new-tokens) new_tokens="$2";;
    --runs) runs="$2";; --dir) dir="$2";; --threads) threads="$2";;
    *) echo "unknown option $1" >&2; exit 2;;
  esac
  shift 2
done
java25="${JLAMA_JAVA_HOME:-/usr/lib/jvm/temurin-25-jdk-amd64}"
fixtures="${LLMZOO_FIXTURES:-$root/../shared/fixtures}"
case "$shape" in
  gpt2-*) tokenizer="$fixtures/gpt2-tokenizer";;
  llama-110m) tokenizer="$fixtures/llama2-tokenizer";;
  *) echo "--shape must be gpt2-small, gpt2-tiny or llama-110m" >&2; exit 2;;
esac
dir="${dir:-$root/target/bench/$shape}"
out="$root/target/bench/results/jlama-$shape"
mkdir -p "$out"

if [ ! -f "$dir/model.safetensors" ]; then
  echo "writing a random-weight $shape checkpoint to $dir ..." >&2
  "$root/bin/llmzoo" init-random --shape "$shape" --out "$dir" --tokenizer "$tokenizer" >&2
fi
runner="$root/scripts/jlama"
if [ ! -d "$runner/target/lib" ] || [ -n "$(find "$runner/src" "$runner/pom.xml" -newer "$runner/target/lib" -print -quit)" ]; then
  echo "building the Jlama runner ..." >&2
  (cd "$runner" && JAVA_HOME="$java25" mvn -q -B package) >&2
  touch "$runner/target/lib"
fi

vocab="$(grep -o '"vocab_size" *: *[0-9]*' "$dir/config.json" | grep -o '[0-9]*$')"
prompt="$(awk -v n="$prompt_tokens" -v v="$vocab" 'BEGIN { srand(7); for (i = 0; i < n; i++) printf "%s%d", (i ? "," : ""), int(rand() * v) }')"
java25_run() {
  "$java25/bin/java" --add-modules jdk.incubator.vector --enable-preview --enable-native-access=ALL-UNNAMED \
    -Xmx4g -Dorg.slf4j.simpleLogger.defaultLogLevel=warn -cp "$runner/target/classes:$runner/target/lib/*" "$@"
}
run_jlama() { # result-file java-options-and-runner-arguments...
  java25_run "${@:2}" 2> "$out/${1%.json}.log" | tail -n 1 > "$out/$1"
}

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
echo "llmzoo ..." >&2
"$root/bin/llmzoo" bench --model "$dir" --prompt-ids "$prompt" --new-tokens "$new_tokens" --runs "$runs" \
  --long-positions 0 --output json ${threads:+--intra-op-threads "$threads"} > "$out/llmzoo.json"
args=(io.github.djlllmzoo.jlama.JlamaBench --model "$dir" --prompt-ids "$prompt" --new-tokens "$new_tokens" --runs "$runs")
echo "jlama, native SIMD, batched prefill ..." >&2
run_jlama jlama-native-batch.json "${args[@]}" --prefill batch
echo "jlama, native SIMD, serial prefill ..." >&2
run_jlama jlama-native-serial.json "${args[@]}" --prefill serial
echo "jlama, Panama (pure Java), batched prefill ..." >&2
run_jlama jlama-panama-batch.json -Djlama.force_panama_tensor_operations=true "${args[@]}" --prefill batch
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)" >&2

echo "$shape, float32, greedy: prompt of $prompt_tokens random ids, $new_tokens new tokens, median of $runs runs; checkpoint $dir"
java25_run io.github.djlllmzoo.jlama.CompareRuns 2> "$out/compare.log" \
  "llmzoo (DJL PyTorch)=$out/llmzoo.json" \
  "jlama native SIMD, batched prefill=$out/jlama-native-batch.json" \
  "jlama native SIMD, serial prefill=$out/jlama-native-serial.json" \
  "jlama Panama, batched prefill=$out/jlama-panama-batch.json"
