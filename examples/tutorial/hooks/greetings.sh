#!/usr/bin/env bash
# The tutorial's operator (docs/tutorial.md, step 3): for each Greeting
# (tutorial.hook-operator.dev/v1, CRD in ../crds/), a ConfigMap
# <name>-greeting whose data.message is "<word>, <name>", owned by the
# Greeting, and the Greeting's status: phase Ready, the message, the
# ConfigMap's name and the generation it describes.
#
# Written with the bash helpers of hooks/lib (docs/bashlib.md), found at
# ../lib: here through the link examples/tutorial/lib, in the image at
# /hooks/lib when the hooks are mounted at /hooks/custom.
set -euo pipefail
source "$(dirname "$0")/../lib/hook.sh"

hook::config "$@" <<'CONFIG'
configVersion: v1
kubernetes:
- name: greetings
  apiVersion: tutorial.hook-operator.dev/v1
  kind: Greeting
  executeHookOnEvent: [Added, Modified]
# What the operations write, for `hook-operator rbac` (an extension): the
# ConfigMap by server-side apply (and get on its parent, the Greeting), the
# status, and the finalizers update that an owner reference with
# blockOwnerDeletion needs.
writes:
- {kind: ConfigMap, verbs: [create, patch]}
- {apiVersion: tutorial.hook-operator.dev/v1, kind: Greeting, verbs: [get]}
- {apiVersion: tutorial.hook-operator.dev/v1, kind: Greeting, subresource: status, verbs: [get, update]}
- {apiVersion: tutorial.hook-operator.dev/v1, kind: Greeting, subresource: finalizers, verbs: [update]}
CONFIG

# Level-triggered: for each Greeting of the run, its latest version, write
# what it should have, whatever the event was. Writing the same again
# changes nothing.
hook::latest_objects greetings | while read -r item; do
  hook::read "$item" '[.object.metadata.namespace, .object.metadata.name, .object.spec.word // "hello", .object.spec.name]' \
    ns name word whom
  message="$word, $whom"
  hook::log info "greeting" greeting="$ns/$name" message="$message"

  # Apply: server-side apply of the whole ConfigMap. With the Greeting as
  # parent it gets a controller owner reference, so deleting the Greeting
  # deletes the ConfigMap too.
  hook::apply "$(jq -nc --arg ns "$ns" --arg name "$name-greeting" --arg message "$message" '{
    apiVersion: "v1", kind: "ConfigMap",
    metadata: {name: $name, namespace: $ns},
    data: {message: $message}}')" "$(hook::get "$item" .object -c)"

  # Status: merged into .status; observedGeneration is the generation the
  # hook read.
  hook::status tutorial.hook-operator.dev/v1/Greeting "$ns" "$name" \
    "$(jq -nc --arg message "$message" --arg cm "$name-greeting" '{phase: "Ready", message: $message, configMap: $cm}')" \
    observedGeneration
done
