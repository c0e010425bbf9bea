#!/usr/bin/env bash
# Builds the cosign CLI pinned by hack/tools/cosign/go.mod from the Go module
# proxy, once per user and version, and prints the path of the binary. A
# second call with the same version only prints the path. make release-check
# verifies the release's signatures and attestations with it, as a user
# would (docs/releases.md); the release workflow signs keyless with it.
#
# Cache: ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/bin/cosign-<version>/cosign
# Usage: cosign.sh [--path]   (--path prints where the binary goes, building nothing)
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
module="$here/cosign"
case "${1:-}" in
  "" | --path) ;;
  -h | --help) sed -n '2,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 0 ;;
  *) sed -n '2,9s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2; exit 2 ;;
esac

# The pinned version is the one place it is written: the tool module's go.mod.
version=$(awk '$1 == "github.com/sigstore/cosign/v3" { print $2; exit }' "$module/go.mod")
if [[ -z "$version" ]]; then
  echo "cosign.sh: $module/go.mod does not require github.com/sigstore/cosign/v3; run: (cd $module && go get -tool github.com/sigstore/cosign/v3/cmd/cosign@VERSION)" >&2
  exit 1
fi

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
out="$cache/bin/cosign-$version"

if [[ "${1:-}" == "--path" ]]; then
  echo "$out/cosign"
  exit 0
fi
if [[ -f "$out/.complete" ]]; then
  echo "$out/cosign"
  exit 0
fi

# Concurrent callers wait for one build.
mkdir -p "$cache/bin"
exec 9>"$cache/bin/.cosign-$version.lock"
flock 9
if [[ -f "$out/.complete" ]]; then
  echo "$out/cosign"
  exit 0
fi

tmp=$(mktemp -d "$cache/bin/.build-cosign-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log() { printf '%s cosign.sh: %s\n' "$(date +%T)" "$*" >&2; }

log "building cosign $version (minutes, once)"
(cd "$module" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -trimpath" \
  go build -ldflags "-s -w -X sigs.k8s.io/release-utils/version.gitVersion=$version" \
  -o "$tmp/cosign" github.com/sigstore/cosign/v3/cmd/cosign)

# The whole output is read before it is matched (see shell-operator.sh).
reported=$("$tmp/cosign" version 2>&1)
[[ "$reported" == *"$version"* ]] || {
  echo "cosign.sh: the built cosign does not report $version: $reported" >&2
  exit 1
}
touch "$tmp/.complete"
rm -rf "$out"
mv "$tmp" "$out"
trap - EXIT
log "cosign ready"
echo "$out/cosign"
