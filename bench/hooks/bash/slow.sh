#!/usr/bin/env bash
# The parallel scenario's hook (see bench/README.md). Installed as sleep.sh
# it stands for a hook that calls an outside API for each object: 50 ms of
# waiting (a sleep process) per Event context; installed as spin.sh, for one
# that computes: per Event context, the number of loop iterations in the
# file spin-iterations beside it (the harness measures how many take 50 ms
# of CPU on this machine). Then, for each Event context, it appends
# "<ts> <name>" to $BENCH_OUT, <ts> being the time its work ended, in
# nanoseconds: the moment the object is done. The binding's jqFilter is .metadata.name, so the contexts
# hold names only; they are read with bash builtins and no subshell, so
# that the hook's own cost (a bash process, and the sleep process) stays
# small beside the 50 ms.
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  exec cat "$BENCH_CONFIG"
fi
IFS= read -r -d '' ctx <"$BINDING_CONTEXT_PATH" || true
re='"type":"Event","watchEvent":"[A-Za-z]+","filterResult":"([^"]+)"'
objects=()
while [[ $ctx =~ $re ]]; do
  objects+=("${BASH_REMATCH[1]}")
  ctx=${ctx#*"${BASH_REMATCH[0]}"}
done
ms=$((${#objects[@]} * 50))
if [[ ${0##*/} == spin.sh ]]; then
  read -r per <"${0%/*}/spin-iterations"
  for ((i = 0; i < ${#objects[@]} * per; i++)); do :; done
elif ((ms > 0)); then
  printf -v frac '%03d' $((ms % 1000))
  sleep "$((ms / 1000)).$frac"
fi
ts=${EPOCHREALTIME//[!0-9]/}000
out=""
for name in "${objects[@]}"; do
  out+="$ts $name"$'\n'
done
printf '%s' "$out" >>"$BENCH_OUT"
