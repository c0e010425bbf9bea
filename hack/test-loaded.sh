#!/usr/bin/env bash
# Runs make test RUNS times in a row (default 3) while a CPU burner keeps
# every core busy, at the tests' own priority, and reports how many runs
# passed and which tests failed. It finds the tests that wait for time
# instead of for the condition they need: on a loaded machine, a sleep is
# too short and a deadline too near. Each run's output is kept in
# ${TEST_LOADED_DIR:-/var/tmp/hook-operator-loaded}/run-N.log.
#
# Usage: test-loaded.sh [RUNS]
# Env:   TEST_LOADED_BURNERS=N  burner processes (default: one per core)
set -euo pipefail
root=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
runs=${1:-3}
[[ "$runs" =~ ^[1-9][0-9]*$ ]] || { echo "usage: test-loaded.sh [RUNS]" >&2; exit 2; }
burners=${TEST_LOADED_BURNERS:-$(nproc)}
dir=${TEST_LOADED_DIR:-/var/tmp/hook-operator-loaded}
mkdir -p "$dir"

log() { printf '%s test-loaded.sh: %s\n' "$(date +%T)" "$*" >&2; }

pids=()
stop_burners() { ((${#pids[@]} == 0)) || kill "${pids[@]}" 2>/dev/null || true; }
trap stop_burners EXIT
for ((i = 0; i < burners; i++)); do
  bash -c 'while :; do :; done' &
  pids+=($!)
done
log "$burners CPU burners running; $runs runs of make test; logs in $dir"

passed=0
for ((n = 1; n <= runs; n++)); do
  start=$(date +%s)
  rc=0
  (cd "$root" && make test) > "$dir/run-$n.log" 2>&1 || rc=$?
  wall=$(( $(date +%s) - start ))
  if ((rc == 0)); then
    passed=$((passed + 1))
    log "run $n: passed in $((wall / 60)) min $((wall % 60)) s"
  else
    log "run $n: FAILED (exit $rc) in $((wall / 60)) min $((wall % 60)) s; failures:"
    grep -E '^\s*--- FAIL|^FAIL|^panic:|make: \*\*\*' "$dir/run-$n.log" | sed 's/^/    /' >&2 || true
  fi
done
log "$passed of $runs loaded runs passed"
((passed == runs))
