#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<CONFIG
configVersion: v1
kubernetes:
- name: cms
  group: g
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: grp}}
  jqFilter: .data
- name: secrets
  group: g
  kind: Secret
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: grp}}
  keepFullObjectsInMemory: false
  jqFilter: .metadata.name
- name: outside
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: grp}}
  executeHookOnEvent: [Deleted]
  includeSnapshotsFrom: [cms, secrets]
  jqFilter: .metadata.name
CONFIG
  exit 0
fi
