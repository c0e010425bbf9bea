#!/usr/bin/env bash
# Builds Jaeger, pinned by hack/tools/jaeger/go.mod, from the Go module proxy,
# once per user and version, and prints the path of the binary: the tracing
# tests' trace backend (internal/jaegertest starts it). The module's
# cmd/jaeger is Jaeger v2, an OpenTelemetry Collector distribution: one
# process with an OTLP receiver, in-memory storage and the query API. A
# second call with the same version only prints the path. It is built
# without the web UI's assets (the module ships a placeholder page; the
# query API the tests read is complete without them). Jaeger has no build
# tags that leave storage backends out (Prometheus's remove_all_sd has no
# counterpart), so all of them (Cassandra, Elasticsearch, OpenSearch,
# ClickHouse, Badger, Kafka) are compiled. Measured on 2 cores (shared with
# another session's tests): 13 min 27 s from empty caches, 760 CPU seconds,
# most of the difference the download of 1.2 GB of modules; 7 min 12 s,
# 816 CPU seconds, with the Go module cache warm but an empty build cache.
# The binary is 81 MiB.
#
# Cache: ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/bin/jaeger-<version>/jaeger
# Usage: jaeger.sh [--path]   (--path prints where the binary goes, building nothing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/jaeger"
case "${1:-}" in
  "" | --path) ;;
  -h | --help) sed -n '2,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
  *) sed -n '2,19s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
esac

# The pinned version is the one place it is written: the tool module's go.mod.
version=$(awk '$1 == "github.com/jaegertracing/jaeger" { print $2; exit }' "$module/go.mod")
if [[ -z "$version" ]]; then
  echo "jaeger.sh: $module/go.mod does not require github.com/jaegertracing/jaeger; run: (cd $module && go get -tool github.com/jaegertracing/jaeger/cmd/jaeger@VERSION)" >&2
  exit 1
fi

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
out="$cache/bin/jaeger-$version"

if [[ "${1:-}" == "--path" ]]; then
  echo "$out/jaeger"
  exit 0
fi
if [[ -f "$out/.complete" ]]; then
  echo "$out/jaeger"
  exit 0
fi

# Concurrent callers (parallel test packages) wait for one build.
mkdir -p "$cache/bin"
exec 9>"$cache/bin/.jaeger-$version.lock"
flock 9
if [[ -f "$out/.complete" ]]; then
  echo "$out/jaeger"
  exit 0
fi

tmp=$(mktemp -d "$cache/bin/.build-jaeger-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log() { printf '%s jaeger.sh: %s\n' "$(date +%T)" "$*" >&2; }

# Jaeger tags each release twice, v1.x.y for the module and v2.(x-63).y for
# the v2 binary (v1.63.0 is v2.0.0, v1.75.0 is v2.12.0), and its release
# stamps the v2 tag and the commit's date (scripts/makefiles/BuildInfo.mk).
IFS=. read -r _ minor patch <<<"${version#v}"
release="v2.$((minor - 63)).$patch"
date=$(cd "$module" && GOFLAGS=-mod=readonly go list -m -f '{{.Time.UTC.Format "2006-01-02T15:04:05Z"}}' github.com/jaegertracing/jaeger)
stamp=github.com/jaegertracing/jaeger/internal/version
ldflags="-s -w -X $stamp.latestVersion=$release -X $stamp.date=$date"

log "building jaeger $version (Jaeger $release; minutes, once)"
(cd "$module" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath" \
  go build -ldflags "$ldflags" -o "$tmp/jaeger" github.com/jaegertracing/jaeger/cmd/jaeger)

# The whole output is read before it is matched (see shell-operator.sh).
reported=$("$tmp/jaeger" version 2>&1)
[[ "$reported" == *"\"gitVersion\":\"$release\""* ]] || {
  echo "jaeger.sh: the built jaeger does not report $release: $reported" >&2
  exit 1
}
touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
log "jaeger ready"
echo "$out/jaeger"
