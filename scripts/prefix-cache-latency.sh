#!/usr/bin/env bash
# Time to first token of a request whose prompt prefix is in the prefix cache, against the same
# request cold, in process (no HTTP): N prompts of a shared P-token prefix and S tokens of their own
# each run alone through the decode loop's batch (prefilled C tokens a step), without a prefix cache
# and with one an earlier request filled. Prints both medians, cached / cold (target <= 0.25 for a
# 500-token prefix) and whether every request generated the same tokens both ways (exit 1 if not).
#
#   scripts/prefix-cache-latency.sh --model DIR --weights int8 --prefix 500 --suffix 20 --chunk 64
# Options: --model DIR (required) --weights float32|int8 (float32) --prefix P (500) --suffix S (20)
#          --chunk C (64) --tokens K (16: generated per request) --runs N (5)
set -euo pipefail
if [ $# -lt 1 ]; then
  sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
fi
# join-latency.sh's launcher (build, classpath, the runtime settings of bin/llmzoo serve), another class
LLMZOO_LATENCY_MAIN=io.github.djlllmzoo.benchmarks.PrefixCacheLatency \
  exec "$(dirname "${BASH_SOURCE[0]}")/join-latency.sh" "$@"
