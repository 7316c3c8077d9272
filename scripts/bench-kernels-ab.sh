#!/usr/bin/env bash
# Measures the native kernels of a git revision (A) against this checkout's (B) in the same process setup,
# alternating A B A B ..., and prints each run's decode and prefill tokens/s and the ratio B/A per pair:
#
#   scripts/bench-kernels-ab.sh [--rev HEAD~1] [--isa avx2|avx512] [--rounds 3] -- BENCH_ARGS...
#   scripts/bench-kernels-ab.sh --rev HEAD~1 --isa avx2 -- --model DIR --dtype float32 --prompt-tokens 16 --new-tokens 64
#
# A's kernels (cpu-kernels/src/main/native at --rev) are compiled by the module's build.sh into a temporary
# directory; for an A run that library is put first on the class path (cli/target/classes, where
# NativeKernels' resource lookup finds it before the cpu-kernels jar's), and taken away for a B run and at
# exit. Everything else (Java, engine, weights) is this checkout's, so the pair differs in the kernels only.
# BENCH_ARGS go to `llmzoo bench` after --long-positions 0 --bandwidth-mib 0 --compute-size 0 --output json.
# Only the ratio of runs next to each other means anything on a shared machine (scripts/when-quiet.sh).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
rev=HEAD~1 isa=avx2 rounds=3
while [ $# -gt 0 ]; do
  case "$1" in
    --rev) rev="$2"; shift 2;;
    --isa) isa="$2"; shift 2;;
    --rounds) rounds="$2"; shift 2;;
    --) shift; break;;
    *) echo "error: unknown option $1 (--rev, --isa, --rounds, then -- and bench's arguments)" >&2; exit 2;;
  esac
done
[[ "$isa" == avx2 || "$isa" == avx512 ]] || { echo "error: --isa takes avx2 or avx512, not '$isa'" >&2; exit 2; }
[ $# -gt 0 ] || { echo "error: give bench's arguments after --, e.g. -- --shape tinyllama-1.1b --dtype float32" >&2; exit 2; }

"$root/bin/llmzoo" --version > /dev/null # builds the checkout (B) where its sources changed
work="$(mktemp -d)"
lib_dir="$root/cli/target/classes/io/github/djlllmzoo/cpu/native/linux-x86_64"
lib="$lib_dir/libllmzoo-kernels-$isa.so"
[ ! -e "$lib" ] || { echo "error: $lib exists already (a run of this script killed by force?): remove it" >&2; exit 1; }
trap 'rm -f "$lib"; rmdir -p --ignore-fail-on-non-empty "$lib_dir" 2> /dev/null; rm -rf "$work"' EXIT
git -C "$root" archive "$rev" cpu-kernels/src/main/native | tar -x -C "$work"
java_home="$(dirname "$(dirname "$(readlink -f "$(command -v javac)")")")"
bash "$work/cpu-kernels/src/main/native/build.sh" "$work/out" "$java_home" "$work"/cpu-kernels/src/main/native/*.c \
  > /dev/null
[ -f "$work/out/linux-x86_64/libllmzoo-kernels-$isa.so" ] || { echo "error: $rev's $isa kernels did not build" >&2; exit 1; }
mkdir -p "$lib_dir"
export LLMZOO_JAVA_OPTS="${LLMZOO_JAVA_OPTS:--Xmx8g} -Dllmzoo.cpu.isa=$isa"

run() { # run A|B ROUND: one bench, its JSON kept in $work
  if [ "$1" = A ]; then cp "$work/out/linux-x86_64/libllmzoo-kernels-$isa.so" "$lib"; else rm -f "$lib"; fi
  "$root/bin/llmzoo" bench --long-positions 0 --bandwidth-mib 0 --compute-size 0 --output json "${@:3}" \
    > "$work/$1-$2.json" 2> "$work/$1-$2.log" || { cat "$work/$1-$2.log" >&2; exit 1; }
  rm -f "$lib"
}
echo "A: kernels of $rev, B: this checkout ($(git -C "$root" rev-parse --short HEAD)$(git -C "$root" diff --quiet || echo ', changed')), $isa; $(lscpu | sed -n 's/^Model name: *//p'), load $(cut -d' ' -f1 /proc/loadavg)"
for ((round = 1; round <= rounds; round++)); do
  if ((round % 2)); then run A "$round" "$@"; run B "$round" "$@"; else run B "$round" "$@"; run A "$round" "$@"; fi
done
python3 - "$work" "$rounds" <<'EOF'
import json, statistics, sys
work, rounds = sys.argv[1], int(sys.argv[2])
ratios = []
for r in range(1, rounds + 1):
    a, b = (json.load(open(f"{work}/{s}-{r}.json")) for s in "AB")
    assert a["cpu_isa"] == b["cpu_isa"], (a["cpu_isa"], b["cpu_isa"])
    ratios.append(b["decode_tokens_per_s"] / a["decode_tokens_per_s"])
    print(f"round {r}: decode A {a['decode_tokens_per_s']:.2f} B {b['decode_tokens_per_s']:.2f} tokens/s (B/A {ratios[-1]:.3f}),"
          f" prefill A {a['prefill_tokens_per_s']:.1f} B {b['prefill_tokens_per_s']:.1f}; cpu_isa {b['cpu_isa']}")
print(f"decode B/A median {statistics.median(ratios):.3f} over {rounds} pairs")
EOF
