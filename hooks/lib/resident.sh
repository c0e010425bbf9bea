# shellcheck shell=bash
# resident.sh: the resident loop (settings.resident: true). Sourced by hook.sh.
#
# A resident hook's process stays: the runtime starts it once with
# HOOK_OPERATOR_RESIDENT=1 and sends each run as one line on the file
# descriptor $HOOK_OPERATOR_REQUEST_FD:
#
#   {"id":"7","env":{"BINDING_CONTEXT_PATH":"/tmp/...","KUBERNETES_PATCH_PATH":"/tmp/...",...}}
#
# and reads the end of the run, {"id":"7","exitCode":0}, from
# $HOOK_OPERATOR_REPLY_FD. The paths hold no quotes, backslashes or
# newlines, so a regular expression reads the line without jq; a value with
# JSON escapes (a TRACESTATE may have some) is decoded by jq.

# hook::resident HANDLER
#
# Runs the function HANDLER once per run, and never returns. Started one-shot
# (no HOOK_OPERATOR_RESIDENT=1: shell-operator, or settings.resident unset),
# it calls HANDLER once and exits with its status, as if the handler's body
# stood at the end of the script. Started resident, for each request it
# exports the run's variables, calls HANDLER in a subshell, and replies with
# the subshell's exit status; when the requests end it exits 0.
#
# Each run starts from the state the script had when it called
# hook::resident: variables, the working directory, traps and shell options
# a run changes are gone at its end (the subshell), and `exit` or
# hook::die ends that run only. Files and background processes stay. The
# trace variables (TRACEPARENT, TRACESTATE, TRACE_SPANS_PATH) are those of
# the request, and unset when it has none: a run never joins another's
# trace.
# Define functions and read what every run needs once, before the call.
#
#   handle() {
#     hook::objects | while read -r item; do ...; done
#   }
#   hook::resident handle
hook::resident() {
  if (($# != 1)) || ! declare -F -- "$1" >/dev/null; then
    hook::log error "hook::resident: usage: hook::resident HANDLER, where HANDLER is a function defined before the call" handler="${1:-}"
    exit 2
  fi
  local handler=$1
  if [[ "${HOOK_OPERATOR_RESIDENT:-}" != 1 ]]; then
    "$handler"
    exit
  fi
  local request_fd=${HOOK_OPERATOR_REQUEST_FD:-} reply_fd=${HOOK_OPERATOR_REPLY_FD:-}
  if ! [[ "$request_fd" =~ ^[0-9]+$ && "$reply_fd" =~ ^[0-9]+$ ]]; then
    hook::log error "hook::resident: HOOK_OPERATOR_REQUEST_FD and HOOK_OPERATOR_REPLY_FD must name file descriptors; hook-operator sets them when it starts a resident hook" \
      HOOK_OPERATOR_REQUEST_FD="$request_fd" HOOK_OPERATOR_REPLY_FD="$reply_fd"
    exit 2
  fi
  local errexit='' line status number=0
  [[ $- == *e* ]] && errexit=1
  while IFS= read -r -u "$request_fd" line || [[ -n "$line" ]]; do
    number=$((number + 1))
    if ! _hook::parse_request "$line"; then
      hook::log error "hook::resident: request $number is not {\"id\":\"DIGITS\",\"env\":{\"NAME\":\"PATH\",...}}" request="$line"
      exit 2
    fi
    set +e
    (
      # The handler's programs must not hold the pipes open.
      exec {request_fd}<&- {reply_fd}>&-
      [[ -n "$errexit" ]] && set -e
      local i
      unset TRACEPARENT TRACESTATE TRACE_SPANS_PATH HOOK_SPAN_TRACEPARENT
      # Empty arrays are "unbound" to bash 4.3 under set -u.
      for i in ${_hook_request_names[@]+"${!_hook_request_names[@]}"}; do
        export "${_hook_request_names[i]}=${_hook_request_values[i]}"
      done
      "$handler"
    )
    status=$?
    [[ -n "$errexit" ]] && set -e
    printf '{"id":"%s","exitCode":%d}\n' "$_hook_request_id" "$status" >&"$reply_fd" || exit 1
    line=''
  done
  exit 0
}

# _hook::parse_request LINE
#
# Sets _hook_request_id and the parallel arrays _hook_request_names and
# _hook_request_values from a request line; returns 1 when LINE is not one.
_hook::parse_request() {
  local request_re='^\{"id":"([0-9]+)","env":\{(.*)\}\}$'
  local pair_re='^"([A-Za-z_][A-Za-z0-9_]*)":"(([^"\\]|\\.)*)"(,(.*))?$'
  [[ "$1" =~ $request_re ]] || return 1
  _hook_request_id=${BASH_REMATCH[1]}
  _hook_request_names=()
  _hook_request_values=()
  local rest=${BASH_REMATCH[2]}
  while [[ -n "$rest" ]]; do
    [[ "$rest" =~ $pair_re ]] || return 1
    local name=${BASH_REMATCH[1]} value=${BASH_REMATCH[2]} comma=${BASH_REMATCH[4]}
    rest=${BASH_REMATCH[5]}
    if [[ "$value" == *\\* ]]; then
      value=$(jq -nr --argjson v "\"$value\"" '$v') || return 1
    fi
    _hook_request_names+=("$name")
    _hook_request_values+=("$value")
    # A trailing comma leaves the comma and the rest empty.
    [[ -n "$comma" && -z "$rest" ]] && return 1
  done
  return 0
}
