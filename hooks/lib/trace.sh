# shellcheck shell=bash disable=SC2016 # jq programs in single quotes use jq $variables
# trace.sh: a hook's own spans in the run's trace. Sourced by hook.sh.
#
# When the operator traces runs (docs/running.md, "Traces"), each run gets
# TRACEPARENT, the W3C traceparent of the run's span, and TRACE_SPANS_PATH,
# a file for spans of the hook's own, one OTLP/JSON line each. hook::span
# records such a span around a command; hook::curl and hook::traceparent
# pass the trace on to what the hook calls. Without those variables
# (tracing off, or shell-operator) hook::span only runs its command and
# hook::curl is curl.
#
# While a hook::span command runs, HOOK_SPAN_TRACEPARENT is exported with
# the traceparent of that span: spans started inside it, in functions or in
# programs it starts (another hook.sh script), are its children.

# hook::traceparent
#
# Prints the traceparent to pass on: that of the innermost hook::span
# running, else the run's ($TRACEPARENT). Prints nothing when tracing is
# off.
#
#   wget --header "traceparent: $(hook::traceparent)" ...
hook::traceparent() {
  if _hook::current_traceparent; then
    printf '%s\n' "$_hook_traceparent"
  fi
}

# hook::curl ARGS...
#
# Runs curl ARGS..., with the headers traceparent (hook::traceparent) and
# tracestate ($TRACESTATE, when set) added when tracing is on, so that the
# service called joins the run's trace. Its status is curl's.
#
#   hook::curl -fsS -X POST --data "$body" "$billing_url"
hook::curl() {
  local -a headers=()
  if _hook::current_traceparent; then
    headers=(-H "traceparent: $_hook_traceparent")
    if [[ -n "${TRACESTATE:-}" ]]; then
      headers+=(-H "tracestate: $TRACESTATE")
    fi
  fi
  curl ${headers[@]+"${headers[@]}"} "$@"
}

# hook::span NAME [KEY=VALUE ...] -- COMMAND [ARG ...]
#
# Runs COMMAND as a span named NAME of the run's trace (a child of the
# innermost hook::span running, else of the run's span), with the
# attributes KEY=VALUE (strings, at most 64), and returns COMMAND's
# status. A failed COMMAND marks the span failed, with the message "exit N".
#
# COMMAND runs in a subshell, as in $(...), whether tracing is on or off:
# set -e applies inside it as outside, and what it changes in the shell
# (variables, the working directory) is gone when it returns. Print what
# the rest of the hook needs and read it:
#
#   hook::span "book flights" ticket="$ns/$name" -- book "$item"
#   quote=$(hook::span "get quote" -- hook::curl -fsS "$url")
#
# The span is written to $TRACE_SPANS_PATH when COMMAND returns (nothing
# is written with tracing off, or once the run has 1,000 spans or 1 MiB).
hook::span() {
  local usage='hook::span: usage: hook::span NAME [KEY=VALUE ...] -- COMMAND [ARG ...]'
  if (($# < 3)) || [[ -z "$1" || "$1" == -- ]]; then
    hook::log error "$usage" name="${1:-}"
    return 2
  fi
  local name=$1
  shift
  local -a attrs=()
  while (($#)) && [[ "$1" != -- ]]; do
    if ! [[ "$1" =~ ^[^=]+= ]]; then
      hook::log error "$usage: attributes are KEY=VALUE" span="$name" argument="$1"
      return 2
    fi
    attrs+=("$1")
    shift
  done
  if (($# < 2)); then
    hook::log error "$usage: -- and a command follow the attributes" span="$name"
    return 2
  fi
  shift
  if ((${#attrs[@]} > 64)); then
    hook::log error "hook::span: at most 64 attributes a span" span="$name" attributes="${#attrs[@]}"
    return 2
  fi

  local errexit='' status=0 parent='' span_id='' start=''
  if [[ $- == *e* ]]; then errexit=1; fi
  if [[ -n "${TRACE_SPANS_PATH:-}" ]] && _hook::current_traceparent; then
    parent=$_hook_traceparent
    span_id=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n') || span_id=''
    if ! [[ "$span_id" =~ ^[0-9a-f]{16}$ && "$span_id" != 0000000000000000 ]]; then
      span_id=''
    fi
  fi
  if [[ -n "$span_id" ]]; then
    local -x HOOK_SPAN_TRACEPARENT="${parent:0:36}$span_id${parent:52}"
    _hook::now
    start=$_hook_now
  fi
  # The subshell keeps set -e working inside COMMAND: in `COMMAND || ...`
  # bash would ignore it there.
  set +e
  (
    if [[ -n "$errexit" ]]; then set -e; fi
    "$@"
  )
  status=$?
  if [[ -n "$span_id" ]]; then
    _hook::now
    _hook::record_span "$name" "${parent:3:32}" "$span_id" "${parent:36:16}" "$start" "$_hook_now" "$status" ${attrs[@]+"${attrs[@]}"}
  fi
  if [[ -n "$errexit" ]]; then set -e; fi
  return "$status"
}

# _hook::current_traceparent
#
# Sets _hook_traceparent to the traceparent to pass on (as
# hook::traceparent prints it); returns 1 when tracing is off, or
# $TRACEPARENT is not one.
_hook::current_traceparent() {
  local re='^00-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$' trace
  _hook_traceparent=''
  [[ "${TRACEPARENT:-}" =~ $re ]] || return 1
  trace=${BASH_REMATCH[1]}
  # A span of this run's trace only: not one inherited from elsewhere.
  if [[ "${HOOK_SPAN_TRACEPARENT:-}" =~ $re && "${BASH_REMATCH[1]}" == "$trace" ]]; then
    _hook_traceparent=$HOOK_SPAN_TRACEPARENT
  else
    _hook_traceparent=$TRACEPARENT
  fi
}

# _hook::now
#
# Sets _hook_now to the time in nanoseconds since 1970: from bash 5's
# EPOCHREALTIME (microseconds, without starting a process), else from date.
_hook::now() {
  if [[ -n "${EPOCHREALTIME:-}" ]]; then
    _hook_now="${EPOCHREALTIME//[!0-9]/}000" # whatever the locale's decimal point
    return
  fi
  _hook_now=$(date +%s%N)
  if ! [[ "$_hook_now" =~ ^[0-9]+$ ]]; then # a date without %N (BSD, macOS)
    _hook_now="$(date +%s)000000000"
  fi
}

# _hook::record_span NAME TRACE_ID SPAN_ID PARENT_ID START END STATUS [KEY=VALUE ...]
#
# Appends the span's line to $TRACE_SPANS_PATH, unless the file already
# holds 1,000 lines or the line would take it past 1 MiB: the operator
# drops every span of a run beyond the limits. Never fails.
_hook::record_span() {
  local line counts count=0 size=0
  if ((${6} < ${5})); then set -- "$1" "$2" "$3" "$4" "$5" "$5" "${@:7}"; fi # the clock went back
  line=$(jq -nc --arg name "$1" --arg traceId "$2" --arg spanId "$3" --arg parentSpanId "$4" \
    --arg startTime "$5" --arg endTime "$6" --argjson status "$7" '
    def width: if . < 128 then 1 elif . < 2048 then 2 elif . < 65536 then 3 else 4 end;
    # At most $n bytes of UTF-8, cut between characters.
    def cut($n):
      if length * 4 <= $n then .
      else explode | reduce .[] as $c ({s: [], b: 0, full: false};
        ($c | width) as $w
        | if .full or .b + $w > $n then .full = true else .s += [$c] | .b += $w end)
      | .s | implode end;
    {traceId: $traceId, spanId: $spanId, parentSpanId: $parentSpanId, name: ($name | cut(256)),
     kind: 1, startTimeUnixNano: $startTime, endTimeUnixNano: $endTime}
    + ([$ARGS.positional[] | capture("^(?<k>[^=]+)=(?<v>.*)$"; "s")
        | {key: (.k | cut(128)), value: {stringValue: (.v | cut(1024))}}]
       | if length > 0 then {attributes: .} else {} end)
    + (if $status != 0 then {status: {code: 2, message: "exit \($status)"}} else {} end)
  ' --args "${@:8}") || return 0
  if [[ -f "$TRACE_SPANS_PATH" ]]; then
    counts=$(wc -lc <"$TRACE_SPANS_PATH") || return 0
    read -r count size <<<"$counts"
  fi
  local LC_ALL=C # ${#line} in bytes
  if ((count >= 1000 || size + ${#line} + 1 > 1048576)); then
    return 0
  fi
  printf '%s\n' "$line" >>"$TRACE_SPANS_PATH" 2>/dev/null || true
}
