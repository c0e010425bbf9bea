#!/usr/bin/env bash
# Stops and removes the local cluster started by up.sh. The built binaries
# stay cached.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
state="$cache/cluster"
export KWOK_WORKDIR="$state/kwok"
[[ -d "$state" ]] || exit 0
exec 9>"$state/.lock"
flock 9
kwokctl="$("$here/build.sh" --dir)/kwokctl"
if [[ -d "$KWOK_WORKDIR/clusters/hook-operator" && -x "$kwokctl" ]]; then
  "$kwokctl" delete cluster --name hook-operator --kubeconfig "$state/kubeconfig" >&2 9>&-
fi
rm -rf "$KWOK_WORKDIR" "$state/kubeconfig"
echo "cluster removed" >&2
