#!/usr/bin/env bash
# Assembles the Debian bookworm base of the release image for one
# architecture from Debian's packages, without running any of the
# architecture's programs (no emulation): mmdebstrap's extract variant
# unpacks the packages and their dependencies, and what their maintainer
# scripts would have done is done here by hand (the awk link, /etc/passwd
# and /etc/group with the image's user 65532, the CA bundle, /tmp). Manual
# pages, translations and documentation other than copyright files are
# left out, as in Debian's slim images. Cached per user, architecture,
# variant and content of this script; prints the tar's path.
#
# Usage: rootfs.sh ARCH VARIANT     (ARCH: amd64 or arm64; VARIANT: base or python)
set -euo pipefail

arch=${1:-} variant=${2:-}
case "$arch" in amd64 | arm64) ;; *) echo "rootfs.sh: ARCH $arch: give amd64 or arm64" >&2; exit 2 ;; esac
# What bash hooks and shell-operator's shell framework use: bash, jq, the
# POSIX tools (coreutils, grep, sed, mawk, findutils, diffutils, gzip, tar),
# rev (util-linux in bookworm), column and hexdump (bsdextrautils); tini as PID 1; CA certificates for kubectl and hooks.
packages=base-files,bash,dash,coreutils,grep,sed,mawk,findutils,diffutils,gzip,tar,hostname,debianutils,util-linux,bsdextrautils,jq,tini,ca-certificates,tzdata
case "$variant" in
  base) ;;
  python) packages+=,python3 ;;
  *) echo "rootfs.sh: VARIANT $variant: give base or python" >&2; exit 2 ;;
esac

cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}/release
key=$(sha256sum "${BASH_SOURCE[0]}" | cut -c1-12)
out="$cache/rootfs-$arch-$variant-$key.tar"
if [[ -f "$out" ]]; then
  echo "$out"
  exit 0
fi
# engine.sh installs mmdebstrap (with podman) from Debian's packages.
command -v mmdebstrap >/dev/null || "$(dirname "${BASH_SOURCE[0]}")/../image/engine.sh" >/dev/null
mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.rootfs-XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# mmdebstrap runs no hooks for the extract variant: the fix-ups run here,
# on this machine, on the unpacked folder.
fixup() {
  local r=$1 deb
  # dpkg's database, as installing would have left it, so that SBOM
  # generators and scanners see the Debian packages: each package's control
  # fields, installed, and its file list.
  mkdir -p "$r"/var/lib/dpkg/info
  : >"$r"/var/lib/dpkg/status
  for deb in "$r"/var/cache/apt/archives/*.deb; do
    { dpkg-deb -f "$deb" | sed '/^Package:/a Status: install ok installed'; echo; } >>"$r"/var/lib/dpkg/status
    dpkg-deb -c "$deb" | awk '{ sub(/^\./, "", $6); print ($6 == "/" ? "/." : $6) }' | sed 's|/$||' \
      >"$r/var/lib/dpkg/info/$(dpkg-deb -f "$deb" Package).list"
  done
  rm -rf "$r"/usr/share/man "$r"/usr/share/locale "$r"/usr/share/info "$r"/usr/share/lintian "$r"/usr/share/bash-completion "$r"/var/cache/apt "$r"/var/lib/apt/lists "$r"/var/log/apt
  find "$r"/usr/share/doc -type f ! -name copyright -delete
  ln -sf mawk "$r"/usr/bin/awk
  printf "root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\nhook-operator:x:65532:65532::/nonexistent:/usr/sbin/nologin\n" >"$r"/etc/passwd
  printf "root:x:0:\nnogroup:x:65534:\nhook-operator:x:65532:\n" >"$r"/etc/group
  mkdir -p "$r"/etc/ssl/certs
  find "$r"/usr/share/ca-certificates -name "*.crt" | LC_ALL=C sort | xargs cat >"$r"/etc/ssl/certs/ca-certificates.crt
  mkdir -p "$r"/tmp "$r"/root "$r"/usr/local/bin && chmod 1777 "$r"/tmp && chmod 0700 "$r"/root
}
mmdebstrap --quiet --variant=extract --architectures="$arch" --include="$packages" \
  --aptopt='APT::Install-Recommends "false"' --skip=cleanup/apt/cache bookworm "$tmp/root" >&2
fixup "$tmp/root"
tar -C "$tmp/root" --sort=name --numeric-owner -cf "$tmp/root.tar" .
mv "$tmp/root.tar" "$out"
echo "$out"
