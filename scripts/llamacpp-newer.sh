#!/usr/bin/env bash
# Builds a llama.cpp source other than the kit's (../shared/peers/llamacpp holds c392e50, Feb 2025, which
# predates Qwen3 and Gemma 3) into a peer folder laid out as the kit's build.sh lays out its own, so the
# GGUF parity tests run against it with LLAMACPP_HOME pointing there:
#
#   scripts/llamacpp-newer.sh SOURCE [HOME]
#
#   SOURCE  a llama.cpp source tree, or a git directory (bare or not; its HEAD, or SOURCE@REV for another commit)
#   HOME    where to build (default ${LLAMACPP_HOME:-/tmp/llamacpp-new}); prints HOME
#
# Offline and CPU only, as build.sh: -DGGML_NATIVE=ON -DLLAMA_CURL=OFF, no server, only the targets the tests
# use (llama-tokenize, llama-simple, llama-quantize, llama-gguf-split), then the kit's greedy_ids.cpp and
# this repository's score_ids.cpp (djl-llm-zoo test resources) linked to that build, both with float32
# attention for --kv f32, and the kit's make_gguf.py beside them. HOME/COMMIT names the commit built. Runs under `nice -n 10` with ${JOBS:-2} jobs (the machine is
# shared); about 10 minutes on 2 cores, later calls return at once.
#
#   LLAMACPP_HOME=$(scripts/llamacpp-newer.sh /work/.mirror/ye-NX+llama.cpp/repo) \
#     mvn -o -pl djl-llm-zoo -am test -Dtest='GgufLlamaCpp*Test' -Dsurefire.failIfNoSpecifiedTests=false
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kit="${LLAMACPP_KIT:-$root/../shared/peers/llamacpp}"
[ $# -ge 1 ] || { echo "usage: $0 SOURCE[@REV] [HOME]" >&2; exit 2; }
source="${1%@*}"
rev="HEAD"
[ "$source" = "$1" ] || rev="${1##*@}"
home="$(mkdir -p "${2:-${LLAMACPP_HOME:-/tmp/llamacpp-new}}" && cd "${2:-${LLAMACPP_HOME:-/tmp/llamacpp-new}}" && pwd)"
bin="$home/src/build/bin"
if [ ! -f "$home/src/CMakeLists.txt" ]; then
  if git --git-dir="$source" rev-parse --verify -q "$rev^{commit}" > /dev/null \
      || git --git-dir="$source/.git" rev-parse --verify -q "$rev^{commit}" > /dev/null; then
    gitdir="$source"; [ -d "$source/.git" ] && gitdir="$source/.git"
    commit="$(git --git-dir="$gitdir" rev-parse "$rev^{commit}")"
    # a mirror may lack its largest blobs (models/ggml-vocab-*.gguf, which no target needs): leave those out
    missing=()
    while read -r path; do missing+=(":(exclude)$path"); done < <(git --git-dir="$gitdir" ls-tree -r "$commit" \
        | awk '$2 == "blob" {print $3 " " $4}' | while read -r blob path; do
          git --git-dir="$gitdir" cat-file -e "$blob" 2> /dev/null || echo "$path"; done)
    [ ${#missing[@]} -eq 0 ] || echo "leaving out ${#missing[@]} files absent from $gitdir: ${missing[*]}" >&2
    mkdir -p "$home/src.tmp" && git --git-dir="$gitdir" archive "$commit" -- . "${missing[@]}" | tar -x -C "$home/src.tmp"
    echo "$commit $(git --git-dir="$gitdir" log -1 --format=%cs "$commit")" > "$home/COMMIT"
  elif [ -f "$source/CMakeLists.txt" ]; then
    mkdir -p "$home/src.tmp" && cp -a "$source/." "$home/src.tmp/"
    echo "unknown (copied from $source)" > "$home/COMMIT"
  else
    echo "error: $source is neither a llama.cpp source tree nor a git directory with commit $rev" >&2; exit 2
  fi
  mv "$home/src.tmp" "$home/src"
fi
if [ ! -x "$bin/llama-tokenize" ] || [ ! -x "$bin/llama-quantize" ] || [ ! -x "$bin/llama-gguf-split" ]; then
  command -v cmake > /dev/null || { echo "error: cmake is not installed" >&2; exit 1; }
  (cd "$home/src" && nice -n 10 cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DLLAMA_CURL=OFF \
      -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF > "$home/cmake.log" 2>&1 \
    && nice -n 10 cmake --build build -j"${JOBS:-2}" \
        --target llama-tokenize llama-simple llama-quantize llama-gguf-split >> "$home/cmake.log" 2>&1) \
    || { tail -30 "$home/cmake.log" >&2; exit 1; }
fi
# --kv f32 means attention in float32 on any llama.cpp (res/f32_attention.h: newer ones cast an F32 KV cache
# to F16 for the flash attention they turn on by default): the kit's greedy_ids.cpp is compiled with it called
res="$root/djl-llm-zoo/src/test/resources/llamacpp"
link=(-I"$res" -I"$home/src/include" -I"$home/src/ggml/include" -L"$bin" -lllama -lggml -lggml-base -Wl,-rpath,"$bin")
if [ ! -x "$home/greedy_ids" ]; then
  sed 's/cp.type_v = GGML_TYPE_F32;/& llmzoo_f32_attention(cp);/' "$kit/greedy_ids.cpp" > "$home/greedy_ids.cpp"
  grep -q llmzoo_f32_attention "$home/greedy_ids.cpp" \
    || { echo "error: $kit/greedy_ids.cpp no longer sets cp.type_v = GGML_TYPE_F32; as this script expects" >&2; exit 1; }
  nice -n 10 g++ -O2 -std=c++17 -include f32_attention.h -o "$home/greedy_ids" "$home/greedy_ids.cpp" "${link[@]}"
fi
[ -x "$home/score_ids" ] || nice -n 10 g++ -O2 -std=c++17 -o "$home/score_ids" "$res/score_ids.cpp" "${link[@]}"
install -m 644 "$kit/make_gguf.py" "$home/"
echo "$home"
