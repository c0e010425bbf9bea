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

if [[ "${1:-}" == "--config" ]]; then
  cat <<'CONFIG'
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
  exit 0
fi

# One line per object to greet: namespace, name, and the name to greet.
jq -r '.[]
  | if .type == "Synchronization" then .objects[] | {object, filterResult, event: "Synchronization"}
    elif .type == "Event" then {object, filterResult, event: .watchEvent}
    else empty end
  | [.event, .object.metadata.namespace, .object.metadata.name, (.filterResult.name // "stranger")]
  | @tsv' "$BINDING_CONTEXT_PATH" |
while IFS=$'\t' read -r event namespace name greet; do
  echo "ConfigMap ${namespace}/${name}: ${event}"
  [[ "$event" == "Deleted" ]] && continue
  # The ConfigMap may be gone by the time the patch is applied (a later
  # context of this very run may be its Deleted): that is no failure, and
  # must not make the run retry forever.
  jq -n -c --arg ns "$namespace" --arg name "$name" --arg greeting "hello, ${greet}" '{
    operation: "MergePatch", kind: "ConfigMap", namespace: $ns, name: $name,
    mergePatch: {metadata: {annotations: {"hook-operator.dev/greeting": $greeting}}},
    ignoreMissingObject: true
  }' >> "$KUBERNETES_PATCH_PATH"
done
