# shellcheck shell=bash disable=SC2016 # jq programs in single quotes use jq $variables
# operations.sh: writing object operations. Sourced by hook.sh.
#
# Each function appends one operation, as a line of compact JSON, to
# $KUBERNETES_PATCH_PATH. The runtime applies them in order after the hook
# exits 0, and only then; a hook that fails applies nothing. docs/operations.md
# ("Object operations") describes each operation.
#
# KIND arguments are a kind (ConfigMap, cm, configmaps), optionally with
# its apiVersion in front: apps/v1/StatefulSet, v1/ConfigMap,
# db.example.com/v1/SampleDB. Without one, the kind's preferred version is
# used. NAMESPACE is "" for cluster-scoped kinds.
#
# OBJECT and PARENT arguments are JSON. A PARENT is either a reference
# {apiVersion, kind, namespace, name} or a whole object (the reference is
# taken from it), so an object from a binding context can be passed as it
# is.
#
# Each function starts jq once: jq takes tens of milliseconds to start, and
# a hook writing many operations feels each call.

# jq definitions shared by the functions below. JSON arguments arrive
# through --slurpfile (as arrays of the values they hold), which has no
# size limit and rejects invalid JSON.
_hook_ops_jq='
  def one($what; $v):
    if ($v | length) != 1 or ($v[0] | type) != "object" then error("\($what) must be one JSON object")
    else $v[0] end;
  def target($kind; $ns; $name):
    ($kind | split("/")) as $p
    | if $p[-1] == "" or $name == "" then error("KIND and NAME must not be empty") else . end
    | (if ($p | length) > 1 then {apiVersion: ($p[:-1] | join("/"))} else {} end)
      + {kind: $p[-1]}
      + (if $ns != "" then {namespace: $ns} else {} end)
      + {name: $name};
  def ref:
    (if has("metadata") then {apiVersion, kind, namespace: .metadata.namespace, name: .metadata.name}
     else {apiVersion, kind, namespace, name} end)
    | with_entries(select(.value != null and .value != ""))
    | if (.kind // "") == "" or (.name // "") == "" then error("PARENT needs a kind and a name") else . end;
  def flag(cond; obj): if cond then obj else {} end;
  def subresource($s):
    if $s != "" and ($s | test("^[a-z]+$") | not) then error("--subresource takes a lowercase word such as status or scale, not \"\($s)\"")
    else flag($s != ""; {subresource: $s}) end;
'

# _hook::op FUNCTION JQ_ARGS... runs jq -nc with JQ_ARGS (the last one the
# program, to which the shared definitions are prepended) and appends its
# one line of output to $KUBERNETES_PATCH_PATH. On an error it logs
# "FUNCTION: reason" and returns 1.
_hook::op() {
  local fn=$1
  shift
  if [[ -z "${KUBERNETES_PATCH_PATH:-}" ]]; then
    hook::log error "$fn: KUBERNETES_PATCH_PATH is not set; run the hook through hook-operator"
    return 1
  fi
  local args=("$@") out
  args[-1]="$_hook_ops_jq ${args[-1]}"
  if ! out=$(jq -nc "${args[@]}" 2>&1); then
    hook::log error "$fn: $(_hook::jq_error "$out")"
    return 1
  fi
  printf '%s\n' "$out" >>"$KUBERNETES_PATCH_PATH"
}

# _hook::jq_error OUTPUT turns jq's error OUTPUT into a message that names
# the function's argument.
_hook::jq_error() {
  local out=${1//$'\n'/ } arg
  if [[ "$out" =~ ^jq:\ Bad\ JSON\ in\ --slurpfile\ ([a-z]+)\ [^:]*:\ (.*)$ ]]; then
    case "${BASH_REMATCH[1]}" in
      o) arg=OBJECT ;; p) arg=PARENT ;; s) arg=STATUS ;; patch) arg=PATCH ;; op) arg=OPERATION ;; objs) arg=OBJECTS ;;
      *) arg=${BASH_REMATCH[1]} ;;
    esac
    out="$arg is not valid JSON: ${BASH_REMATCH[2]}"
  fi
  printf '%s\n' "${out#jq: error (at *): }"
}

# _hook::usage NEED HAVE USAGE fails with a log line when a function got
# fewer than NEED arguments.
_hook::usage() {
  if (($2 < $1)); then
    hook::log error "usage: $3"
    return 1
  fi
}

# _hook::options FN "FLAG..." "OPTION..." ARGS... sorts ARGS into options
# and positional arguments, wherever the options stand: FLAGs (--force) take
# no value, OPTIONs (--observed-generation N, or =N) take one, and "--" ends
# the options. The options land in the associative array _hook_opt (a flag
# as "true"), the rest, in order, in the array _hook_args. An unknown
# option, or an OPTION without its value, is an error naming FN, since it
# would otherwise be taken for a KIND or a NAME.
_hook::options() {
  local fn=$1 flags=" $2 " valued=" $3 " a name
  shift 3
  _hook_opt=()
  _hook_args=()
  while (($#)); do
    a=$1
    shift
    case "$a" in
      --) _hook_args+=("$@") && break ;;
      --*)
        name=${a%%=*}
        if [[ "$flags" == *" $name "* && "$a" != *=* ]]; then
          _hook_opt[$name]=true
        elif [[ "$valued" == *" $name "* && "$a" == *=* ]]; then
          _hook_opt[$name]=${a#*=}
        elif [[ "$valued" == *" $name "* ]] && (($#)); then
          _hook_opt[$name]=$1
          shift
        elif [[ "$valued" == *" $name "* ]]; then
          hook::log error "$fn: $name needs a value"
          return 1
        else
          local known
          # shellcheck disable=SC2086 # unquoted on purpose: one space between names
          known=$(echo $flags $valued)
          if [[ -n "$known" ]]; then
            hook::log error "$fn: unknown option $a; use ${known// / or }"
          else
            hook::log error "$fn: unknown option $a; it takes no options"
          fi
          return 1
        fi
        ;;
      *) _hook_args+=("$a") ;;
    esac
  done
}
declare -gA _hook_opt=()
declare -ga _hook_args=()

# hook::emit OPERATION
#
# Appends OPERATION (one JSON object with an "operation" field) to
# $KUBERNETES_PATCH_PATH, for operations the other functions do not cover
# (JSONPatch, options they do not offer).
hook::emit() {
  _hook::options hook::emit "" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  _hook::usage 1 $# "hook::emit OPERATION_JSON" || return 1
  _hook::op hook::emit --slurpfile op <(printf '%s' "$1") '
    one("OPERATION"; $op)
    | if (.operation | type) != "string" or .operation == "" then error("OPERATION has no \"operation\" field") else . end'
}

# hook::parent_ref PARENT
#
# Prints the reference {apiVersion, kind, namespace, name} of PARENT (a
# reference already, or a whole object), leaving out empty fields.
hook::parent_ref() {
  _hook::options hook::parent_ref "" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  _hook::usage 1 $# "hook::parent_ref PARENT_JSON" || return 1
  local out
  if ! out=$(jq -nc --slurpfile p <(printf '%s' "$1") "$_hook_ops_jq"' one("PARENT"; $p) | ref' 2>&1); then
    hook::log error "hook::parent_ref: $(_hook::jq_error "$out")"
    return 1
  fi
  printf '%s\n' "$out"
}

# hook::owner_references OWNER
#
# Prints the ownerReferences list that makes OWNER (a whole object, with
# metadata.uid) the controller of an object, for the Create operations,
# which take no parent. Apply and ApplySet set it themselves from PARENT.
#
#   job=$(jq -c --argjson refs "$(hook::owner_references "$db")" '.metadata.ownerReferences = $refs' <<<"$job")
hook::owner_references() {
  _hook::options hook::owner_references "" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  _hook::usage 1 $# "hook::owner_references OWNER_JSON" || return 1
  local out
  if ! out=$(jq -nc --slurpfile o <(printf '%s' "$1") "$_hook_ops_jq"'
    one("OWNER"; $o)
    | if (.apiVersion // "") == "" or (.kind // "") == "" or (.metadata.name // "") == "" or (.metadata.uid // "") == "" then
        error("OWNER needs apiVersion, kind, metadata.name and metadata.uid")
      else
        [{apiVersion, kind, name: .metadata.name, uid: .metadata.uid, controller: true, blockOwnerDeletion: true}]
      end' 2>&1); then
    hook::log error "hook::owner_references: $(_hook::jq_error "$out")"
    return 1
  fi
  printf '%s\n' "$out"
}

# hook::apply [--force] OBJECT [PARENT]
#
# Apply (extension): server-side apply of OBJECT under the hook's own field
# manager. The fields OBJECT sets are the ones the hook manages; a field it
# set before and leaves out now is removed. With PARENT, the object gets a
# controller owner reference to it and is garbage-collected with it.
# --force takes over fields other managers own.
#
#   hook::apply "$configmap" "$ticket"
hook::apply() {
  _hook::options hook::apply "--force" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  local force=${_hook_opt[--force]:-false}
  _hook::usage 1 $# "hook::apply [--force] OBJECT_JSON [PARENT_JSON]" || return 1
  _hook::op hook::apply --slurpfile o <(printf '%s' "$1") --slurpfile p <(printf '%s' "${2:-}") \
    --argjson force "$force" '
    {operation: "Apply", object: one("OBJECT"; $o)}
    + flag($p | length > 0; {parent: (one("PARENT"; $p) | ref)})
    + flag($force; {force: true})'
}

# hook::apply_set [--force] [--no-owner] NAME PARENT OBJECTS
#
# ApplySet (extension): OBJECTS (a JSON array) is the complete set of
# children called NAME of PARENT. Each is applied as by hook::apply with
# PARENT; children of the set that are no longer in OBJECTS are deleted.
# --force takes over fields other managers own (what a conflict error asks
# for); --no-owner leaves out the owner references (the objects outlive
# PARENT).
hook::apply_set() {
  _hook::options hook::apply_set "--force --no-owner" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  local owner=true force=${_hook_opt[--force]:-false}
  [[ -z "${_hook_opt[--no-owner]:-}" ]] || owner=false
  _hook::usage 3 $# "hook::apply_set [--force] [--no-owner] NAME PARENT_JSON OBJECTS_JSON_ARRAY" || return 1
  _hook::op hook::apply_set --arg name "$1" --slurpfile p <(printf '%s' "$2") --slurpfile objs <(printf '%s' "$3") \
    --argjson owner "$owner" --argjson force "$force" '
    if ($objs | length) != 1 or ($objs[0] | type) != "array" then error("OBJECTS must be a JSON array") else . end
    | {operation: "ApplySet", name: $name, parent: (one("PARENT"; $p) | ref), objects: $objs[0]}
    + flag($force; {force: true})
    + flag($owner | not; {owner: false})'
}

# hook::status [--ignore-missing] [--observed-generation N] KIND NAMESPACE NAME STATUS [observedGeneration]
#
# Status (extension): merges STATUS (a JSON object; null deletes a key) into
# the object's .status through the status subresource. Nothing is written
# when that changes nothing, and the runtime does not run the hook again for
# its own status write. With "observedGeneration" (or "true") as the last
# argument, status.observedGeneration is set to the metadata.generation the
# runtime read; --observed-generation N sets it to N instead (the generation
# the hook acted on, when it read it from another object or an earlier run).
# --ignore-missing: a missing object is fine. Options may stand anywhere
# among the arguments, as with every helper here.
#
#   hook::status flights.com/v1/FlightTicket "$ns" "$name" '{"phase":"Booked"}' observedGeneration
hook::status() {
  _hook::options hook::status "--ignore-missing" "--observed-generation" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  local ignore=${_hook_opt[--ignore-missing]:-false} generation=${_hook_opt[--observed-generation]:-}
  _hook::usage 4 $# "hook::status [--ignore-missing] [--observed-generation N] KIND NAMESPACE NAME STATUS_JSON [observedGeneration]" || return 1
  if [[ -n "$generation" && ! "$generation" =~ ^[0-9]+$ ]]; then
    hook::log error "hook::status: --observed-generation takes the generation as a whole number, not \"$generation\""
    return 1
  fi
  local observed=false
  case "${5:-}" in
    "" | false) ;;
    observedGeneration | true) observed=true ;;
    *)
      hook::log error "hook::status: the 5th argument is \"observedGeneration\", \"true\" or \"false\", not \"$5\""
      return 1
      ;;
  esac
  _hook::op hook::status --arg kind "$1" --arg ns "$2" --arg name "$3" --slurpfile s <(printf '%s' "$4") \
    --argjson observed "$observed" --argjson ignore "$ignore" --arg generation "$generation" '
    {operation: "Status"} + target($kind; $ns; $name)
    + {status: (one("STATUS"; $s) + flag($generation != ""; {observedGeneration: ($generation | tonumber)}))}
    + flag($observed; {observedGeneration: true})
    + flag($ignore; {ignoreMissingObject: true})'
}

# hook::create OBJECT
# hook::create_if_not_exists OBJECT
# hook::create_or_update OBJECT
#
# Create (fails if the object exists), CreateIfNotExists (an existing object
# is left as it is: the way to generate something once, like a password) and
# CreateOrUpdate (replaces the existing object, keeping its status).
hook::create() { _hook::create hook::create Create "$@"; }
hook::create_if_not_exists() { _hook::create hook::create_if_not_exists CreateIfNotExists "$@"; }
hook::create_or_update() { _hook::create hook::create_or_update CreateOrUpdate "$@"; }

_hook::create() {
  local fn=$1 op=$2
  shift 2
  _hook::options "$fn" "" "" "$@" || return 1
  set -- "$fn" "$op" ${_hook_args[@]+"${_hook_args[@]}"}
  _hook::usage 3 $# "$1 OBJECT_JSON" || return 1
  _hook::op "$1" --arg op "$2" --slurpfile o <(printf '%s' "$3") '{operation: $op, object: one("OBJECT"; $o)}'
}

# _hook::patch_subresource FN sets _hook_sub from --subresource NAME, or
# "status" for --status; both at once must agree.
_hook::patch_subresource() {
  _hook_sub=${_hook_opt[--subresource]:-}
  if [[ -n "${_hook_opt[--status]:-}" ]]; then
    if [[ -n "$_hook_sub" && "$_hook_sub" != status ]]; then
      hook::log error "$1: --status and --subresource $_hook_sub name two subresources; give one"
      return 1
    fi
    _hook_sub=status
  fi
}
declare -g _hook_sub=""

# hook::merge_patch [--ignore-missing] [--status | --subresource NAME] KIND NAMESPACE NAME PATCH
#
# MergePatch: applies the JSON merge patch PATCH (null deletes a key).
# --status patches the status subresource, --subresource NAME another one
# (scale); --ignore-missing makes a missing object a success.
hook::merge_patch() {
  _hook::options hook::merge_patch "--ignore-missing --status" "--subresource" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  _hook::patch_subresource hook::merge_patch || return 1
  local ignore=${_hook_opt[--ignore-missing]:-false}
  _hook::usage 4 $# "hook::merge_patch [--ignore-missing] [--status | --subresource NAME] KIND NAMESPACE NAME PATCH_JSON" || return 1
  _hook::op hook::merge_patch --arg kind "$1" --arg ns "$2" --arg name "$3" --slurpfile patch <(printf '%s' "$4") \
    --argjson ignore "$ignore" --arg sub "$_hook_sub" '
    {operation: "MergePatch"} + target($kind; $ns; $name)
    + subresource($sub)
    + {mergePatch: one("PATCH"; $patch)}
    + flag($ignore; {ignoreMissingObject: true})'
}

# hook::json_patch [--ignore-missing] [--status | --subresource NAME] KIND NAMESPACE NAME PATCH
#
# JSONPatch: applies PATCH, a JSON array of RFC 6902 operations
# ('[{"op": "remove", "path": "/data/a"}]'). Options as for
# hook::merge_patch.
hook::json_patch() {
  _hook::options hook::json_patch "--ignore-missing --status" "--subresource" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  _hook::patch_subresource hook::json_patch || return 1
  local ignore=${_hook_opt[--ignore-missing]:-false}
  _hook::usage 4 $# "hook::json_patch [--ignore-missing] [--status | --subresource NAME] KIND NAMESPACE NAME PATCH_JSON_ARRAY" || return 1
  _hook::op hook::json_patch --arg kind "$1" --arg ns "$2" --arg name "$3" --slurpfile patch <(printf '%s' "$4") \
    --argjson ignore "$ignore" --arg sub "$_hook_sub" '
    if ($patch | length) != 1 or ($patch[0] | type) != "array" then error("PATCH must be one JSON array of operations") else . end
    | {operation: "JSONPatch"} + target($kind; $ns; $name)
    + subresource($sub)
    + {jsonPatch: $patch[0]}
    + flag($ignore; {ignoreMissingObject: true})'
}

# hook::jq_patch [--ignore-missing] [--status | --subresource NAME] KIND NAMESPACE NAME FILTER
#
# JQPatch: the runtime runs the jq FILTER on the current object and writes
# its output back (retrying on conflicts). FILTER returns the whole object:
# '.spec.replicas = 3'. Options as for hook::merge_patch.
hook::jq_patch() {
  _hook::options hook::jq_patch "--ignore-missing --status" "--subresource" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  _hook::patch_subresource hook::jq_patch || return 1
  local ignore=${_hook_opt[--ignore-missing]:-false}
  _hook::usage 4 $# "hook::jq_patch [--ignore-missing] [--status | --subresource NAME] KIND NAMESPACE NAME FILTER" || return 1
  _hook::op hook::jq_patch --arg kind "$1" --arg ns "$2" --arg name "$3" --arg filter "$4" --argjson ignore "$ignore" \
    --arg sub "$_hook_sub" '
    {operation: "JQPatch"} + target($kind; $ns; $name) + subresource($sub) + {jqFilter: $filter}
    + flag($ignore; {ignoreMissingObject: true})'
}

# hook::delete [--background | --orphan] KIND NAMESPACE NAME
#
# Deletes the object; a missing object is a success. Without an option it is
# Delete: dependents first (foreground), and the runtime waits until the
# object is gone. --background (DeleteInBackground) returns at once and
# leaves the dependents to the garbage collector; --orphan
# (DeleteNonCascading) keeps the dependents.
hook::delete() {
  _hook::options hook::delete "--background --orphan" "" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  local op=Delete
  if [[ -n "${_hook_opt[--background]:-}" && -n "${_hook_opt[--orphan]:-}" ]]; then
    hook::log error "hook::delete: --background and --orphan exclude each other; give one"
    return 1
  fi
  [[ -z "${_hook_opt[--background]:-}" ]] || op=DeleteInBackground
  [[ -z "${_hook_opt[--orphan]:-}" ]] || op=DeleteNonCascading
  _hook::usage 3 $# "hook::delete [--background | --orphan] KIND NAMESPACE NAME" || return 1
  _hook::op hook::delete --arg op "$op" --arg kind "$1" --arg ns "$2" --arg name "$3" \
    '{operation: $op} + target($kind; $ns; $name)'
}

# hook::requeue [--kind KIND] NAMESPACE NAME AFTER [BINDING]
#
# Requeue (extension): asks for a run for the object NAMESPACE/NAME of the
# hook's kubernetes binding BINDING (needed when the hook has more than one)
# after AFTER (a duration: 30s, 5m). --kind KIND (as the other functions
# take it, apiVersion in front or not) says which binding's kind the object
# is, instead of BINDING. The run gets an Event context with watchEvent
# "Requeue" and the object as it is then; for an object being deleted, whose
# Finalize run asked for it, "Finalize" (the finalizer is kept meanwhile).
hook::requeue() {
  _hook::options hook::requeue "" "--kind" "$@" || return 1
  set -- ${_hook_args[@]+"${_hook_args[@]}"}
  _hook::usage 3 $# "hook::requeue [--kind KIND] NAMESPACE NAME AFTER [BINDING]" || return 1
  _hook::op hook::requeue --arg ns "$1" --arg name "$2" --arg after "$3" --arg binding "${4:-}" \
    --arg kind "${_hook_opt[--kind]:-}" '
    if $name == "" or $after == "" then error("NAME and AFTER must not be empty") else . end
    | {operation: "Requeue"}
    + (if $kind != "" then target($kind; ""; $name) | del(.name) else {} end)
    + flag($ns != ""; {namespace: $ns})
    + {name: $name, after: $after}
    + flag($binding != ""; {binding: $binding})'
}
