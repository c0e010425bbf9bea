#!/usr/bin/env bash
# Builds the promtool CLI pinned by hack/tools/promtool/go.mod from the Go
# module proxy, once per user and version, and prints the path of the binary.
# A second call with the same version only prints the path. The first build
# takes a few minutes; later ones reuse the Go module and build caches.
#
# Cache: ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/bin/promtool-<version>/promtool
# Usage: promtool.sh [--path]   (--path prints where the binary goes, building nothing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/promtool"

# The pinned version is the one place it is written: the tool module's go.mod.
version=$(awk '$1 == "github.com/prometheus/prometheus" { print $2; exit }' "$module/go.mod")
if [[ -z "$version" ]]; then
  echo "promtool.sh: $module/go.mod does not require github.com/prometheus/prometheus; run: (cd $module && go get -tool github.com/prometheus/prometheus/cmd/promtool@VERSION)" >&2
  exit 1
fi

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
out="$cache/bin/promtool-$version"

if [[ "${1:-}" == "--path" ]]; then
  echo "$out/promtool"
  exit 0
fi

if [[ -f "$out/.complete" ]]; then
  echo "$out/promtool"
  exit 0
fi

# Concurrent callers (parallel test packages) wait for one build.
mkdir -p "$cache/bin"
exec 9>"$cache/bin/.promtool-$version.lock"
flock 9
if [[ -f "$out/.complete" ]]; then
  echo "$out/promtool"
  exit 0
fi

tmp=$(mktemp -d "$cache/bin/.build-promtool-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log() { printf '%s promtool.sh: %s\n' "$(date +%T)" "$*" >&2; }

# The module's v0.3xx.y is Prometheus 3.xx.y; stamp it as its release build does.
release="3.${version#v0.3}"
ldflags="-s -w -X github.com/prometheus/common/version.Version=$release"

log "building promtool $version (Prometheus $release)"
(cd "$module" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath" \
  go build -ldflags "$ldflags" -o "$tmp/promtool" github.com/prometheus/prometheus/cmd/promtool)

# The whole output is read before it is matched (see shell-operator.sh).
reported=$("$tmp/promtool" --version 2>&1)
[[ "$reported" == *"$release"* ]] || {
  echo "promtool.sh: the built promtool does not report $release: $reported" >&2
  exit 1
}
touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
log "promtool ready"
echo "$out/promtool"
