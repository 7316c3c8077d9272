#!/usr/bin/env bash
# Compiles the CPU kernels (few_row_product.c, decode_attention.c, compressed_product.c, compressed_gemm.c,
# decode_ops.c) into the one library NativeKernels loads. Run by the cpu-kernels module's build. Without a C compiler, JNI headers or an
# x86-64 Linux machine it says so and builds nothing: the engine's operations are used instead.
# Usage: build.sh OUTPUT JAVA_HOME SOURCE...
set -u
out=$1 java_home=$2
shift 2
if [[ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]]; then
  echo "[native-kernels] not Linux x86-64: kernels not built"
  exit 0
fi
if ! command -v cc > /dev/null; then
  echo "[native-kernels] no C compiler (cc): kernels not built, the engine's operations are used"
  exit 0
fi
stale=false
for src in "$@" "$(dirname "$1")"/*.h; do
  [[ -f "$out" && "$out" -nt "$src" ]] || stale=true
done
$stale || exit 0
mkdir -p "$(dirname "$out")"
if cc -O3 -mavx512f -mfma -shared -fPIC -Wall -Werror -I"$java_home/include" -I"$java_home/include/linux" \
    -o "$out.$$.tmp" "$@"; then
  mv "$out.$$.tmp" "$out"
else
  rm -f "$out.$$.tmp"
  echo "[native-kernels] compiling $* failed: kernels not built, the engine's operations are used"
fi
exit 0
