#!/usr/bin/env bash
# Runs a command once the machine is quiet: waits until the 1-minute load average is below
# QUIET_LOAD (default 1.5) or QUIET_WAIT seconds have passed (default 1800), then runs it. Timings
# on a shared machine are only comparable when nothing else competes for the cores and memory bus.
#   scripts/when-quiet.sh bin/llmzoo bench --shape gpt2-small
set -euo pipefail
limit="${QUIET_LOAD:-1.5}"
deadline=$(( $(date +%s) + ${QUIET_WAIT:-1800} ))
while :; do
  load="$(cut -d' ' -f1 /proc/loadavg)"
  if awk -v l="$load" -v m="$limit" 'BEGIN { exit !(l < m) }'; then
    echo "when-quiet: load average $load < $limit, running" >&2
    break
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    echo "when-quiet: load average still $load after waiting; running anyway" >&2
    break
  fi
  sleep 15
done
exec "$@"
