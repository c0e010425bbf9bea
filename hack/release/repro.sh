#!/usr/bin/env bash
# Checks that two release builds of this commit are the same: runs
# release.sh twice into separate folders, the second with an empty release
# cache (so its Debian roots are unpacked again, from .deb files fetched
# again, and no cached root hides a difference), then compares
#   - each tag's image index digest in oci/index.json,
#   - each platform's image manifest digest, config and layers (a layer
#     that differs is listed entry by entry: what differs in it),
#   - SHA256SUMS, but for the provenance (*.provenance.json), whose build
#     times belong to the attestation, not to the release's bytes,
#   - the provenance, but for its build times (startedOn, finishedOn),
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
#        repro.sh --compare DIR1 DIR2  compare two release folders only
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
log() { printf '%s repro.sh: %s\n' "$(date +%T)" "$*" >&2; }
version=${1:-}
if [[ -z "$version" || ( "$version" == --compare && $# -ne 3 ) ]]; then
  sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
# tag<TAB>digest of each index in a layout; platform<TAB>digest of each
# manifest of an index; the path of a blob.
tags() { jq -r '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"]) | "\(.annotations["org.opencontainers.image.ref.name"])\t\(.digest)"' "$1/oci/index.json" | LC_ALL=C sort; }
manifests() { jq -r '.manifests[] | "\(.platform.os)/\(.platform.architecture)\t\(.digest)"' "$(blob "$1" "$2")" | LC_ALL=C sort; }
blob() { echo "$1/oci/blobs/${2/://}"; }

# compare DIR1 DIR2: prints what is the same and what DIFFERS in two
# release folders; returns 1 if anything differs.
compare() {
  local a=$1 b=$2 differ=0 tag da db platform ma mb ca cb f g
  report() { echo "DIFFERS: $*"; differ=1; }
  while IFS=$'\t' read -r tag da; do
    db=$(tags "$b" | awk -F'\t' -v t="$tag" '$1 == t { print $2 }')
    if [[ "$da" == "$db" ]]; then
      echo "same: $tag index $da"
      continue
    fi
    report "$tag index: $da, then ${db:-missing}"
    [[ -n "$db" ]] || continue
    while IFS=$'\t' read -r platform ma; do
      mb=$(manifests "$b" "$db" | awk -F'\t' -v p="$platform" '$1 == p { print $2 }')
      if [[ "$ma" == "$mb" ]]; then
        echo "  same: $tag $platform manifest $ma"
        continue
      fi
      report "$tag $platform manifest: $ma, then ${mb:-missing}"
      [[ -n "$mb" ]] || continue
      ca=$(jq -r .config.digest "$(blob "$a" "$ma")") cb=$(jq -r .config.digest "$(blob "$b" "$mb")")
      if [[ "$ca" != "$cb" ]]; then
        report "$tag $platform config: $ca, then $cb:"
        diff <(jq -S . "$(blob "$a" "$ca")") <(jq -S . "$(blob "$b" "$cb")") | sed 's/^/    /' || true
      fi
      # Each layer that differs, with the entries of its tar that differ
      # (type, mode, owner, size, time, name; at most 40 lines).
      paste <(jq -r '.layers[].digest' "$(blob "$a" "$ma")") <(jq -r '.layers[].digest' "$(blob "$b" "$mb")") |
        awk -F'\t' '$1 != $2 { print NR "\t" $1 "\t" $2 }' | while IFS=$'\t' read -r n la lb; do
          echo "DIFFERS: $tag $platform layer $n: $la, then ${lb:-missing}; its entries that differ:"
          [[ -z "$lb" ]] || diff <(tar -tvzf "$(blob "$a" "$la")" | LC_ALL=C sort -k6) \
            <(tar -tvzf "$(blob "$b" "$lb")" | LC_ALL=C sort -k6) | sed -n '1,40s/^/    /p' || true
        done
    done < <(manifests "$a" "$da")
  done < <(tags "$a")
  if [[ "$(tags "$a" | cut -f1)" != "$(tags "$b" | cut -f1)" ]]; then
    report "the tags: $(tags "$a" | cut -f1 | xargs), then $(tags "$b" | cut -f1 | xargs)"
  fi

  # The provenance, but for the build's times.
  local times='del(.runDetails.metadata.startedOn, .runDetails.metadata.finishedOn)'
  for f in "$a"/*.provenance.json; do
    [[ -f "$f" ]] || continue
    g="$b/${f##*/}"
    if [[ ! -f "$g" ]]; then
      report "${f##*/}: only in the first build"
    elif ! diff <(jq -S "$times" "$f") <(jq -S "$times" "$g") >/dev/null; then
      report "${f##*/}, but for its build times (< first build, > second):"
      diff <(jq -S "$times" "$f") <(jq -S "$times" "$g") | sed 's/^/    /' || true
    else
      echo "same: ${f##*/}, but for its build times"
    fi
  done

  # The other files, by SHA256SUMS, but for the provenance.
  if diff <(grep -v '\.provenance\.json$' "$a/SHA256SUMS") <(grep -v '\.provenance\.json$' "$b/SHA256SUMS") >/dev/null; then
    echo "same: SHA256SUMS ($(grep -cv '\.provenance\.json$' "$a/SHA256SUMS") files; the provenance left out)"
  else
    report "SHA256SUMS, the provenance left out (< first build, > second):"
    diff <(grep -v '\.provenance\.json$' "$a/SHA256SUMS") <(grep -v '\.provenance\.json$' "$b/SHA256SUMS") | sed 's/^/    /' || true
  fi
  return $differ
}

if [[ "$version" == --compare ]]; then
  compare "$2" "$3"
  exit
fi

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

if ! compare "$work/a" "$work/b"; then
  echo "repro.sh: the two builds of $version differ (above); both are in $work" >&2
  exit 1
fi
echo "repro.sh: the two builds of $version are the same"
[[ -n "$keep" ]] || rm -rf "$work"
