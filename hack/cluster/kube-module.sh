#!/usr/bin/env bash
# Writes the wrapper module that pins the control-plane binaries of another
# Kubernetes release, for the version matrix (make test-matrix):
# hack/cluster/matrix/<version>/go.mod and go.sum. The pinned release's module
# is hack/cluster/kubernetes; build.sh picks one by HOOK_OPERATOR_KUBE_VERSION.
#
# Usage: kube-module.sh v1.31.13
#
# The result is committed, as the pinned module is: a build of one version
# then uses the same sums on every machine. Run it once per new version.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
version=${1:-}
[[ "$version" =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { echo "usage: kube-module.sh v1.MINOR.PATCH (a Kubernetes release such as v1.31.13), not ${version@Q}" >&2; exit 2; }
staging=v0.${version#v1.}
dir="$here/matrix/$version"
mkdir -p "$dir"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# k8s.io/kubernetes replaces its staging modules with local paths: its own
# go.mod names them, and each is published as k8s.io/<name> v0.MINOR.PATCH.
gomod=$(GOFLAGS=-mod=mod go mod download -json "k8s.io/kubernetes@$version" | jq -r .GoMod)
mapfile -t modules < <(sed -n 's|^[[:space:]]*\(k8s.io/[a-z0-9-]*\) => ./staging/.*|\1|p' "$gomod" | sort -u)
(( ${#modules[@]} > 0 )) || { echo "kube-module.sh: no staging modules found in k8s.io/kubernetes@$version's go.mod" >&2; exit 1; }

name="k8s-${version//./-}"
{
  echo "// Module $name pins the control-plane binaries of Kubernetes $version for"
  echo "// make test-matrix. Written by hack/cluster/kube-module.sh; kept apart from"
  echo "// the product module, which must never depend on k8s.io/kubernetes."
  echo "module github.com/hook-operator/hook-operator/hack/cluster/matrix/$name"
  echo
  echo "go 1.26.0"
  echo
  echo "require k8s.io/kubernetes $version"
  echo
  echo "// k8s.io/kubernetes replaces its staging modules with local paths; point them"
  echo "// at the published builds of the same release instead."
  echo "replace ("
  for m in "${modules[@]}"; do printf '\t%s => %s %s\n' "$m" "$m" "$staging"; done
  echo ")"
  echo
  echo "tool ("
  for c in kube-apiserver kube-controller-manager kube-scheduler; do printf '\tk8s.io/kubernetes/cmd/%s\n' "$c"; done
  echo ")"
} >"$tmp/go.mod"
(cd "$tmp" && GOFLAGS=-mod=mod go mod tidy)
cp "$tmp/go.mod" "$tmp/go.sum" "$dir/"
echo "$dir"
