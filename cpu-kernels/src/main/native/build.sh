#!/usr/bin/env bash
# Compiles the CPU kernels (few_row_product.c, decode_attention.c, compressed_product.c, compressed_gemm.c,
# decode_ops.c, prefill_attention.c, kquant_product.c, lora_update.c) once per instruction set, each into a
# library of its own that NativeKernels loads by the ISA chosen at start (docs/cpu-kernels.md):
#   OUTPUT/linux-x86_64/libllmzoo-kernels-avx512.so   -mavx512f -mfma -mf16c (VNNI/BF16 kernels by target attributes)
#   OUTPUT/linux-x86_64/libllmzoo-kernels-avx2.so     -mavx2 -mfma -mf16c (simd.h's portable variant)
#   OUTPUT/linux-aarch64/libllmzoo-kernels-neon.so    -march=armv8-a (the portable variant on NEON)
#   OUTPUT/linux-aarch64/libllmzoo-kernels-neon-dotprod.so  -march=armv8.2-a+dotprod (sdot)
# Separate libraries rather than function multiversioning: the JNI entry points have one name per
# operation, each library is compiled whole for its target (no instruction of another ISA can leak into
# shared code), and Java picks one file once. x86-64 libraries are built with the host's cc on Linux
# x86-64; ARM64 ones with cc on Linux ARM64, or on x86-64 with the cross compiler aarch64-linux-gnu-gcc
# (Debian's gcc-aarch64-linux-gnu) where it is installed. What cannot be built is said and skipped: the
# engine's operations are used instead.
# Usage: build.sh OUTPUT_DIR JAVA_HOME SOURCE...
set -u
out_dir=$1 java_home=$2
shift 2
host="$(uname -s)/$(uname -m)"
if [[ "$host" != Linux/x86_64 && "$host" != Linux/aarch64 ]]; then
  echo "[native-kernels] not Linux x86-64 or ARM64 ($host): kernels not built"
  exit 0
fi
flags=(-O3 -ffp-contract=fast -shared -fPIC -Wall -Werror -I"$java_home/include" -I"$java_home/include/linux")

# build COMPILER OUTPUT TARGET_FLAGS...: compiles the sources into OUTPUT unless it is newer than them all.
build() {
  local compiler=$1 out=$2
  shift 2
  local stale=false src
  for src in "${sources[@]}" "$(dirname "${sources[0]}")"/*.h; do
    [[ -f "$out" && "$out" -nt "$src" ]] || stale=true
  done
  $stale || return 0
  mkdir -p "$(dirname "$out")"
  if "$compiler" "$@" "${flags[@]}" -o "$out.$$.tmp" "${sources[@]}" -lm; then
    mv "$out.$$.tmp" "$out"
  else
    rm -f "$out.$$.tmp"
    echo "[native-kernels] compiling $(basename "$out") failed: that variant not built"
  fi
}

sources=("$@")
if [[ "$host" == Linux/x86_64 ]]; then
  if command -v cc > /dev/null; then
    build cc "$out_dir/linux-x86_64/libllmzoo-kernels-avx512.so" -mavx512f -mfma -mf16c
    build cc "$out_dir/linux-x86_64/libllmzoo-kernels-avx2.so" -mavx2 -mfma -mf16c
  else
    echo "[native-kernels] no C compiler (cc): x86-64 kernels not built, the engine's operations are used"
  fi
  arm=aarch64-linux-gnu-gcc
else
  arm=cc
fi
if command -v "$arm" > /dev/null; then
  build "$arm" "$out_dir/linux-aarch64/libllmzoo-kernels-neon.so" -march=armv8-a
  build "$arm" "$out_dir/linux-aarch64/libllmzoo-kernels-neon-dotprod.so" -march=armv8.2-a+dotprod
else
  echo "[native-kernels] no $arm (Debian: gcc-aarch64-linux-gnu): ARM64 kernels not built"
fi
exit 0
