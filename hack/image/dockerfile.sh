#!/usr/bin/env bash
# Builds the top-level Dockerfile as a user's `docker build .` or `podman
# build .` does, as TAG, with the engine engine.sh names; podman with this
# machine's settings (runc, cgroupfs, containers.conf's ulimits), the host's
# network, and the base image bases.sh provides (no registry answers here).
# VERSION is IMAGE_VERSION (default v0.1.0-dev), COMMIT IMAGE_COMMIT
# (default HEAD's), as make image stamps them; podman leaves out its io.buildah.version label, so
# that the image's settings are the release's (deploy/'s
# TestIntegrationDockerfileImage compares them). Prints the build's time.
#
# Usage: dockerfile.sh [TAG]     (default hook-operator:dockerfile)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
tag=${1:-hook-operator:dockerfile}
version=${IMAGE_VERSION:-v0.1.0-dev}
commit=${IMAGE_COMMIT:-$(git -C "$root" rev-parse --short HEAD)}
log() { printf '%s dockerfile.sh: %s\n' "$(date +%T)" "$*" >&2; }

engine=$("$here/engine.sh")
read -r -a cmd <<<"$engine"
args=(build --build-arg "VERSION=$version" --build-arg "COMMIT=$commit" -t "$tag")
if [[ "$engine" != docker ]]; then
  export CONTAINERS_CONF="$here/containers.conf"
  "$here/bases.sh" "$engine"
  # podman 4.3 (bookworm's) does not set TARGETARCH itself, as BuildKit
  # and later podman do (the Dockerfile falls back to the build image's
  # architecture): given, it is not warned about.
  args+=(--network host --pull=never --identity-label=false --build-arg "TARGETARCH=$(go env GOARCH)")
fi
start=$(date +%s)
"${cmd[@]}" "${args[@]}" "$root" >&2
log "built the Dockerfile ($version, $commit) as $tag in $(( $(date +%s) - start )) s"
