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
  jqFilter: .metadata.name
CONFIG
  exit 0
fi
{
  jq -c '.[] | select(.type == "Event") | {name: "conf_seen", group: "seen", action: "set", value: 1, labels: {cm: .filterResult}}' "$BINDING_CONTEXT_PATH"
  jq -c '.[] | select(.type == "Event") | {name: "conf_last", group: "last", action: "set", value: 1, labels: {cm: .filterResult}}' "$BINDING_CONTEXT_PATH"
} >> "$METRICS_PATH"
if jq -e 'any(.[]; .type == "Event" and .watchEvent == "Deleted")' "$BINDING_CONTEXT_PATH" >/dev/null; then
  echo '{"group":"seen","action":"expire"}' >> "$METRICS_PATH"
fi
