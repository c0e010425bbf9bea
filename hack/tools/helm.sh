#!/usr/bin/env bash
# Builds the helm CLI pinned by hack/tools/helm/go.mod from the Go module
# proxy, once per user and version, and prints the path of the binary. A
# second call with the same version only prints the path. The first build
# takes a few minutes; later ones reuse the Go module and build caches.
#
# Cache: ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/bin/helm-<version>/helm
# Usage: helm.sh [--path]   (--path prints where the binary goes, building nothing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/helm"

# The pinned version is the one place it is written: the tool module's go.mod.
version=$(awk '$1 == "helm.sh/helm/v3" { print $2; exit }' "$module/go.mod")
if [[ -z "$version" ]]; then
  echo "helm.sh: $module/go.mod does not require helm.sh/helm/v3; run: (cd $module && go get -tool helm.sh/helm/v3/cmd/helm@VERSION)" >&2
  exit 1
fi

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
out="$cache/bin/helm-$version"

if [[ "${1:-}" == "--path" ]]; then
  echo "$out/helm"
  exit 0
fi

if [[ -f "$out/.complete" ]]; then
  echo "$out/helm"
  exit 0
fi

# Concurrent callers (parallel test packages) wait for one build.
mkdir -p "$cache/bin"
exec 9>"$cache/bin/.helm-$version.lock"
flock 9
if [[ -f "$out/.complete" ]]; then
  echo "$out/helm"
  exit 0
fi

tmp=$(mktemp -d "$cache/bin/.build-helm-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log() { printf '%s helm.sh: %s\n' "$(date +%T)" "$*" >&2; }

# Stamp the binary as helm's own release build does (its Makefile): the
# version, and the Kubernetes version its client libraries speak, which
# `helm template` and `helm lint` assume when no cluster is asked.
kube=$(awk '$1 == "k8s.io/client-go" { print $2; exit }' "$module/go.mod")
kube=${kube#v0.}
ldflags="-s -w \
 -X helm.sh/helm/v3/internal/version.version=$version \
 -X helm.sh/helm/v3/internal/version.metadata= \
 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMajor=1 \
 -X helm.sh/helm/v3/pkg/lint/rules.k8sVersionMinor=${kube%%.*} \
 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMajor=1 \
 -X helm.sh/helm/v3/pkg/chartutil.k8sVersionMinor=${kube%%.*}"

log "building helm $version"
(cd "$module" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath" \
  go build -ldflags "$ldflags" -o "$tmp/helm" helm.sh/helm/v3/cmd/helm)

# The whole output is read before it is matched (see shell-operator.sh).
reported=$("$tmp/helm" version --short)
[[ "$reported" == *"$version"* ]] || {
  echo "helm.sh: the built helm does not report $version: $reported" >&2
  exit 1
}
touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
log "helm ready"
echo "$out/helm"
