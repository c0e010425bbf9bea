#!/usr/bin/env bash
# An example of a hook of your own, mounted from the ConfigMap
# hook-operator-hooks at /hooks/custom/example.sh, next to the hooks shipped
# in the image. It logs the keys of ConfigMaps labelled
# hook-operator.dev/example=true, in every namespace, and changes nothing:
#
#   kubectl create configmap demo --from-literal=colour=blue
#   kubectl label configmap demo hook-operator.dev/example=true
#   kubectl -n hook-operator logs deploy/hook-operator | grep example.sh
#
# A hook that writes declares its writes under "writes" in its configuration,
# and `make deploy` grants exactly those (docs/hooks.md).
set -euo pipefail

if [[ "${1:-}" == "--config" ]]; then
  cat <<'CONFIG'
configVersion: v1
kubernetes:
- name: example-configmaps
  kind: ConfigMap
  labelSelector:
    matchLabels: {hook-operator.dev/example: "true"}
  jqFilter: .data
CONFIG
  exit 0
fi

jq -r '.[]
  | if .type == "Synchronization" then .objects[] | {object, event: "Synchronization"}
    elif .type == "Event" then {object, event: .watchEvent}
    else empty end
  | "ConfigMap \(.object.metadata.namespace)/\(.object.metadata.name): \(.event); keys: \(.object.data // {} | keys | join(", "))"' \
  "$BINDING_CONTEXT_PATH"
