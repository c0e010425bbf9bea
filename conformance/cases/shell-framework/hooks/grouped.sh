#!/usr/bin/env bash
# Group contexts go to __on_group::<group>; a binding without a handler of
# its own goes to __main__.
source /shell_lib.sh

function __config__() {
  cat <<CONFIG
configVersion: v1
kubernetes:
- name: secrets
  group: watched
  kind: Secret
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: fw}}
  jqFilter: .metadata.name
- name: maps
  group: watched
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: fw}}
  jqFilter: .metadata.name
- name: plain
  kind: Secret
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: fw}}
  executeHookOnSynchronization: false
  jqFilter: .metadata.name
CONFIG
}

function __on_group::watched() {
  local secrets maps
  secrets=$(context::jq -c '[.snapshots.secrets[].filterResult] | sort | join(",")')
  maps=$(context::jq -c '[.snapshots.maps[].filterResult] | sort | join(",")')
  cat >> "$KUBERNETES_PATCH_PATH" <<OPS
{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fw-group","namespace":"$CONFORMANCE_NS"},"data":{"secrets":$secrets,"maps":$maps}}}
OPS
}

function __main__() {
  local binding
  binding=$(context::get binding)
  cat >> "$KUBERNETES_PATCH_PATH" <<OPS
{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fw-main","namespace":"$CONFORMANCE_NS"},"data":{"binding":"$binding","type":"$(context::get type)"}}}
OPS
}

hook::run "$@"
