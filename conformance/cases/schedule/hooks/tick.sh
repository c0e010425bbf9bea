#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<CONFIG
configVersion: v1
schedule:
- name: every-second
  crontab: "* * * * * *"
  includeSnapshotsFrom: [cms]
  queue: ticks
- name: yearly
  crontab: "0 0 1 1 *"
kubernetes:
- name: cms
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: sch}}
  executeHookOnEvent: []
  executeHookOnSynchronization: false
  jqFilter: .metadata.name
CONFIG
  exit 0
fi
