#!/usr/bin/env bash
set -euo pipefail
if [[ "${1:-}" == "--config" ]]; then
  cat <<CONFIG
configVersion: v1
kubernetes:
- name: trigger
  kind: ConfigMap
  namespace: {nameSelector: {matchNames: [$CONFORMANCE_NS]}}
  labelSelector: {matchLabels: {app: ops}}
  executeHookOnSynchronization: false
  jqFilter: .data.round
CONFIG
  exit 0
fi
ns=$CONFORMANCE_NS
round=$(jq -r '.[-1].filterResult' "$BINDING_CONTEXT_PATH")
if [[ $round == 1 ]]; then
  cat >> "$KUBERNETES_PATCH_PATH" <<OPS
{"operation":"Create","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"created","namespace":"$ns","labels":{"by":"hook"}},"data":{"a":"1"}}}
{"operation":"CreateIfNotExists","object":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"exists","namespace":"$ns"},"data":{"kept":"no"}}}
{"operation":"CreateOrUpdate","object":"{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"upserted\",\"namespace\":\"$ns\"},\"data\":{\"v\":\"1\"}}"}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"$ns","name":"created","mergePatch":{"data":{"merged":"yes"}}}
{"operation":"JSONPatch","apiVersion":"v1","kind":"ConfigMap","namespace":"$ns","name":"created","jsonPatch":[{"op":"add","path":"/data/json","value":"patched"}]}
{"operation":"JQPatch","kind":"ConfigMap","namespace":"$ns","name":"created","jqFilter":".data.jq = (.data | keys | join(\",\"))"}
{"operation":"MergePatch","kind":"ConfigMap","namespace":"$ns","name":"missing","ignoreMissingObject":true,"mergePatch":{"data":{"x":"y"}}}
{"operation":"Delete","kind":"ConfigMap","namespace":"$ns","name":"del-fg"}
{"operation":"DeleteInBackground","kind":"ConfigMap","namespace":"$ns","name":"del-bg"}
{"operation":"DeleteNonCascading","kind":"ConfigMap","namespace":"$ns","name":"del-orphan"}
{"operation":"Delete","kind":"ConfigMap","namespace":"$ns","name":"never-was"}
OPS
else
  cat >> "$KUBERNETES_PATCH_PATH" <<OPS
---
operation: CreateOrUpdate
object:
  apiVersion: v1
  kind: ConfigMap
  metadata: {name: upserted, namespace: $ns, labels: {round: "2"}}
  data: {v: "2"}
---
operation: MergePatch
kind: ConfigMap
namespace: $ns
name: created
mergePatch: |
  data:
    fromYAMLString: "yes"
OPS
fi
