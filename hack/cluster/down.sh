#!/usr/bin/env bash
# Stops and removes the local cluster started by up.sh. The built binaries
# stay cached. HOOK_OPERATOR_CLUSTER=NAME removes the cluster NAME instead
# (see up.sh). With --tests it removes instead every cluster the tests
# started for themselves (internal/testcluster.Owned: named hook-operator-*),
# and leaves the shared one: make test runs it when its tests end, and make
# bench before it measures, so that no idle control plane is left running.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
if [[ "${1:-}" == --tests ]]; then
  rc=0
  for dir in "$cache"/cluster-hook-operator-*/; do
    [[ -d "$dir" ]] || continue
    dir=${dir%/}
    HOOK_OPERATOR_CLUSTER=${dir#"$cache"/cluster-} "$0" || rc=$?
  done
  exit "$rc"
elif [[ $# -gt 0 ]]; then
  echo "usage: down.sh [--tests]" >&2
  exit 2
fi
name=hook-operator
state="$cache/cluster"
if [[ -n "${HOOK_OPERATOR_CLUSTER:-}" && "$HOOK_OPERATOR_CLUSTER" != hook-operator ]]; then
  name=$HOOK_OPERATOR_CLUSTER
  state="$cache/cluster-$name"
fi
export KWOK_WORKDIR="$state/kwok"
# Nothing to remove: no cluster state, or only the lock of one removed before.
[[ -d "$KWOK_WORKDIR" || -e "$state/kubeconfig" ]] || exit 0
exec 9>"$state/.lock"
flock 9
kwokctl="$("$here/build.sh" --dir)/kwokctl"
if [[ -d "$KWOK_WORKDIR/clusters/$name" && -x "$kwokctl" ]]; then
  "$kwokctl" delete cluster --name "$name" --kubeconfig "$state/kubeconfig" >&2 9>&-
fi
rm -rf "$KWOK_WORKDIR" "$state/kubeconfig"
echo "cluster removed" >&2
