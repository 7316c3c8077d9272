#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run): OPT_OUT_TRACKING=true mvn -B verify, after making sure
# the ARM64 cross compiler and qemu-user are here so the NEON kernels are built and tested under
# emulation (cpu-kernels skips those tests, saying so, where they are absent and cannot be installed).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

arm64_tools=(aarch64-linux-gnu-gcc qemu-aarch64)
missing=0
for tool in "${arm64_tools[@]}"; do
    command -v "$tool" > /dev/null || missing=1
done
if [[ $missing == 1 ]]; then
    if [[ $(id -u) == 0 ]] && command -v apt-get > /dev/null; then
        echo "test.sh: installing the ARM64 cross compiler and qemu-user (Debian packages) for the NEON kernel tests"
        if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
                gcc-aarch64-linux-gnu libc6-dev-arm64-cross qemu-user > /dev/null; }; then
            echo "test.sh: could not install them; the NEON kernel tests will be skipped"
        fi
    else
        echo "test.sh: ${arm64_tools[*]} not found and not root with apt-get: the NEON kernel tests will be skipped"
    fi
fi

export OPT_OUT_TRACKING=true
exec mvn -B verify "$@"
