#!/usr/bin/env bash
# Compiles the few-row product kernel (few_row_product.c) into the library FewRowProduct loads.
# Run by the blocks module's build. Without a C compiler, JNI headers or an x86-64 Linux machine it
# says so and builds nothing: the library then falls back to the engine's product.
# Usage: build.sh SOURCE OUTPUT JAVA_HOME
set -u
src=$1 out=$2 java_home=$3
if [[ "$(uname -s)/$(uname -m)" != Linux/x86_64 ]]; then
  echo "[few-row-product] not Linux x86-64: kernel not built"
  exit 0
fi
if ! command -v cc > /dev/null; then
  echo "[few-row-product] no C compiler (cc): kernel not built, the engine's product is used"
  exit 0
fi
if [[ -f "$out" && "$out" -nt "$src" ]]; then
  exit 0
fi
mkdir -p "$(dirname "$out")"
if cc -O3 -mavx512f -mfma -shared -fPIC -Wall -Werror -I"$java_home/include" -I"$java_home/include/linux" \
    -o "$out.$$.tmp" "$src"; then
  mv "$out.$$.tmp" "$out"
else
  rm -f "$out.$$.tmp"
  echo "[few-row-product] compiling $src failed: kernel not built, the engine's product is used"
fi
exit 0
