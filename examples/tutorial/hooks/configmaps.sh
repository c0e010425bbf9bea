#!/usr/bin/env bash
# The tutorial's first hook (docs/tutorial.md, step 2), in plain bash and jq
# so that the whole contract shows: it prints its configuration when called
# with --config; otherwise it reads the run's binding contexts from
# $BINDING_CONTEXT_PATH and appends operations to $KUBERNETES_PATCH_PATH.
#
# It runs once at start-up (onStartup) and for every ConfigMap labelled
# tutorial.hook-operator.dev/watch=true, in any namespace. It logs each
# context it gets, and annotates each such ConfigMap with the list of its
# keys (tutorial.hook-operator.dev/keys: "colour,size").
set -euo pipefail

if [[ "${1:-}" == "--config" ]]; then
  cat <<'CONFIG'
configVersion: v1
onStartup: 1
kubernetes:
- name: watched-configmaps
  kind: ConfigMap
  labelSelector:
    matchLabels: {tutorial.hook-operator.dev/watch: "true"}
  # Only .data reaches the hook as filterResult, and only a change of .data
  # runs it: the hook's own annotation does not run it again.
  jqFilter: .data
# What the operations write, for `hook-operator rbac` (an extension).
writes:
- {kind: ConfigMap, verbs: [patch]}
CONFIG
  exit 0
fi

# One log line per binding context. What a hook prints goes to the
# operator's log.
jq -r '.[] | "context: " + ([.binding, .type, .watchEvent] | map(select(. != null)) | join(" "))' \
  "$BINDING_CONTEXT_PATH"

# A Synchronization holds every ConfigMap that matches in .objects; an Event
# holds one in .object. For each one that is still there, write a merge
# patch of its annotation. ignoreMissingObject: it may be gone by the time
# the patch is applied.
jq -c '.[]
  | if .type == "Synchronization" then .objects[]
    elif .type == "Event" and .watchEvent != "Deleted" then .
    else empty end
  | {operation: "MergePatch", kind: "ConfigMap",
     namespace: .object.metadata.namespace, name: .object.metadata.name,
     ignoreMissingObject: true,
     mergePatch: {metadata: {annotations: {
       "tutorial.hook-operator.dev/keys": (.filterResult // {} | keys | join(","))}}}}' \
  "$BINDING_CONTEXT_PATH" >>"$KUBERNETES_PATCH_PATH"
