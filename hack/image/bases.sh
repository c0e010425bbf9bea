#!/usr/bin/env bash
# Makes sure podman has the base image the Dockerfile's build stage names
# (its FROM lines; the image's own stage is FROM scratch): pulled where a
# registry answers, else assembled here from Debian's packages, so that the
# Dockerfile builds unchanged without a registry (../shared notes:
# container-image.md):
#   golang:<v>-bookworm   a minbase Debian bookworm root with what the
#                         build uses of the real image (CA certificates,
#                         curl, git; dpkg-deb is in every Debian root), this
#                         machine's Go toolchain (it must be Go <v>) and its
#                         CA bundle (the registries are reached through TLS
#                         that it trusts), with the real image's variables
# An image already present is kept: delete it (podman rmi) to assemble it
# again. mmdebstrap is installed from Debian's packages on first use.
#
# Usage: bases.sh "<podman command>"   (as engine.sh prints it)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
read -r -a podman <<<"${1:?usage: bases.sh \"<podman command>\"}"

log() { printf '%s bases.sh: %s\n' "$(date +%T)" "$*" >&2; }

golang() { # name version
  local want=go$2 have work
  have=$(go env GOVERSION)
  if [[ "$have" != "$want" ]]; then
    echo "bases.sh: the Dockerfile builds with $1 (Go $2), and this machine has $have: install Go $2, or change the Dockerfile's FROM and go.mod together" >&2
    exit 1
  fi
  if ! command -v mmdebstrap >/dev/null; then
    local sudo=()
    [[ $(id -u) == 0 ]] || sudo=(sudo)
    log "installing mmdebstrap from Debian's packages (once)"
    "${sudo[@]}" apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends mmdebstrap >&2
  fi
  work=$(mktemp -d)
  # shellcheck disable=SC2064 # expanded now: work is local
  trap "rm -rf '$work'" EXIT
  mmdebstrap --quiet --variant=minbase --include=ca-certificates,curl,git \
    --customize-hook='rm -rf "$1"/var/lib/apt/lists/* "$1"/var/cache/apt/*' bookworm "$work/root" >&2
  cp -a "$(go env GOROOT)" "$work/root/usr/local/go"
  cp /etc/ssl/certs/ca-certificates.crt "$work/root/etc/ssl/certs/ca-certificates.crt"
  mkdir -p "$work/root/go"
  tar -C "$work/root" -c . | "${podman[@]}" import \
    --change 'ENV PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'ENV GOPATH=/go' --change 'ENV GOTOOLCHAIN=local' --change "ENV GOLANG_VERSION=$2" \
    --change 'WORKDIR /go' - "$1" >/dev/null
}

# FROM [--platform=...] IMAGE [AS NAME]
for ref in $(awk 'toupper($1) == "FROM" { for (i = 2; i <= NF; i++) if ($i !~ /^--/) { print $i; break } }' "$root/Dockerfile"); do
  [[ "$ref" != scratch ]] || continue
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
    golang:*-bookworm) v=${ref#golang:}; golang "$name" "${v%-bookworm}" ;;
    *) echo "bases.sh: no registry answers for $ref, and there is no recipe to assemble it here" >&2; exit 1 ;;
  esac
  log "assembled $name from Debian's packages in $(( $(date +%s) - start )) s (no registry answered)"
done
