#!/usr/bin/env bash
# Builds kernels_test.c with the kernels once per variant and runs it: on x86-64 the AVX-512 and AVX2
# variants the CPU can run; the ARM64 ones (NEON at armv8-a, and with sdot at armv8.2-a+dotprod) with
# the cross compiler, under qemu-aarch64 (a Cortex-A53 for armv8-a, so no later instruction slips in,
# and qemu's "max" CPU for sdot). Run by the cpu-kernels module's test phase; where the cross tools are
# absent it says which Debian packages bring them and skips the ARM64 runs. A failed check fails the build.
# Usage: run-native-tests.sh MAIN_NATIVE_DIR TEST_NATIVE_DIR WORK_DIR JAVA_HOME
set -u
main=$1 test_dir=$2 work=$3 java_home=$4
mkdir -p "$work"
sources=("$main"/*.c "$test_dir/kernels_test.c")
flags=(-O3 -ffp-contract=fast -Wall -Werror -I"$main" -I"$java_home/include" -I"$java_home/include/linux")
status=0

# run NAME COMPILER RUNNER TARGET_FLAGS...: builds the tests for one variant and runs them (kernels_test.c
# over every kernel; kquant_test.c over kquant_product.c, the q4_k kernels).
run() {
  local name=$1 compiler=$2 runner=$3
  shift 3
  local test binary
  for test in kernels_test kquant_test; do
    binary="$work/$test-$name"
    local -a program=("${sources[@]}")
    [[ $test == kquant_test ]] && program=("$main/kquant_product.c" "$test_dir/kquant_test.c")
    if ! "$compiler" "$@" "${flags[@]}" -o "$binary" "${program[@]}" -lm; then
      echo "[native-tests] $name: compiling $test failed"
      status=1
      continue
    fi
    echo "[native-tests] $name ($test):"
    # shellcheck disable=SC2086 # the runner is a command and its options
    if ! $runner "$binary"; then
      status=1
    fi
  done
}

if [[ "$(uname -s)/$(uname -m)" == Linux/x86_64 ]] && command -v cc > /dev/null; then
  flags_x86=$(grep -m1 '^flags' /proc/cpuinfo)
  if [[ " $flags_x86 " == *" avx512f "* ]]; then
    run avx512 cc "" -mavx512f -mfma -mf16c
  fi
  if [[ " $flags_x86 " == *" avx2 "* && " $flags_x86 " == *" fma "* && " $flags_x86 " == *" f16c "* ]]; then
    run avx2 cc "" -mavx2 -mfma -mf16c
  fi
fi
if [[ "$(uname -m)" == aarch64 ]] && command -v cc > /dev/null; then
  run neon cc "" -march=armv8-a
  if grep -q '^Features.* asimddp' /proc/cpuinfo; then
    run neon-dotprod cc "" -march=armv8.2-a+dotprod
  fi
elif command -v aarch64-linux-gnu-gcc > /dev/null && command -v qemu-aarch64 > /dev/null; then
  run neon aarch64-linux-gnu-gcc "qemu-aarch64 -cpu cortex-a53" -static -march=armv8-a
  run neon-dotprod aarch64-linux-gnu-gcc "qemu-aarch64 -cpu max" -static -march=armv8.2-a+dotprod
else
  echo "[native-tests] NEON kernels' tests skipped: no aarch64-linux-gnu-gcc or qemu-aarch64" \
    "(Debian: apt-get install gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user)"
fi
exit $status
