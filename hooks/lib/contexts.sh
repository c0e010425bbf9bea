# shellcheck shell=bash disable=SC2016 # jq programs in single quotes use jq $variables
# contexts.sh: reading the binding contexts. Sourced by hook.sh.
#
# $BINDING_CONTEXT_PATH holds a JSON array: several contexts may arrive in
# one run (Synchronization, then events, oldest first), so a hook loops over
# all of them. The functions here print one compact JSON value per line, to
# be read in a loop:
#
#   hook::objects tickets | while read -r item; do
#     event=$(hook::get "$item" .event)
#     ...
#   done
#
# Prefer a pipe into `while` over `done < <(...)`: with `set -o pipefail` a
# failure on either side then fails the hook.

# _hook::context_path prints $BINDING_CONTEXT_PATH, or fails when it is not
# set (the hook was not started by the runtime).
_hook::context_path() {
  if [[ -z "${BINDING_CONTEXT_PATH:-}" ]]; then
    hook::log error "BINDING_CONTEXT_PATH is not set; run the hook through hook-operator (or set it to a file holding a JSON array of binding contexts)"
    return 1
  fi
  printf '%s\n' "$BINDING_CONTEXT_PATH"
}

# hook::contexts
#
# Prints each binding context of the run as one compact JSON line, in the
# order the runtime delivered them.
hook::contexts() {
  local path
  path=$(_hook::context_path) || return 1
  jq -c '.[]' "$path"
}

# The jq definition shared by hook::objects and hook::latest_objects: the
# objects of the contexts of the bindings in $want (all when empty), one
# {binding, event, object, filterResult} each. A Synchronization gives one
# item per object with event "Synchronization"; an Event context gives one
# item with its watchEvent (Added, Modified, Deleted, and the extensions'
# Finalize and Requeue). Other contexts (onStartup, Schedule, Group) give
# none.
_hook_objects_jq='
  def items($want):
    .[]
    | select(($want | length) == 0 or (.binding as $b | any($want[]; . == $b)))
    | if .type == "Synchronization" then
        .binding as $b | .objects[] | {binding: $b, event: "Synchronization", object, filterResult}
      elif .type == "Event" then
        {binding, event: .watchEvent, object, filterResult}
      else empty end;
'

# hook::objects [BINDING ...]
#
# Prints the objects of the run's Synchronization and Event contexts
# uniformly, one JSON line each:
#
#   {"binding": "tickets", "event": "Synchronization"|"Added"|"Modified"|
#    "Deleted"|"Finalize"|"Requeue", "object": {...}, "filterResult": ...}
#
# With BINDING names, only the contexts of those bindings. "object" is null
# for bindings with keepFullObjectsInMemory: false, "filterResult" is null
# for bindings without a jqFilter.
hook::objects() {
  _hook::options hook::objects "" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  local path
  path=$(_hook::context_path) || return 1
  jq -c "$_hook_objects_jq"' items($ARGS.positional)' "$path" --args "$@"
}

# hook::latest_objects [BINDING ...]
#
# Like hook::objects, but each object (by apiVersion, kind, namespace and
# name) appears once, as its last item in the run: what a level-triggered
# hook reconciles. Objects are printed in the order they first appear.
# Items without an object (keepFullObjectsInMemory: false) are all kept.
hook::latest_objects() {
  _hook::options hook::latest_objects "" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  local path
  path=$(_hook::context_path) || return 1
  jq -c "$_hook_objects_jq"'
    [items($ARGS.positional)]
    | to_entries
    | map(.id = (if .value.object == null then "#\(.key)"
                 else .value.object | "\(.apiVersion)/\(.kind)/\(.metadata.namespace // "")/\(.metadata.name)" end))
    | group_by(.id)
    | map({first: (map(.key) | min), value: (max_by(.key) | .value)})
    | sort_by(.first)
    | .[].value
  ' "$path" --args "$@"
}

# hook::snapshot BINDING
#
# Prints the snapshot of BINDING ({"object", "filterResult"} per line,
# sorted by namespace and name) from the last context of the run that
# carries it. Snapshots come with includeSnapshotsFrom or group and describe
# the moment the run started. Fails when no context carries BINDING's
# snapshot: the configuration does not include it.
hook::snapshot() {
  _hook::options hook::snapshot "" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  if (($# != 1)); then
    hook::log error "hook::snapshot: usage: hook::snapshot BINDING"
    return 1
  fi
  local path
  path=$(_hook::context_path) || return 1
  if ! jq -e --arg b "$1" 'any(.[]; (.snapshots // {}) | has($b))' "$path" >/dev/null; then
    hook::log error "hook::snapshot: no binding context carries a snapshot of \"$1\"; add it to includeSnapshotsFrom (or the group) of the bindings that run the hook"
    return 1
  fi
  jq -c --arg b "$1" '[.[] | (.snapshots // {}) | select(has($b)) | .[$b]] | last | .[]' "$path"
}

# hook::snapshots
#
# Prints every snapshot of the run as one JSON object line, {BINDING:
# [{"object", "filterResult"}, ...], ...}, each binding's from the last
# context that carries it; {} when no context carries snapshots. One call
# for a hook that joins several snapshots in one jq program.
hook::snapshots() {
  _hook::options hook::snapshots "" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  local path
  path=$(_hook::context_path) || return 1
  jq -c 'reduce (.[] | .snapshots // empty) as $s ({}; . + $s)' "$path"
}

# hook::snapshot_object BINDING NAMESPACE NAME
#
# Prints the object called NAMESPACE/NAME (NAMESPACE empty for a
# cluster-scoped kind) from BINDING's snapshot, as one JSON line, or nothing
# when the snapshot does not hold it. Fails like hook::snapshot.
hook::snapshot_object() {
  _hook::options hook::snapshot_object "" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  if (($# != 3)); then
    hook::log error "hook::snapshot_object: usage: hook::snapshot_object BINDING NAMESPACE NAME"
    return 1
  fi
  hook::snapshot "$1" | jq -c --arg ns "$2" --arg name "$3" '
    .object | select(. != null and (.metadata.namespace // "") == $ns and .metadata.name == $name)'
}

# hook::get JSON FILTER [JQ_OPTION ...]
#
# Runs the jq FILTER on JSON and prints the result raw (strings without
# quotes; null as "null"). Extra arguments go to jq, e.g. --arg.
#
#   name=$(hook::get "$item" .object.metadata.name)
#   number=$(hook::get "$item" '.object.spec.number // 1')
hook::get() {
  if (($# < 2)); then
    hook::log error "hook::get: usage: hook::get JSON FILTER [JQ_OPTION ...]"
    return 1
  fi
  jq -r "${@:3}" "$2" <<<"$1"
}

# hook::read JSON FILTER VAR...
#
# Runs the jq FILTER, which yields an array, on JSON and assigns the
# elements to the shell variables VAR... in order: strings as they are, null
# as "", other values as JSON (true, 3, {"a":1}). One jq call for several
# fields; empty values and newlines are kept. Declare the variables local
# first when calling it from a function.
#
#   local ns name number
#   hook::read "$ticket" '[.metadata.namespace, .metadata.name, .spec.number]' ns name number
hook::read() {
  if (($# < 3)); then
    hook::log error "hook::read: usage: hook::read JSON FILTER VAR..."
    return 1
  fi
  local __hook_json=$1 __hook_filter=$2 __hook_out
  shift 2
  if ! __hook_out=$(jq -j "($__hook_filter)"' | if type != "array" then error("FILTER must yield an array, not \(type)") else . end
      | map(if type == "string" then . elif . == null then "" else tojson end) | join("\u001f")' <<<"$__hook_json" 2>&1); then
    hook::log error "hook::read: ${__hook_out#jq: error (at *): }"
    return 1
  fi
  IFS=$'\x1f' read -r -d '' "$@" < <(printf '%s' "$__hook_out") || true
}
