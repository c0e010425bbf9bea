#!/usr/bin/env bash
# Prints the container engine command that loads and runs the image here
# (hack/image/build.sh, deploy/'s tests): "docker" when a docker daemon
# answers, else podman, installed (with runc) from Debian's packages on
# first use, with what this machine needs: runc and cgroupfs (crun fails on
# hybrid cgroups here). Callers of podman set CONTAINERS_CONF to
# containers.conf beside this script, whose ulimits the kernel allows
# (podman's defaults are refused). The image itself is built without an
# engine (hack/release/release.sh); see docs/development.md ("The image").
#
# Usage: engine.sh            prints "docker" or "podman --runtime runc ..."
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

log() { printf '%s engine.sh: %s\n' "$(date +%T)" "$*" >&2; }

if command -v docker >/dev/null && timeout 10 docker info >/dev/null 2>&1; then
  echo docker
  exit 0
fi

if ! command -v podman >/dev/null || ! command -v runc >/dev/null; then
  if ! command -v apt-get >/dev/null; then
    echo "engine.sh: no docker daemon answers, and podman is not installed and this is not a Debian-based machine: install podman and runc, or use docker" >&2
    exit 1
  fi
  sudo=()
  if [[ $(id -u) != 0 ]]; then
    command -v sudo >/dev/null || { echo "engine.sh: installing podman needs root: run as root, install sudo, or install podman and runc yourself" >&2; exit 1; }
    sudo=(sudo)
  fi
  log "installing podman and runc from Debian's packages (once)"
  "${sudo[@]}" apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    podman runc uidmap fuse-overlayfs slirp4netns ca-certificates >&2
fi
echo "podman --runtime runc --cgroup-manager cgroupfs"
