#!/usr/bin/env bash
# Builds shell-operator, pinned by hack/tools/shell-operator/go.mod, from the
# Go module proxy, once per user and version, and prints the path of the
# binary. A second call with the same version only prints the path. It is the
# reference the conformance suite and the side-by-side benchmarks run.
#
# The checksum database has no entry for github.com/flant/shell-operator
# v1.14.0 (nor for github.com/deckhouse/module-sdk v0.9.1, which it needs):
# the committed go.sum is what pins their content, and a download that does
# not match it fails the build. See docs/design/releasing.md,
# "shell-operator, the reference".
#
# Cache: ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/bin/shell-operator-<version>/shell-operator
# Usage: shell-operator.sh [--path]   (--path prints where the binary goes, building nothing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/shell-operator"
pkg=github.com/flant/shell-operator

# The pinned version is the one place it is written: the tool module's go.mod.
version=$(awk -v m="$pkg" '$1 == m { print $2; exit }' "$module/go.mod")
if [[ -z "$version" ]]; then
  echo "shell-operator.sh: $module/go.mod does not require $pkg; run: (cd $module && GONOSUMDB=github.com/flant,github.com/deckhouse go get -tool $pkg/cmd/shell-operator@VERSION)" >&2
  exit 1
fi

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
out="$cache/bin/shell-operator-$version"

if [[ "${1:-}" == "--path" ]]; then
  echo "$out/shell-operator"
  exit 0
fi
if [[ -f "$out/.complete" ]]; then
  echo "$out/shell-operator"
  exit 0
fi

# Concurrent callers (parallel test packages) wait for one build.
mkdir -p "$cache/bin"
exec 9>"$cache/bin/.shell-operator-$version.lock"
flock 9
if [[ -f "$out/.complete" ]]; then
  echo "$out/shell-operator"
  exit 0
fi

tmp=$(mktemp -d "$cache/bin/.build-shell-operator-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log() { printf '%s shell-operator.sh: %s\n' "$(date +%T)" "$*" >&2; }

log "building shell-operator $version"
# As its own release build does, the binary reports its version.
(cd "$module" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath" \
  go build -ldflags "-s -w -X $pkg/pkg/app.Version=$version" -o "$tmp/shell-operator" "$pkg/cmd/shell-operator")

# Read the whole output before matching it: under pipefail, `... | grep -q`
# fails whenever grep exits at its first match before the writer is done
# (the writer then dies of SIGPIPE).
reported=$("$tmp/shell-operator" version 2>&1)
[[ "$reported" == *"$version"* ]] || {
  echo "shell-operator.sh: the built shell-operator does not report $version: $reported" >&2
  exit 1
}
touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
log "shell-operator ready"
echo "$out/shell-operator"
