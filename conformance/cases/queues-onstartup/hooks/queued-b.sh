#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<CONFIG
configVersion: v1
kubernetes:
- name: on-b
  queue: b
  waitForSynchronization: false
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: q}}
  executeHookOnEvent: [Deleted]
  jqFilter: .metadata.name
CONFIG
  exit 0
fi
