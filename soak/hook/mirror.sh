#!/usr/bin/env bash
# The soak's hook (see docs/soak.md): level-triggered mirroring. Each
# ConfigMap labelled soak=src gets a ConfigMap m-<name> labelled soak=mirror
# with the same data, and a mirror without its source is deleted. Every run
# compares the whole of this replica's share (the snapshots of the group), so
# a run after any fault repairs whatever was missed. It also answers the
# validating binding: a ConfigMap with a data key "forbidden" is denied.
# Each run appends "<unix ts> <replica> <namespaces of its sources>" to
# $SOAK_DIR/handled-<replica>.log, which the harness compares across replicas.
# A file $SOAK_DIR/hang-<replica> makes the next run remove it and hang (the
# operator kills the run at settings.timeout).
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  exec cat "$SOAK_CONFIG"
fi
ts=$EPOCHREALTIME
read -r -N 300 head <"$BINDING_CONTEXT_PATH" || true
if [[ $head == *'"type":"Validating"'* ]]; then
  exec jq -c '.[0].review.request.object.data // {} |
    if has("forbidden") then {allowed: false, message: "soak: the data key forbidden is refused"}
    else {allowed: true} end' "$BINDING_CONTEXT_PATH" >"$VALIDATING_RESPONSE_PATH"
fi
hang="$SOAK_DIR/hang-$SOAK_REPLICA"
if [[ -e $hang ]]; then
  rm -f "$hang"
  sleep 600
fi
jq -c '.[-1].snapshots as $s
  | [$s.src // [] | .[].filterResult] as $src
  | [$s.mirror // [] | .[].filterResult] as $mir
  | ($mir | map({key: "\(.ns)/\(.name)", value: .data}) | from_entries) as $have
  | ($src | map({key: "\(.ns)/m-\(.name)", value: true}) | from_entries) as $want
  | ($src[] | select($have["\(.ns)/m-\(.name)"] != .data)
      | {operation: "CreateOrUpdate", object: {apiVersion: "v1", kind: "ConfigMap",
          metadata: {name: "m-\(.name)", namespace: .ns, labels: {soak: "mirror"}}, data: .data}}),
    ($mir[] | select($want["\(.ns)/\(.name)"] | not)
      | {operation: "Delete", apiVersion: "v1", kind: "ConfigMap", namespace: .ns, name: .name})' \
  "$BINDING_CONTEXT_PATH" >"$KUBERNETES_PATCH_PATH"
jq -r --arg r "$SOAK_REPLICA" --arg ts "$ts" \
  '[.[-1].snapshots.src // [] | .[].filterResult.ns] | unique | select(length > 0) | "\($ts) \($r) \(join(" "))"' \
  "$BINDING_CONTEXT_PATH" >>"$SOAK_DIR/handled-$SOAK_REPLICA.log"
