#!/usr/bin/env bash
# Builds the llama.cpp peer kit (../shared/peers/llamacpp) and prints its bin directory, as the kit's own
# build.sh does, with a switch the kit lacks (its directory is read-only):
#
#   scripts/llamacpp-build.sh            the kit's build: -DGGML_NATIVE=ON, this machine's SIMD
#   scripts/llamacpp-build.sh --avx2     AVX2 only: -DGGML_NATIVE=OFF -DGGML_AVX2=ON -DGGML_AVX512=OFF (with FMA
#                                        and F16C, as AVX2 CPUs have them), into ${LLAMACPP_AVX2_HOME:-/tmp/llamacpp-peer-avx2}
#
# The AVX2 build is llama.cpp's side of a comparison with `-Dllmzoo.cpu.isa=avx2` on an AVX-512 machine
# (scripts/bench-llamacpp.sh --isa avx2). It takes about 5 minutes on 2 cores; later calls return at once.
# Another llama.cpp source (one newer than the kit's c392e50, for Qwen3 and Gemma 3): scripts/llamacpp-newer.sh.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
kit="${LLAMACPP_KIT:-$root/../shared/peers/llamacpp}"
case "${1:-}" in
  "") exec "$kit/build.sh";;
  --avx2) ;;
  *) echo "error: unknown option $1 (--avx2, or none)" >&2; exit 2;;
esac
home="${LLAMACPP_AVX2_HOME:-/tmp/llamacpp-peer-avx2}"
if [ ! -x "$home/src/build/bin/llama-bench" ] || [ ! -x "$home/src/build/bin/llama-quantize" ]; then
  command -v cmake > /dev/null || { apt-get update -qq && apt-get install -y -qq cmake build-essential > /dev/null; }
  mkdir -p "$home/src"
  [ -f "$home/src/CMakeLists.txt" ] || tar -xzf "$kit"/llama.cpp-*-src.tar.gz -C "$home/src"
  (cd "$home/src" && cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON \
      -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
      -DLLAMA_BUILD_SERVER=OFF > /dev/null \
    && cmake --build build -j"$(nproc)" --target llama-bench llama-quantize > /dev/null 2>&1)
fi
echo "$home/src/build/bin"
