#!/usr/bin/env bash
# The benchmark's resident bash hook (see bench/README.md): hook.sh's work,
# jq over the binding contexts, in a process that stays. With
# HOOK_OPERATOR_RESIDENT=1 it reads one request line per run from fd 3 with
# bash builtins, sets the run's variables, does the run and answers on fd 4
# (the protocol of docs/hooks.md); <ts> in its marks is the time the request
# line was read. What it saves is bash's own start; jq still starts for
# every run. Without HOOK_OPERATOR_RESIDENT it does one run, as hook.sh.
set -uo pipefail
if [[ "${1:-}" == "--config" ]]; then
  exec cat "$BENCH_CONFIG"
fi

# handle does one run, with <ts> $1; its status is the run's.
handle() {
  local ts=$1 head=""
  read -r -N 300 head <"$BINDING_CONTEXT_PATH" || true
  if [[ $head == *'"type":"Validating"'* ]]; then
    local name
    name=$(jq -r '.[0].review.request.name' "$BINDING_CONTEXT_PATH") || return 1
    if [[ $name == bench-probe ]]; then
      echo '{"allowed": false, "message": "probe"}' >"$VALIDATING_RESPONSE_PATH"
    else
      echo '{"allowed": true}' >"$VALIDATING_RESPONSE_PATH"
    fi
    return
  fi
  jq -r --arg ts "$ts" '.[] |
    if .type == "Synchronization" then "sync \($ts) \(.objects | length)"
    elif .type == "Event" then "\($ts) \(.object.metadata.name // .filterResult.name)"
    else empty end' "$BINDING_CONTEXT_PATH" >>"$BENCH_OUT"
}

if [[ ${HOOK_OPERATOR_RESIDENT:-} != 1 ]]; then
  handle "${EPOCHREALTIME//[!0-9]/}000"
  exit
fi
request='^\{"id":"([0-9]+)","env":\{(.*)\}\}$'
pair='^"([A-Z_]+)":"([^"]*)",?'
while IFS= read -r line <&3; do
  ts=${EPOCHREALTIME//[!0-9]/}000 # microseconds, whatever the locale's decimal mark
  if [[ ! $line =~ $request ]]; then
    echo "resident.sh: request ${line@Q} on fd 3 is not {\"id\":\"<run id>\",\"env\":{...}}" >&2
    exit 1
  fi
  id=${BASH_REMATCH[1]} env=${BASH_REMATCH[2]}
  while [[ $env =~ $pair ]]; do
    export "${BASH_REMATCH[1]}=${BASH_REMATCH[2]}"
    env=${env:${#BASH_REMATCH[0]}}
  done
  if handle "$ts"; then code=0; else code=$?; fi
  printf '{"id":"%s","exitCode":%d}\n' "$id" "$code" >&4
done
