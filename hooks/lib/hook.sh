# shellcheck shell=bash disable=SC2016 # jq programs in single quotes use jq $variables
# hook.sh: helpers for hook-operator hooks written in bash.
#
# Source it at the top of a hook, after `set -euo pipefail`:
#
#   source "$(dirname "$0")/../lib/hook.sh"
#
#   hook::config "$@" <<'CONFIG'
#   configVersion: v1
#   kubernetes:
#   - {name: tickets, apiVersion: flights.com/v1, kind: FlightTicket}
#   CONFIG
#
#   hook::objects | while read -r item; do
#     ...
#   done
#
# The helpers need bash and jq, nothing else. They are split by topic:
#
#   log.sh         hook::log, hook::die           structured log lines
#   contexts.sh    hook::contexts, hook::objects,  reading $BINDING_CONTEXT_PATH
#                  hook::latest_objects, hook::snapshot, hook::snapshots,
#                  hook::snapshot_object, hook::get, hook::read
#   operations.sh  hook::apply, hook::status, ...  writing $KUBERNETES_PATCH_PATH
#   resident.sh    hook::resident HANDLER          one run per call, or a loop
#                                                  of runs (settings.resident)
#   trace.sh       hook::span, hook::curl,         the hook's own spans in the
#                  hook::traceparent               run's trace (tracing on)
#
# Every function checks its arguments and returns non-zero with a log line
# naming the problem, so under `set -e` a mistake fails the run (and the
# runtime retries it) instead of writing a broken operation. The library
# sets no shell options itself; the `hooks/` folder skips folders named lib,
# so nothing here is taken for a hook.

# bash 4.3 or later: associative arrays (4.0), declare -g (4.2) and
# assignment to a negative array index (4.3). macOS ships bash 3.2; a newer
# bash comes from Homebrew or MacPorts.
if ((BASH_VERSINFO[0] < 4 || (BASH_VERSINFO[0] == 4 && BASH_VERSINFO[1] < 3))); then
  printf '{"level":"error","msg":"hook.sh: the helpers need bash 4.3 or later, this is bash %s; install a newer bash and start the hook with it (#!/usr/bin/env bash finds the first in PATH)"}\n' "$BASH_VERSION" >&2
  exit 1
fi

if ! command -v jq >/dev/null 2>&1; then
  echo '{"level":"error","msg":"hook.sh: jq is required but not found in PATH"}' >&2
  exit 1
fi

_hook_lib_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=log.sh
source "$_hook_lib_dir/log.sh"
# shellcheck source=contexts.sh
source "$_hook_lib_dir/contexts.sh"
# shellcheck source=operations.sh
source "$_hook_lib_dir/operations.sh"
# shellcheck source=resident.sh
source "$_hook_lib_dir/resident.sh"
# shellcheck source=trace.sh
source "$_hook_lib_dir/trace.sh"
unset _hook_lib_dir

# hook::config "$@" <<'CONFIG' ... CONFIG
#
# Answers the runtime's `--config` call: when the hook's first argument is
# --config, prints the configuration given on stdin (a heredoc) and exits 0.
# Otherwise it returns at once without reading stdin, and the hook goes on
# to handle its binding contexts.
hook::config() {
  if [[ "${1:-}" == "--config" ]]; then
    cat
    exit 0
  fi
}
