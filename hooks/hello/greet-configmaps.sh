#!/usr/bin/env bash
# A first hook: it watches ConfigMaps labelled hook-operator.dev/hello=true
# in every namespace, logs what happened to each, and answers by annotating
# the ConfigMap with a greeting for the name in its data.
#
#   kubectl create configmap demo --from-literal=name=world
#   kubectl label configmap demo hook-operator.dev/hello=true
#   kubectl get configmap demo -o jsonpath='{.metadata.annotations}'
#
# The jqFilter keeps only .data, so the hook's own annotation does not run
# the hook again: only changes of the data do.
set -euo pipefail
# The helpers of hooks/lib: docs/bashlib.md.
source "$(dirname "$0")/../lib/hook.sh"

hook::config "$@" <<'CONFIG'
configVersion: v1
kubernetes:
- name: hello-configmaps
  kind: ConfigMap
  labelSelector:
    matchLabels: {hook-operator.dev/hello: "true"}
  jqFilter: .data
# What the operations write, for `hook-operator rbac` (extension).
writes:
- {kind: ConfigMap, verbs: [patch]}
CONFIG

# One item per object of the run: its event, the object, and its data (the
# jqFilter's result).
hook::objects | while read -r item; do
  hook::read "$item" '[.event, .object.metadata.namespace, .object.metadata.name, (.filterResult.name // "stranger")]' \
    event namespace name greet
  hook::log info "ConfigMap ${namespace}/${name}: ${event}"
  [[ "$event" == "Deleted" ]] && continue
  # The ConfigMap may be gone by the time the patch is applied (a later
  # context of this very run may be its Deleted): that is no failure, and
  # must not make the run retry forever.
  hook::merge_patch --ignore-missing ConfigMap "$namespace" "$name" \
    "$(jq -nc --arg greeting "hello, ${greet}" '{metadata: {annotations: {"hook-operator.dev/greeting": $greeting}}}')"
done
