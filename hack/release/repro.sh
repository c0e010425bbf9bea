#!/usr/bin/env bash
# Checks that two release builds of this commit are the same: runs
# release.sh twice into separate folders, the second with an empty release
# cache (so its Debian roots are unpacked again, from .deb files fetched
# again, and no cached root hides a difference), then compares
#   - each tag's image index digest in oci/index.json,
#   - each platform's image manifest digest, config and layers (a layer
#     that differs is listed entry by entry: what differs in it),
#   - SHA256SUMS, but for the provenance (*.provenance.json), whose build
#     times and builder belong to the attestation, not to the release's
#     bytes,
# and prints what differs; exits 1 if anything does. The release is built
# unsigned (HOOK_OPERATOR_SIGNING_KEY unset: ECDSA signatures differ on each
# signing by design).
#
# The second build shares the first's tool caches (syft, helm: pinned
# builds of their own) and, unless REPRO_KUBECTL=fresh, its kubectl
# binaries (Go builds of a pinned module; rebuilding them takes minutes).
#
# Usage: repro.sh VERSION [WORKDIR]    (make release-repro; WORKDIR default
#                                      a temporary folder, removed after a pass)
# Env:   RELEASE_ARCHES, RELEASE_SBOMS  passed to release.sh (e.g.
#                                       RELEASE_ARCHES=amd64 for a quicker check)
#        REPRO_KUBECTL=fresh            rebuild kubectl in the second build too
set -euo pipefail
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
  exit 0
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
version=${1:-}
if [[ -z "$version" ]]; then
  sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
log() { printf '%s repro.sh: %s\n' "$(date +%T)" "$*" >&2; }
if [[ -n "$(git -C "$root" status --porcelain --untracked-files=no)" ]]; then
  log "the work tree has changes to tracked files: both builds take them, but they are not the commit's release"
fi
keep=${2:+1}
work=${2:-$(mktemp -d)}
mkdir -p "$work"
work=$(cd "$work" && pwd)
unset HOOK_OPERATOR_SIGNING_KEY

# The second build's cache: the first's, but for an empty release/ (kubectl
# linked in unless REPRO_KUBECTL=fresh).
cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
mkdir -p "$cache/release"
fresh="$work/cache"
rm -rf "$fresh"
mkdir -p "$fresh/release"
for f in "$cache"/*; do
  [[ "${f##*/}" == release ]] || ln -s "$f" "$fresh/${f##*/}"
done
if [[ "${REPRO_KUBECTL:-}" != fresh ]]; then
  for f in "$cache"/release/kubectl-*-linux-*; do
    [[ "$f" == *.lock || ! -f "$f" ]] || ln -s "$f" "$fresh/release/${f##*/}"
  done
fi

log "build 1 of 2 into $work/a"
"$here/release.sh" "$version" "$work/a"
log "build 2 of 2 into $work/b (release cache $fresh/release, empty but for kubectl)"
HOOK_OPERATOR_CACHE=$fresh "$here/release.sh" "$version" "$work/b"

differ=0
report() { echo "DIFFERS: $*"; differ=1; }

# tag<TAB>digest of each index in a layout, and digest<TAB>platform of each
# manifest of an index.
tags() { jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"]) | "\(.annotations["org.opencontainers.image.ref.name"])\t\(.digest)"' "$1/oci/index.json" | LC_ALL=C sort; }
blob() { echo "$1/oci/blobs/${2/://}"; }
manifests() { jq -r '.manifests[] | "\(.platform.os)/\(.platform.architecture)\t\(.digest)"' "$(blob "$1" "$2")" | LC_ALL=C sort; }

# A layer that differs: the entries of its tar that differ (type, mode,
# owner, size, time, name), at most 40 lines.
layerdiff() {
  diff <(tar -tvzf "$(blob "$work/a" "$1")" | LC_ALL=C sort -k6) <(tar -tvzf "$(blob "$work/b" "$2")" | LC_ALL=C sort -k6) | head -40 | sed 's/^/    /' || true
}

while IFS=$'\t' read -r tag da; do
  db=$(tags "$work/b" | awk -F'\t' -v t="$tag" '$1 == t { print $2 }')
  if [[ "$da" == "$db" ]]; then
    echo "same: $tag index $da"
    continue
  fi
  report "$tag index: $da, then ${db:-missing}"
  [[ -n "$db" ]] || continue
  while IFS=$'\t' read -r platform ma; do
    mb=$(manifests "$work/b" "$db" | awk -F'\t' -v p="$platform" '$1 == p { print $2 }')
    if [[ "$ma" == "$mb" ]]; then
      echo "  same: $tag $platform manifest $ma"
      continue
    fi
    report "$tag $platform manifest: $ma, then ${mb:-missing}"
    [[ -n "$mb" ]] || continue
    ca=$(jq -r .config.digest "$(blob "$work/a" "$ma")") cb=$(jq -r .config.digest "$(blob "$work/b" "$mb")")
    if [[ "$ca" != "$cb" ]]; then
      report "$tag $platform config: $ca, then $cb:"
      diff <(jq -S . "$(blob "$work/a" "$ca")") <(jq -S . "$(blob "$work/b" "$cb")") | sed 's/^/    /' || true
    fi
    paste <(jq -r '.layers[].digest' "$(blob "$work/a" "$ma")") <(jq -r '.layers[].digest' "$(blob "$work/b" "$mb")") |
      awk -F'\t' '{ print NR "\t" $1 "\t" $2 }' | while IFS=$'\t' read -r n la lb; do
        [[ "$la" != "$lb" ]] || continue
        echo "DIFFERS: $tag $platform layer $n: $la, then $lb; its entries that differ:"
        layerdiff "$la" "$lb"
      done
  done < <(manifests "$work/a" "$da")
done < <(tags "$work/a")
if [[ "$(tags "$work/a" | cut -f1)" != "$(tags "$work/b" | cut -f1)" ]]; then
  report "the tags: $(tags "$work/a" | cut -f1 | xargs), then $(tags "$work/b" | cut -f1 | xargs)"
fi

# The other files, by SHA256SUMS, but for the provenance.
sums() { grep -v '\.provenance\.json$' "$1/SHA256SUMS"; }
if diff <(sums "$work/a") <(sums "$work/b") >"$work/sums.diff"; then
  echo "same: SHA256SUMS ($(sums "$work/a" | wc -l) files; the provenance left out)"
else
  report "SHA256SUMS (< first build, > second):"
  sed 's/^/    /' "$work/sums.diff"
fi

if (( differ )); then
  echo "repro.sh: the two builds of $version differ (above); both are in $work" >&2
  exit 1
fi
echo "repro.sh: the two builds of $version are the same"
[[ -n "$keep" ]] || rm -rf "$work"
