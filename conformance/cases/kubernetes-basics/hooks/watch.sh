#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<'CONFIG'
configVersion: v1
kubernetes:
- name: cms
  apiVersion: v1
  kind: ConfigMap
  namespace:
    labelSelector:
      matchLabels: {conformance: "yes"}
  labelSelector:
    matchLabels: {app: conf}
  jqFilter: .data
CONFIG
  exit 0
fi
