#!/usr/bin/env bash
# Builds the syft CLI (the SBOM generator) pinned by hack/tools/syft/go.mod
# from the Go module proxy, once per user and version, and prints the path
# of the binary. A second call with the same version only prints the path.
# The first build takes a few minutes; later ones reuse the Go caches.
#
# Cache: ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/bin/syft-<version>/syft
# Usage: syft.sh
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/syft"

version=$(awk '$1 == "github.com/anchore/syft" { print $2; exit }' "$module/go.mod")
if [[ -z "$version" ]]; then
  echo "syft.sh: $module/go.mod does not require github.com/anchore/syft; run: (cd $module && go get -tool github.com/anchore/syft/cmd/syft@VERSION)" >&2
  exit 1
fi

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
out="$cache/bin/syft-$version"
if [[ -f "$out/.complete" ]]; then
  echo "$out/syft"
  exit 0
fi

mkdir -p "$cache/bin"
exec 9>"$cache/bin/.syft-$version.lock"
flock 9
if [[ -f "$out/.complete" ]]; then
  echo "$out/syft"
  exit 0
fi

tmp=$(mktemp -d "$cache/bin/.build-syft-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log() { printf '%s syft.sh: %s\n' "$(date +%T)" "$*" >&2; }

# Stamped as syft's release build stamps it, so that the SBOMs name the
# generator's version.
log "building syft $version"
(cd "$module" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath" \
  go build -ldflags "-s -w -X main.version=${version#v}" -o "$tmp/syft" github.com/anchore/syft/cmd/syft)

reported=$("$tmp/syft" version)
[[ "$reported" == *"${version#v}"* ]] || {
  echo "syft.sh: the built syft does not report ${version#v}: $reported" >&2
  exit 1
}
touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
log "syft ready"
echo "$out/syft"
