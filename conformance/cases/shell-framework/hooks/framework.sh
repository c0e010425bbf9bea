#!/usr/bin/env bash
# A hook in shell-operator's shell framework style: one function per binding
# and event, dispatched by hook::run.
source /shell_lib.sh

function __config__() {
  cat <<CONFIG
configVersion: v1
onStartup: 1
kubernetes:
- name: colors
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: fw}}
  jqFilter: .data.color
CONFIG
}

function __on_startup() {
  echo "started"
}

# The Synchronization writes one summary object.
function __on_kubernetes::colors::synchronization() {
  local colors
  colors=$(context::jq -c '[.objects[].filterResult] | sort | join(",")')
  cat >> "$KUBERNETES_PATCH_PATH" <<OPS
{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fw-summary","namespace":"$CONFORMANCE_NS"},"data":{"colors":$colors}}}
OPS
}

# Added and modified objects get a mirror holding their color.
function __on_kubernetes::colors::added_or_modified() {
  local name color event
  name=$(context::get object.metadata.name)
  color=$(context::get filterResult)
  event=$(context::get watchEvent)
  cat >> "$KUBERNETES_PATCH_PATH" <<OPS
{"operation":"CreateOrUpdate","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fw-mirror-$name","namespace":"$CONFORMANCE_NS"},"data":{"color":"$color","event":"$event"}}}
OPS
}

function __on_kubernetes::colors::deleted() {
  local name
  name=$(context::get object.metadata.name)
  if context::has object.metadata.labels.app; then
    echo "{\"operation\":\"Delete\",\"kind\":\"ConfigMap\",\"namespace\":\"$CONFORMANCE_NS\",\"name\":\"fw-mirror-$name\"}" >> "$KUBERNETES_PATCH_PATH"
  fi
}

hook::run "$@"
