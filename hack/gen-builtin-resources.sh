#!/usr/bin/env bash
# Regenerates internal/kube/builtin_resources.json, the built-in API resources
# that offline commands (replay, hook tests) resolve kinds with, from the
# local cluster's discovery: /api/v1, then every version of every group /apis
# lists, in the server's order (it decides which resource wins an ambiguous
# name such as "events"), each list's resources sorted by name.
#
# Only Kubernetes' own groups are kept (no dot, or ending in .k8s.io), so
# CRDs and aggregated APIs that tests installed do not leak into the file.
#
# Usage: hack/gen-builtin-resources.sh [output]
#   KUBECONFIG set: use that cluster (its minor version must match
#   hack/cluster/versions.env); unset: start or reuse the local cluster.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${1:-$root/internal/kube/builtin_resources.json}
# shellcheck source=cluster/versions.env
source "$root/hack/cluster/versions.env"

if [[ -z "${KUBECONFIG:-}" ]]; then
  KUBECONFIG=$("$root/hack/cluster/up.sh")
  export KUBECONFIG
fi
raw() { kubectl --request-timeout=10s get --raw "$1"; }

want=${KUBE_VERSION%.*}
got=$(raw /version | jq -r '.gitVersion')
if [[ "${got%.*}" != "$want" ]]; then
  echo "gen-builtin-resources: the cluster runs $got, the pinned version is $KUBE_VERSION;" \
    "point KUBECONFIG at a $want cluster, or unset it to use the local one" >&2
  exit 1
fi

# One resource as stored: the fields kind resolution needs, empty ones dropped.
resource='{name, singularName, namespaced, group, version, kind, verbs, shortNames}
  | with_entries(select(.key == "namespaced" or .key == "verbs" or (.value != null and .value != "")))'
list='{groupVersion, resources: ([.resources[] | '"$resource"'] | sort_by(.name))}'

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0
emit() {
  raw "$1" | jq "$list" >"$tmp/$(printf '%03d' "$n").json"
  n=$((n + 1))
}

emit /api/v1
for gv in $(raw /apis | jq -r '.groups[]
    | select((.name | contains(".") | not) or (.name | endswith(".k8s.io")))
    | select(.name | test("example|hook-operator|flights") | not)
    | .versions[].groupVersion'); do
  emit "/apis/$gv"
done

jq -s '.' "$tmp"/*.json >"$tmp/all"
mv "$tmp/all" "$out"
echo "gen-builtin-resources: wrote $n group versions of $got to $out" >&2
