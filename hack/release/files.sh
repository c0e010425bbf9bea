#!/usr/bin/env bash
# Builds the image's own files for one architecture into OUTDIR, laid out
# as in the image (its top layer: release.sh), cross-compiled on this
# machine (CGO_ENABLED=0, so no C toolchain of the target is needed):
#   usr/local/bin/hook-operator, usr/local/bin/kubectl (the pinned one),
#   examples/hooks/ (the shipped hooks, Go hooks built), hooks/lib/,
#   shell_lib.sh, frameworks/shell/ (shell-operator's shell framework) and
#   its licence in usr/share/doc/shell-operator-framework/.
# kubectl is cached per user, version and architecture (its first build
# takes minutes).
#
# Usage: files.sh ARCH VERSION COMMIT OUTDIR
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ $# -ne 4 ]]; then
  echo "usage: files.sh ARCH VERSION COMMIT OUTDIR" >&2
  exit 2
fi
arch=$1 version=$2 commit=$3 out=$4
case "$arch" in amd64 | arm64) ;; *) echo "files.sh: ARCH $arch: give amd64 or arm64" >&2; exit 2 ;; esac
export CGO_ENABLED=0 GOOS=linux GOARCH=$arch GOFLAGS="-trimpath -buildvcs=false"
log() { printf '%s files.sh: %s\n' "$(date +%T)" "$*" >&2; }

mkdir -p "$out/usr/local/bin" "$out/examples" "$out/hooks" "$out/usr/share/doc/shell-operator-framework"

# kubectl, stamped with the pinned version as Kubernetes' release build
# stamps it (deploy/'s TestImageTools runs it).
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
exec 8>&-
install -m 0755 "$kubectl" "$out/usr/local/bin/kubectl"

# The Makefile's -ldflags (deploy/'s TestReleaseFilesBuild keeps them in step).
module=github.com/hook-operator/hook-operator
(cd "$root" && go build -o "$out/usr/local/bin/hook-operator" \
  -ldflags "-X $module/internal/buildinfo.Version=$version -X $module/internal/buildinfo.Commit=$commit" \
  ./cmd/hook-operator)

# The shipped hooks without Go sources, tests or fixtures, plus each Go
# hook's executable as hooks/<d>/<d>; the bash helpers also at /hooks/lib.
(cd "$root" && git ls-files hooks) | while read -r f; do
  case "$f" in *.go | */go.mod | */go.sum | */testdata/*) continue ;; esac
  mkdir -p "$out/examples/$(dirname "$f")"
  cp -p "$root/$f" "$out/examples/$f"
done
for d in $(cd "$root" && go list -f '{{if and (eq .Name "main") .GoFiles}}{{.Dir}}{{end}}' ./hooks/...); do
  d=${d#"$root"/}
  (cd "$root" && go build -o "$out/examples/$d/${d##*/}" "./$d")
done
cp -a "$out/examples/hooks/lib" "$out/hooks/lib"

# shell-operator's shell framework from the pinned module (go.sum verifies it).
dir=$(cd "$root/hack/tools/shell-operator" && GOOS= GOARCH= go mod download -json github.com/flant/shell-operator | jq -r .Dir)
cp "$dir/shell_lib.sh" "$out/shell_lib.sh"
cp "$dir/LICENSE" "$out/usr/share/doc/shell-operator-framework/LICENSE"
mkdir -p "$out/frameworks"
cp -R "$dir/frameworks/shell" "$out/frameworks/shell"
chmod -R u+w,a+rX,go-w "$out"
