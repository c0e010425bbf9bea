#!/usr/bin/env bash
# Builds a command of the Prometheus module pinned by hack/tools/promtool/go.mod
# from the Go module proxy, once per user and version, and prints the path of
# the binary: the Prometheus server (the default), which the live monitoring
# test runs against an operator, or promtool (what promtool.sh asks for),
# which checks and unit-tests the alert rules. Both come from the one pinned
# version. A second call with the same command and version only prints the
# path. The first build takes a few minutes; later ones reuse the Go module
# and build caches. The server is built without its web UI's assets (its
# HTTP API, all the tests use, is complete without them), and both without
# service discovery (Prometheus's build tag remove_all_sd): the tests scrape
# static targets and check rules, and the discovery mechanisms (cloud SDKs,
# client-go) were three quarters of the build: 979 CPU seconds from empty
# caches, 279 without them.
#
# Cache: ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/bin/<command>-<version>-nosd/<command>
# Usage: prometheus.sh [prometheus|promtool] [--path]
#   (--path prints where the binary goes, building nothing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/promtool"

tool=prometheus
case "${1:-}" in
prometheus | promtool) tool=$1; shift ;;
"" | --path) ;;
*) echo "prometheus.sh: unknown command $1; usage: prometheus.sh [prometheus|promtool] [--path]" >&2; exit 2 ;;
esac

# The pinned version is the one place it is written: the tool module's go.mod.
version=$(awk '$1 == "github.com/prometheus/prometheus" { print $2; exit }' "$module/go.mod")
if [[ -z "$version" ]]; then
  echo "prometheus.sh: $module/go.mod does not require github.com/prometheus/prometheus; run: (cd $module && go get -tool github.com/prometheus/prometheus/cmd/$tool@VERSION)" >&2
  exit 1
fi

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
out="$cache/bin/$tool-$version-nosd"

if [[ "${1:-}" == "--path" ]]; then
  echo "$out/$tool"
  exit 0
fi

if [[ -f "$out/.complete" ]]; then
  echo "$out/$tool"
  exit 0
fi

# Concurrent callers (parallel test packages) wait for one build, of
# either command: the two share most of their packages, so the second
# build, after the first, reuses its compiles from the Go build cache
# instead of compiling them at the same time.
mkdir -p "$cache/bin"
exec 9>"$cache/bin/.prometheus-$version.lock"
flock 9
if [[ -f "$out/.complete" ]]; then
  echo "$out/$tool"
  exit 0
fi

tmp=$(mktemp -d "$cache/bin/.build-$tool-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log() { printf '%s prometheus.sh: %s\n' "$(date +%T)" "$*" >&2; }

# The module's v0.3xx.y is Prometheus 3.xx.y; stamp it as its release build does.
release="3.${version#v0.3}"
ldflags="-s -w -X github.com/prometheus/common/version.Version=$release"

log "building $tool $version (Prometheus $release)"
(cd "$module" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath" \
  go build -tags remove_all_sd -ldflags "$ldflags" -o "$tmp/$tool" "github.com/prometheus/prometheus/cmd/$tool")

# The whole output is read before it is matched (see shell-operator.sh).
reported=$("$tmp/$tool" --version 2>&1)
[[ "$reported" == *"$release"* ]] || {
  echo "prometheus.sh: the built $tool does not report $release: $reported" >&2
  exit 1
}
touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
log "$tool ready"
echo "$out/$tool"
