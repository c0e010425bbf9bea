# shellcheck shell=bash disable=SC2016 # jq programs in single quotes use jq $variables
# log.sh: structured log lines. Sourced by hook.sh.
#
# The runtime copies every line a hook prints on stdout or stderr into the
# operator's log, labelled with hook, binding and queue. A line that is a
# JSON object is merged into the log record: "msg" becomes the message,
# "level" the level (debug, info, warning, error), every other key a field.

# hook::log LEVEL MESSAGE [KEY=VALUE ...]
#
# Writes one JSON log line to stderr: {"level": LEVEL, "msg": MESSAGE, KEY:
# VALUE, ...}. Values are strings. LEVEL is debug, info, warn (or warning)
# or error. Arguments without "=" are ignored.
#
#   hook::log info "booking written" ticket="$ns/$name" ref="$ref"
hook::log() {
  if (($# < 2)); then
    echo '{"level":"error","msg":"hook::log: usage: hook::log LEVEL MESSAGE [KEY=VALUE ...]"}' >&2
    return 1
  fi
  local level=$1 msg=$2
  shift 2
  jq -nc --arg level "$level" --arg msg "$msg" '
    {level: $level, msg: $msg}
    + ([$ARGS.positional[] | capture("^(?<k>[^=]+)=(?<v>.*)$"; "s") | {(.k): .v}] | add // {})
  ' --args "$@" >&2
}

# hook::die MESSAGE [KEY=VALUE ...]
#
# Logs MESSAGE at level error and exits 1, failing the run. The runtime
# quotes the end of stderr in the run's error, so the message is seen there
# too.
hook::die() {
  hook::log error "${1:-hook::die called without a message}" "${@:2}"
  exit 1
}
