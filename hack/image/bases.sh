#!/usr/bin/env bash
# Makes sure podman has the base images the Dockerfile names (its FROM
# lines): pulled where a registry answers, else assembled here from Debian's
# packages, so that the Dockerfile builds unchanged without a registry:
#   debian:<v>-slim        a minbase Debian rootfs (mmdebstrap)
#   golang:<v>-bookworm    the same with git, gcc and CA certificates, and
#                          this machine's Go toolchain (it must be Go <v>)
# An image already present is kept: delete it (podman rmi) to assemble it
# again.
#
# Usage: bases.sh "<podman command>"   (as printed by engine.sh)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
read -r -a podman <<<"${1:?usage: bases.sh \"<podman command>\"}"

log() { printf '%s bases.sh: %s\n' "$(date +%T)" "$*" >&2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# debootstrap DIR [PACKAGES]: a minbase Debian bookworm rootfs in DIR, set
# up as Debian's own container images are: no documentation, manual pages
# or translations installed (the copyright files kept), and apt keeping no
# downloaded packages or caches after it installs, so that the layers of a
# Dockerfile's `apt-get install` stay small.
debootstrap() {
  local include=()
  [[ -z "${2:-}" ]] || include=(--include="$2")
  local keep=() p
  # The patterns are dpkg's, not the shell's: quoted, never expanded here.
  for p in '/usr/share/doc/*' '/usr/share/man/*' '/usr/share/info/*' '/usr/share/locale/*' '/usr/share/groff/*' '/usr/share/lintian/*'; do
    keep+=("--dpkgopt=path-exclude=$p")
  done
  keep+=('--dpkgopt=path-include=/usr/share/doc/*/copyright')
  mmdebstrap --quiet --variant=minbase "${include[@]}" "${keep[@]}" \
    --aptopt='DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; }' \
    --aptopt='APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; }' \
    --aptopt='Dir::Cache::pkgcache ""' --aptopt='Dir::Cache::srcpkgcache ""' \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' \
    bookworm "$1" >&2
}

slim() { # name
  debootstrap "$work/slim"
  tar -C "$work/slim" -c . | "${podman[@]}" import - "$1" >/dev/null
}

golang() { # name version
  local want=go$2 have
  have=$(go env GOVERSION)
  if [[ "$have" != "$want" ]]; then
    echo "bases.sh: the Dockerfile builds with $1 (Go $2), and this machine has $have: install Go $2, or change the Dockerfile's FROM and go.mod together" >&2
    exit 1
  fi
  debootstrap "$work/golang" ca-certificates,git,gcc,libc6-dev
  cp -a "$(go env GOROOT)" "$work/golang/usr/local/go"
  # The registries are reached through TLS that this machine's CA bundle
  # trusts; a fresh rootfs's does not.
  cp /etc/ssl/certs/ca-certificates.crt "$work/golang/etc/ssl/certs/ca-certificates.crt"
  mkdir -p "$work/golang/go"
  tar -C "$work/golang" -c . | "${podman[@]}" import \
    --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV GOPATH=/go' --change 'WORKDIR /go' - "$1" >/dev/null
}

for ref in $(awk 'toupper($1) == "FROM" { print $2 }' "$root/Dockerfile"); do
  name=docker.io/library/$ref
  if "${podman[@]}" image exists "$name"; then
    continue
  fi
  if timeout 30 "${podman[@]}" pull -q "$name" >/dev/null 2>&1; then
    log "pulled $name"
    continue
  fi
  start=$(date +%s)
  case "$ref" in
    debian:*-slim) slim "$name" ;;
    golang:*-bookworm) v=${ref#golang:}; golang "$name" "${v%-bookworm}" ;;
    *) echo "bases.sh: no registry answers for $ref, and there is no recipe to assemble it here" >&2; exit 1 ;;
  esac
  log "assembled $name from Debian's packages in $(( $(date +%s) - start )) s (no registry answered)"
done
