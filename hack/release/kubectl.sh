#!/usr/bin/env bash
# Builds the pinned kubectl for linux/ARCH (hack/tools/kubectl, at the
# Kubernetes version the local cluster runs: hack/cluster/versions.env),
# stamped with that version as Kubernetes' release build stamps it, and
# prints its path. Cached per user, version and architecture: its first
# build takes minutes. files.sh puts it in the image; the Dockerfile runs
# this alone first, so that its layer depends on the pin alone.
#
# Usage: kubectl.sh ARCH     (amd64 or arm64)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
arch=${1:-}
case "$arch" in amd64 | arm64) ;; *) echo "kubectl.sh: ARCH $arch: give amd64 or arm64" >&2; exit 2 ;; esac
# files.sh's settings, so that both build the same bytes.
export CGO_ENABLED=0 GOOS=linux GOARCH=$arch GOFLAGS="-trimpath -buildvcs=false"
log() { printf '%s kubectl.sh: %s\n' "$(date +%T)" "$*" >&2; }

. "$root/hack/cluster/versions.env"
cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}/release
kubectl="$cache/kubectl-$KUBE_VERSION-linux-$arch"
mkdir -p "$cache"
# Concurrent callers wait for one build.
exec 8>"$kubectl.lock"
flock 8
if [[ ! -f "$kubectl" ]]; then
  log "building kubectl $KUBE_VERSION for linux/$arch (once; minutes unless make cluster compiled its packages)"
  minor=${KUBE_VERSION#v1.} minor=${minor%%.*}
  (cd "$root/hack/tools/kubectl" && go build -o "$kubectl.tmp" -ldflags "-s -w \
    -X k8s.io/component-base/version.gitVersion=$KUBE_VERSION \
    -X k8s.io/component-base/version.gitMajor=1 \
    -X k8s.io/component-base/version.gitMinor=$minor \
    -X k8s.io/component-base/version.gitTreeState=clean \
    -X k8s.io/client-go/pkg/version.gitVersion=$KUBE_VERSION \
    -X k8s.io/client-go/pkg/version.gitMajor=1 \
    -X k8s.io/client-go/pkg/version.gitMinor=$minor" \
    k8s.io/kubernetes/cmd/kubectl)
  mv "$kubectl.tmp" "$kubectl"
fi
echo "$kubectl"
