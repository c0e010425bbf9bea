#!/usr/bin/env bash
# Assembles the Debian bookworm base of the release image for one
# architecture from exactly the packages hack/release/debian.lock pins
# (debian-lock.sh writes it), without running any of the architecture's
# programs (no emulation): each pinned .deb is fetched by its pool path
# (from the per-user cache, else DEBIAN_MIRROR, else snapshot.debian.org by
# its version), checked against the lock's SHA-256, and unpacked as
# mmdebstrap's extract variant would; what the packages' maintainer scripts
# would have done is done here by hand (the awk link, /etc/passwd and
# /etc/group with the image's user 65532, the CA bundle, /tmp, dpkg's
# database). Manual pages, translations and documentation other than
# copyright files are left out, as in Debian's slim images. The tar is
# sorted, with the packages' numeric owners and its times clamped to the
# lock's epoch, so that one lock gives the same bytes on any machine.
# Cached per user, architecture, variant, content of this script and of
# the lock; prints the tar's path.
#
# Usage: rootfs.sh ARCH VARIANT     (ARCH: amd64 or arm64; VARIANT: base or python;
#                                   as root, or a user with fakeroot)
#        rootfs.sh --packages VARIANT   prints VARIANT's package list (debian-lock.sh's input)
# Env:   DEBIAN_MIRROR   where the archives are (default http://deb.debian.org;
#                        the lock's ARCHIVE/FILENAME is appended)
#        HOOK_OPERATOR_DEBIAN_LOCK  another lock (default hack/release/debian.lock)
set -euo pipefail
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
  exit 0
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
umask 022

# What bash hooks and shell-operator's shell framework use: bash, jq, the
# POSIX tools (coreutils, grep, sed, mawk, findutils, diffutils, gzip, tar),
# rev (util-linux in bookworm), column and hexdump (bsdextrautils); curl,
# which shell-operator's image has and its users' hooks call; tini as PID 1;
# CA certificates for kubectl, curl and hooks.
packages() {
  local p=base-files,bash,dash,coreutils,grep,sed,mawk,findutils,diffutils,gzip,tar,hostname,debianutils,util-linux,bsdextrautils,jq,curl,tini,ca-certificates,tzdata
  case "$1" in
    base) echo "$p" ;;
    python) echo "$p,python3" ;;
    *) echo "rootfs.sh: VARIANT $1: give base or python" >&2; return 2 ;;
  esac
}
if [[ "${1:-}" == --packages ]]; then
  packages "${2:-}"
  exit
fi

arch=${1:-} variant=${2:-}
case "$arch" in amd64 | arm64) ;; *) echo "rootfs.sh: ARCH $arch: give amd64 or arm64" >&2; exit 2 ;; esac
want=$(packages "$variant") || exit 2
lock=${HOOK_OPERATOR_DEBIAN_LOCK:-$here/debian.lock}
[[ -f "$lock" ]] || { echo "rootfs.sh: no lock $lock: run make debian-lock" >&2; exit 1; }
if [[ "$(awk -v v="$variant" '$1 == "include" && $2 == v { print $3 }' "$lock")" != "$want" ]]; then
  echo "rootfs.sh: $lock pins the packages of another list for $variant than rootfs.sh names ($want): run make debian-lock and commit the lock" >&2
  exit 1
fi
epoch=$(awk '$1 == "epoch" { print $2 }' "$lock")
mirror=${DEBIAN_MIRROR:-http://deb.debian.org}

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}/release
key=$(cat "${BASH_SOURCE[0]}" "$lock" | sha256sum | cut -c1-12)
out="$cache/rootfs-$arch-$variant-$key.tar"
if [[ -f "$out" ]]; then
  echo "$out"
  exit 0
fi
# The packages' owners (root; group staff for /var/local) and set-user-ID
# bits are kept as root, or under fakeroot, which records them for the tar.
if [[ $(id -u) != 0 ]]; then
  if [[ -n "${FAKEROOTKEY:-}" ]] || ! command -v fakeroot >/dev/null; then
    echo "rootfs.sh: unpacking the packages with their owners needs root or fakeroot: run as root, or install fakeroot (apt-get install fakeroot)" >&2
    exit 1
  fi
  exec fakeroot -- "${BASH_SOURCE[0]}" "$@"
fi
mkdir -p "$cache/debs"
tmp=$(mktemp -d "$cache/.rootfs-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
log() { printf '%s rootfs.sh: %s\n' "$(date +%T)" "$*" >&2; }

# fetch PACKAGE VERSION ARCHIVE FILENAME SHA256: the pinned .deb into the
# cache, by its pool path, else from snapshot.debian.org by its version;
# prints its path. A file that does not match the lock is never used.
fetch() {
  local p=$1 v=$2 archive=$3 file=$4 sha=$5 deb="$cache/debs/${4##*/}" status hash
  if [[ -f "$deb" && "$(sha256sum <"$deb" | cut -d' ' -f1)" == "$sha" ]]; then
    echo "$deb"
    return
  fi
  status=$(curl -sS -L --retry 2 -o "$deb.tmp" -w '%{http_code}' "$mirror/$archive/$file" || true)
  if [[ "$status" != 200 ]] && command -v jq >/dev/null && curl -fsS -m 10 -o /dev/null https://snapshot.debian.org/ 2>/dev/null; then
    # snapshot.debian.org keeps every version: find the file by the
    # package's version, then fetch it by its hash.
    hash=$(curl -fsS "https://snapshot.debian.org/mr/binary/$p/${v//:/%3A}/binfiles?fileinfo=1" |
      jq -r --arg name "${file##*/}" '.fileinfo as $fi | [.result[] | .hash as $h | select(any($fi[$h][]?; .name == $name)) | $h] | first // empty') || true
    if [[ -n "$hash" ]]; then
      log "$p $v is gone from $mirror/$archive: taking it from snapshot.debian.org"
      status=$(curl -sS -L --retry 2 -o "$deb.tmp" -w '%{http_code}' "https://snapshot.debian.org/file/$hash" || true)
    fi
  fi
  if [[ "$status" != 200 ]]; then
    rm -f "$deb.tmp"
    echo "rootfs.sh: $p $v ($arch, pinned in $lock) is not on $mirror/$archive/$file (HTTP $status), nor on snapshot.debian.org (not reachable here, without it, or no jq here to look it up with): Debian removes superseded versions; run make debian-lock to pin the suite's current packages, and commit the lock" >&2
    return 1
  fi
  if [[ "$(sha256sum <"$deb.tmp" | cut -d' ' -f1)" != "$sha" ]]; then
    rm -f "$deb.tmp"
    echo "rootfs.sh: $p $v ($arch): $mirror/$archive/$file does not match the SHA-256 $lock pins ($sha): the file is not the one locked; run make debian-lock if Debian rebuilt it, and commit the lock" >&2
    return 1
  fi
  mv "$deb.tmp" "$deb"
  echo "$deb"
}

# The fix-ups of what the packages' maintainer scripts would have done; $@
# are the unpacked .deb files.
fixup() {
  local r=$1 deb
  shift
  # dpkg's database, as installing would have left it, so that SBOM
  # generators and scanners see the Debian packages: each package's control
  # fields, installed, and its file list.
  mkdir -p "$r"/var/lib/dpkg/info "$r"/var/lib/dpkg/updates "$r"/var/lib/dpkg/triggers
  echo "$arch" >"$r"/var/lib/dpkg/arch
  : >"$r"/var/lib/dpkg/status
  for deb in "$@"; do
    { dpkg-deb -f "$deb" | sed '/^Package:/a Status: install ok installed'; echo; } >>"$r"/var/lib/dpkg/status
    # The names as the package has them, whatever the caller's locale: the
    # listing of dpkg-deb -c escapes a name's non-ASCII bytes (one of
    # ca-certificates') under LANG=C and not under C.UTF-8.
    dpkg-deb --fsys-tarfile "$deb" | tar -t --quoting-style=literal |
      awk '{ sub(/^\./, ""); print ($0 == "/" ? "/." : $0) }' | sed 's|/$||' \
      >"$r/var/lib/dpkg/info/$(dpkg-deb -f "$deb" Package).list"
  done
  # Where the packages came from (the provenance reads it), by the lock.
  mkdir -p "$r"/etc/apt
  awk '$1 == "suite" { print "deb http://deb.debian.org/" $2 " " $3 " main" }' "$lock" >"$r"/etc/apt/sources.list
  rm -rf "$r"/usr/share/man "$r"/usr/share/locale "$r"/usr/share/info "$r"/usr/share/lintian "$r"/usr/share/bash-completion "$r"/var/cache/apt "$r"/var/lib/apt/lists "$r"/var/log/apt
  find "$r"/usr/share/doc -type f ! -name copyright -delete
  ln -sf mawk "$r"/usr/bin/awk
  printf "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nhook-operator:x:65532:65532::/nonexistent:/usr/sbin/nologin\n" >"$r"/etc/passwd
  printf "root:x:0:\nnogroup:x:65534:\nhook-operator:x:65532:\n" >"$r"/etc/group
  mkdir -p "$r"/etc/ssl/certs
  find "$r"/usr/share/ca-certificates -name "*.crt" | LC_ALL=C sort | xargs cat >"$r"/etc/ssl/certs/ca-certificates.crt
  mkdir -p "$r"/dev "$r"/tmp "$r"/root "$r"/usr/local/bin && chmod 1777 "$r"/tmp && chmod 0700 "$r"/root
}

debs=()
while read -r p v a archive file size sha; do
  deb=$(fetch "$p" "$v" "$archive" "$file" "$sha") || exit 1
  debs+=("$deb")
done < <(awk -v arch="$arch" -v v="$variant" '$1 == "deb" && $2 == arch && $3 == v { print $4, $5, $6, $7, $8, $9, $10 }' "$lock")
if (( ${#debs[@]} == 0 )); then
  echo "rootfs.sh: $lock pins no packages for $arch $variant: run make debian-lock" >&2
  exit 1
fi
log "unpacking ${#debs[@]} pinned packages for $arch $variant"
mkdir "$tmp/root"
for deb in "${debs[@]}"; do
  dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/root" --same-owner --same-permissions
done
fixup "$tmp/root" "${debs[@]}"
tar -C "$tmp/root" --sort=name --numeric-owner --mtime="@$epoch" --clamp-mtime \
  -cf "$tmp/root.tar" .
mv "$tmp/root.tar" "$out"
echo "$out"
