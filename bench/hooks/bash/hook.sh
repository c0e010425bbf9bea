#!/usr/bin/env bash
# The benchmark's bash hook (see bench/README.md): the common case of a hook
# that runs jq over its binding contexts. For each Synchronization context
# it appends "sync <ts> <objects>" to $BENCH_OUT, and for each Event context
# "<ts> <object name>"; <ts> is the hook's own start time in nanoseconds,
# taken once, first thing. --config prints the file $BENCH_CONFIG, which the
# harness writes for each scenario. It also answers admission requests (the
# admission scenario).
ts=${EPOCHREALTIME//[!0-9]/}000 # microseconds, whatever the locale's decimal mark
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  exec cat "$BENCH_CONFIG"
fi
# An admission request (hook-operator writes "type" near the start of the
# context; read with a builtin, so that other runs cost nothing more): an
# object named bench-probe is denied (the harness probes with it whether the
# webhook is in place), everything else allowed.
read -r -N 300 head <"$BINDING_CONTEXT_PATH" || true
if [[ $head == *'"type":"Validating"'* ]]; then
  if [[ $(jq -r '.[0].review.request.name' "$BINDING_CONTEXT_PATH") == bench-probe ]]; then
    echo '{"allowed": false, "message": "probe"}' >"$VALIDATING_RESPONSE_PATH"
  else
    echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"
  fi
  exit 0
fi
exec jq -r --arg ts "$ts" '.[] |
  if .type == "Synchronization" then "sync \($ts) \(.objects | length)"
  elif .type == "Event" then "\($ts) \(.object.metadata.name // .filterResult.name)"
  else empty end' "$BINDING_CONTEXT_PATH" >>"$BENCH_OUT"
