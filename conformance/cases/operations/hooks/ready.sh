#!/usr/bin/env bash
# Its Synchronization tells the suite the operator watches ConfigMaps here
# (ops.sh has no Synchronization run to tell it).
if [[ "${1:-}" == "--config" ]]; then
  cat <<CONFIG
configVersion: v1
kubernetes:
- name: all
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  executeHookOnEvent: []
  jqFilter: .metadata.name
CONFIG
  exit 0
fi
