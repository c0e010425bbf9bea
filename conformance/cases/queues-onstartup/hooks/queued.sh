#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<CONFIG
configVersion: v1
onStartup: 5
kubernetes:
- name: on-a
  queue: a
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: q}}
  jqFilter: .metadata.name
CONFIG
  exit 0
fi
