#!/usr/bin/env bash
# Builds the image's own files for one architecture into OUTDIR, laid out
# as in the image (its top layer: release.sh), cross-compiled on this
# machine (CGO_ENABLED=0, so no C toolchain of the target is needed):
#   usr/local/bin/hook-operator, usr/local/bin/kubectl (the pinned one),
#   examples/hooks/ (the shipped hooks, Go hooks built), hooks/lib/,
#   shell_lib.sh, frameworks/shell/ (shell-operator's shell framework) and
#   its licence in usr/share/doc/shell-operator-framework/.
#   bin/kubectl, sbin/tini and shell-operator: links to kubectl, Debian's
#   tini and the operator where shell-operator's image has them.
# kubectl is cached per user, version and architecture (kubectl.sh; its
# first build takes minutes).
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

# kubectl, the pinned one (kubectl.sh; deploy/'s TestImageTools runs it).
kubectl=$("$here/kubectl.sh" "$arch")
install -m 0755 "$kubectl" "$out/usr/local/bin/kubectl"

# The Makefile's -ldflags (deploy/'s TestReleaseFilesBuild keeps them in step).
module=github.com/hook-operator/hook-operator
(cd "$root" && go build -o "$out/usr/local/bin/hook-operator" \
  -ldflags "-X $module/internal/buildinfo.Version=$version -X $module/internal/buildinfo.Commit=$commit" \
  ./cmd/hook-operator)

# The shipped hooks without Go sources, tests or fixtures, plus each Go
# hook's executable as hooks/<d>/<d>; the bash helpers also at /hooks/lib.
# The hooks are git's tracked files; in a tree that is no git checkout (the
# Dockerfile's build context, which .dockerignore keeps to tracked files),
# every file under hooks/.
hooks() {
  if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$root" ls-files hooks
  else
    (cd "$root" && find hooks ! -type d | LC_ALL=C sort)
  fi
}
hooks | while read -r f; do
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
# (go mod download -json's "Dir", read without jq, which the Dockerfile's
# build image lacks.)
dir=$(cd "$root/hack/tools/shell-operator" && GOOS= GOARCH= go mod download -json github.com/flant/shell-operator |
  sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
[[ -n "$dir" && -f "$dir/shell_lib.sh" ]] || { echo "files.sh: go mod download github.com/flant/shell-operator gave no folder with shell_lib.sh ($dir)" >&2; exit 1; }
cp "$dir/shell_lib.sh" "$out/shell_lib.sh"
cp "$dir/LICENSE" "$out/usr/share/doc/shell-operator-framework/LICENSE"
mkdir -p "$out/frameworks"
cp -R "$dir/frameworks/shell" "$out/frameworks/shell"

# Where shell-operator's image has them, for hooks and derived Dockerfiles
# written for it (docs/migrating.md, "Image"): kubectl at /bin/kubectl,
# tini at /sbin/tini, the operator at /shell-operator, so that
# ENTRYPOINT ["/sbin/tini", "--", "/shell-operator"] runs it. The root is
# not merged-/usr (/bin and /sbin are folders of their own); the links are
# relative, so that they resolve in an unpacked copy of the image too.
mkdir -p "$out/bin" "$out/sbin"
ln -s ../usr/local/bin/kubectl "$out/bin/kubectl"
ln -s ../usr/bin/tini "$out/sbin/tini"
ln -s usr/local/bin/hook-operator "$out/shell-operator"
chmod -R u+w,a+rX,go-w "$out"
