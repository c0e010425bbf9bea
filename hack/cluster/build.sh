#!/usr/bin/env bash
# Builds the local cluster's binaries (etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kwok, kwokctl) from the Go module
# proxy, once per user and pinned version set, and prints the folder holding
# them. A second call with the same versions only prints the folder.
#
# Cache: ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/bin/<versions>/
# Usage: build.sh [--dir]
#
# HOOK_OPERATOR_KUBE_VERSION=v1.X.Y builds another Kubernetes release than the
# pinned one (make test-matrix), from its wrapper module in matrix/v1.X.Y/
# (written by kube-module.sh); etcd and kwok stay as versions.env pins them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"
kube_module=kubernetes
if [[ -n "${HOOK_OPERATOR_KUBE_VERSION:-}" && "$HOOK_OPERATOR_KUBE_VERSION" != "$KUBE_VERSION" ]]; then
  KUBE_VERSION=$HOOK_OPERATOR_KUBE_VERSION
  kube_module=matrix/$KUBE_VERSION
  [[ -f "$here/$kube_module/go.mod" ]] || {
    echo "build.sh: no wrapper module for Kubernetes ${KUBE_VERSION@Q} (HOOK_OPERATOR_KUBE_VERSION): $here/$kube_module/go.mod is missing; write it with hack/cluster/kube-module.sh $KUBE_VERSION, or pick one of: $(cd "$here/matrix" && echo v*)" >&2
    exit 2
  }
fi

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
key="k8s-${KUBE_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}"
out="$cache/bin/$key"

# --dir prints the cache folder for the pinned versions without building.
if [[ "${1:-}" == "--dir" ]]; then
  echo "$out"
  exit 0
fi

if [[ -f "$out/.complete" ]]; then
  echo "$out"
  exit 0
fi

# The wrapper modules must pin what versions.env says, or the cache key lies.
check_pin() { # module-dir module version
  if ! grep -qE "^(require )?[[:space:]]*$2 $3( // indirect)?\$" "$here/$1/go.mod"; then
    echo "build.sh: $here/$1/go.mod does not require $2 $3 (versions.env says so); update one of them" >&2
    exit 1
  fi
}
check_pin "$kube_module" k8s.io/kubernetes "$KUBE_VERSION"
check_pin etcd go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
check_pin kwok sigs.k8s.io/kwok "$KWOK_VERSION"

mkdir -p "$cache/bin"
tmp=$(mktemp -d "$cache/bin/.build-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# Static, as Kubernetes' own release builds are; and with kubectl's flags
# (the image's and make release's, hack/release/files.sh): the two share
# most packages (client-go, api, apimachinery), which are then compiled once.
export GOFLAGS="-mod=readonly -trimpath" CGO_ENABLED=0
log() { printf '%s build.sh: %s\n' "$(date +%T)" "$*" >&2; }

kube_minor=${KUBE_VERSION#v1.}
kube_minor=${kube_minor%%.*}
kube_ldflags="-s -w \
 -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} \
 -X k8s.io/component-base/version.gitMajor=1 \
 -X k8s.io/component-base/version.gitMinor=${kube_minor} \
 -X k8s.io/component-base/version.gitTreeState=clean \
 -X k8s.io/client-go/pkg/version.gitVersion=${KUBE_VERSION} \
 -X k8s.io/client-go/pkg/version.gitMajor=1 \
 -X k8s.io/client-go/pkg/version.gitMinor=${kube_minor}"

log "building etcd ${ETCD_VERSION}"
(cd "$here/etcd" && go build -ldflags "-s -w" -o "$tmp/etcd" go.etcd.io/etcd/server/v3)

log "building kwok and kwokctl ${KWOK_VERSION} (default Kubernetes ${KUBE_VERSION})"
kwok_ldflags="-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v} -X sigs.k8s.io/kwok/pkg/consts.KubeVersion=${KUBE_VERSION#v}"
(cd "$here/kwok" && go build -ldflags "$kwok_ldflags" -o "$tmp/" sigs.k8s.io/kwok/cmd/kwok sigs.k8s.io/kwok/cmd/kwokctl)

# One go build for the three: each links while the others' own packages
# still compile, instead of the cores waiting on one link at a time.
log "building kube-apiserver, kube-controller-manager and kube-scheduler ${KUBE_VERSION}"
(cd "$here/$kube_module" && go build -ldflags "$kube_ldflags" -o "$tmp/" \
  k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kube-scheduler)

# The whole output is read before it is matched: under pipefail,
# `... | grep -q` fails when grep exits before the writer is done.
reported=$("$tmp/kube-apiserver" --version)
[[ "$reported" == *"$KUBE_VERSION"* ]] || {
  echo "build.sh: kube-apiserver does not report $KUBE_VERSION: $reported" >&2
  exit 1
}
touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
log "binaries ready"
echo "$out"
