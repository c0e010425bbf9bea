#!/usr/bin/env bash
if [[ "${1:-}" == "--config" ]]; then
  cat <<CONFIG
configVersion: v1
kubernetes:
- name: added-deleted
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: ev}}
  executeHookOnEvent: [Added, Deleted]
  jqFilter: .data.x
- name: modified-no-sync
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: ev}}
  executeHookOnEvent: [Modified]
  executeHookOnSynchronization: false
  jqFilter: .data | to_entries[] | .value
- name: light
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: ev}}
  keepFullObjectsInMemory: false
  jqFilter: '{name: .metadata.name, keys: (.data | keys)}'
- name: snapshot-only
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: ev}}
  executeHookOnEvent: []
  jqFilter: .metadata.name
- name: nothing-out
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: ev}}
  executeHookOnEvent: [Added]
  includeSnapshotsFrom: [snapshot-only, light]
  jqFilter: empty
CONFIG
  exit 0
fi
