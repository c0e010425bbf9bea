#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  cat <<CONFIG
configVersion: v1
kubernetes:
- name: cms
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: met}}
  allowFailure: true
  jqFilter: .metadata.name
CONFIG
  exit 0
fi
n=$(jq 'map(select(.type == "Event")) | length' "$BINDING_CONTEXT_PATH")
{
  echo '{"name":"conf_runs_total","action":"add","value":1}'
  echo "{\"name\":\"conf_events_total\",\"action\":\"add\",\"value\":$n,\"labels\":{\"kind\":\"cm\"}}"
  echo '{"name":"conf_objects","action":"set","value":'"$(jq '[.[] | .objects // [] | length] | add // 0' "$BINDING_CONTEXT_PATH")"'}'
  echo '{"name":"conf_seconds","action":"observe","value":0.3,"buckets":[0.1,0.5,1]}'
} >> "$METRICS_PATH"
if jq -e 'any(.[]; .filterResult == "fails")' "$BINDING_CONTEXT_PATH" >/dev/null; then
  echo "failing on purpose" >&2
  exit 1
fi
