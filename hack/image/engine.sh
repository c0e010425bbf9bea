#!/usr/bin/env bash
# Prints the container engine command that builds and runs the image here:
# "docker" when a docker daemon answers, else podman, installed (with runc,
# buildah and mmdebstrap) from Debian's packages on first use, with what
# this machine needs: runc and cgroupfs (crun fails on hybrid cgroups
# here). Callers of podman set CONTAINERS_CONF to containers.conf beside
# this script, whose ulimits the kernel allows (podman's defaults are
# refused). See docs/deploy.md ("Building the image without Docker").
#
# Usage: engine.sh            prints "docker" or "podman --runtime runc ..."
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { printf '%s engine.sh: %s\n' "$(date +%T)" "$*" >&2; }

if command -v docker >/dev/null && timeout 10 docker info >/dev/null 2>&1; then
  echo docker
  exit 0
fi

if ! command -v podman >/dev/null || ! command -v runc >/dev/null || ! command -v mmdebstrap >/dev/null; then
  if ! command -v apt-get >/dev/null; then
    echo "engine.sh: no docker daemon answers, and podman is not installed and this is not a Debian-based machine: install podman, runc and mmdebstrap, or use docker" >&2
    exit 1
  fi
  sudo=()
  if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null || { echo "engine.sh: installing podman needs root: run as root, install sudo, or install podman, runc and mmdebstrap yourself" >&2; exit 1; }
    sudo=(sudo)
  fi
  log "installing podman, buildah, runc and mmdebstrap from Debian's packages (once)"
  "${sudo[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    podman buildah runc mmdebstrap uidmap fuse-overlayfs slirp4netns ca-certificates >&2
fi
echo "podman --runtime runc --cgroup-manager cgroupfs"
