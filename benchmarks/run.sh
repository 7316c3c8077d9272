#!/usr/bin/env bash
# Runs the JMH benchmarks of the hot blocks. Build first, from the repository root:
#   mvn -q -B -o -pl benchmarks -am package -DskipTests
# Arguments go to JMH, e.g.:  benchmarks/run.sh ProjectionBenchmark -p layout=linearTransposed
#                             benchmarks/run.sh -jvmArgsAppend -Dai.djl.pytorch.num_threads=1
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ -d "$here/target/classes" ] || { echo "build first: mvn -q -B -o -pl benchmarks -am package -DskipTests" >&2; exit 1; }
export OPT_OUT_TRACKING=true
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-PASSIVE}" # as bin/llmzoo does
exec java -cp "$here/target/classes:$here/target/lib/*" org.openjdk.jmh.Main "$@"
