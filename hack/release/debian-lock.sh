#!/usr/bin/env bash
# Writes hack/release/debian.lock: the exact Debian packages of each release
# root (rootfs.sh), per architecture and variant, with the pool file each
# is fetched from, its size and SHA-256. rootfs.sh builds from exactly
# those files, so that two builds of one commit, months apart, unpack the
# same bytes; run this to take Debian's updates (a point release, a
# security fix) and commit the lock with what it changes.
#
# The resolution is mmdebstrap's (apt's): for each ARCH and VARIANT it runs
# `mmdebstrap --variant=extract` on the package list rootfs.sh names,
# against the suite of today (bookworm, bookworm-updates, bookworm-security,
# as mmdebstrap sets them up), and records what apt downloaded. apt checks
# each suite's InRelease against debian-archive-keyring, each Packages index
# against the InRelease and each .deb against the Packages index; this
# script then takes each .deb's pool path, size and SHA-256 from that index
# and checks the downloaded file against them once more. The downloaded
# files are kept in the per-user cache that rootfs.sh fetches into.
#
# Lock lines (one a line, fields separated by one space):
#   suite ARCHIVE SUITE DATE          each suite's InRelease Date (UTC)
#   epoch SECONDS                     the newest of those dates: the roots'
#                                     file times are clamped to it
#   include VARIANT PKG,PKG,...       rootfs.sh's package list of VARIANT
#   deb ARCH VARIANT PACKAGE VERSION DEBARCH ARCHIVE FILENAME SIZE SHA256
# ARCHIVE is the archive's path on the mirror (debian, debian-security);
# FILENAME the pool path in it.
#
# Usage: debian-lock.sh [LOCKFILE]     (default hack/release/debian.lock;
#                                      make debian-lock). Needs root, and
#                                      mmdebstrap (installed from Debian's
#                                      packages on first use, with sudo
#                                      where not root).
set -euo pipefail
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
  exit 0
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
lock=${1:-$here/debian.lock}
log() { printf '%s debian-lock.sh: %s\n' "$(date +%T)" "$*" >&2; }

if ! command -v mmdebstrap >/dev/null; then
  sudo=()
  [[ $(id -u) == 0 ]] || sudo=(sudo)
  if ! command -v apt-get >/dev/null || { (( ${#sudo[@]} )) && ! command -v sudo >/dev/null; }; then
    echo "debian-lock.sh: needs mmdebstrap, which is not installed: install it (Debian's package mmdebstrap), as root" >&2
    exit 1
  fi
  log "installing mmdebstrap from Debian's packages (once)"
  "${sudo[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends mmdebstrap >&2
fi
cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}/release/debs
mkdir -p "$cache"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

debs="$work/debs" suites="$work/suites"
: >"$debs"
: >"$suites"
for variant in base python; do
  packages=$("$here/rootfs.sh" --packages "$variant")
  echo "include $variant $packages" >>"$work/include"
  for arch in amd64 arm64; do
    log "resolving $variant for $arch"
    r="$work/root-$arch-$variant"
    mmdebstrap --quiet --variant=extract --architectures="$arch" --include="$packages" \
      --aptopt='APT::Install-Recommends "false"' --skip=cleanup/apt bookworm "$r" >&2
    lists="$r/var/lib/apt/lists"
    # Each suite's archive (the mirror path before /dists/) and Date.
    for rel in "$lists"/*_InRelease; do
      name=${rel##*/} name=${name%_InRelease}
      archive=${name%%_dists_*} archive=${archive#*_} archive=${archive//_//}
      suite=${name#*_dists_}
      date=$(awk '/^Date: / { sub(/^Date: /, ""); print; exit }' "$rel")
      echo "suite $archive $suite $(date -u -d "$date" +%Y-%m-%dT%H:%M:%SZ)" >>"$suites"
    done
    # The pool path, size and SHA-256 of each (package, version, arch) in
    # the Packages indexes apt verified, with the index's archive.
    for idx in "$lists"/*_Packages; do
      name=${idx##*/}
      archive=${name%%_dists_*} archive=${archive#*_} archive=${archive//_//}
      awk -v archive="$archive" '
        /^Package: / { p = $2 } /^Version: / { v = $2 } /^Architecture: / { a = $2 }
        /^Filename: / { f = $2 } /^Size: / { s = $2 } /^SHA256: / { h = $2 }
        /^$/ { if (p != "") print p, v, a, archive, f, s, h; p = v = a = f = s = h = "" }
        END { if (p != "") print p, v, a, archive, f, s, h }' "$idx"
    done >"$work/index"
    for deb in "$r"/var/cache/apt/archives/*.deb; do
      read -r p v a < <(dpkg-deb -f "$deb" Package Version Architecture | awk '{ printf "%s ", $2 } END { print "" }')
      line=$(awk -v p="$p" -v v="$v" -v a="$a" '$1 == p && $2 == v && $3 == a { print; exit }' "$work/index")
      if [[ -z "$line" ]]; then
        echo "debian-lock.sh: $p $v ($a), which apt downloaded for $arch $variant, is in no Packages index it read: report this (mmdebstrap $(mmdebstrap --version))" >&2
        exit 1
      fi
      read -r _ _ _ archive file size sha <<<"$line"
      if [[ "$(sha256sum <"$deb" | cut -d' ' -f1)" != "$sha" || "$(stat -c %s "$deb")" != "$size" ]]; then
        echo "debian-lock.sh: $deb does not match its Packages index ($file, $size bytes, sha256 $sha): run again" >&2
        exit 1
      fi
      echo "deb $arch $variant $p $v $a $archive $file $size $sha" >>"$debs"
      cp "$deb" "$cache/${file##*/}"
    done
    rm -rf "$r"
  done
done

epoch=$(awk '{ print $4 }' "$suites" | sort -u | while read -r d; do date -u -d "$d" +%s; done | sort -n | tail -1)
{
  echo "# The Debian packages of the release roots (hack/release/rootfs.sh), per"
  echo "# architecture and variant. Written by hack/release/debian-lock.sh (make"
  echo "# debian-lock); do not edit. Fields: debian-lock.sh --help."
  LC_ALL=C sort -u "$suites"
  echo "epoch $epoch"
  cat "$work/include"
  LC_ALL=C sort -k2,2 -k3,3 -k4,4 "$debs"
} >"$lock.tmp"
mv "$lock.tmp" "$lock"
log "wrote $lock: $(grep -c '^deb ' "$lock") packages, suites of $(date -u -d "@$epoch" +%F) and before"
