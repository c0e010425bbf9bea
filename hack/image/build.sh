#!/usr/bin/env bash
# Builds the image from the Dockerfile, unchanged: with docker when a docker
# daemon answers, else with podman (installed on first use, see engine.sh),
# whose base images are pulled or assembled here (bases.sh). Layers are
# cached by the builder between runs.
#
# Usage: build.sh [TAG]     (default hook-operator:dev; IMAGE_VERSION and
#                            IMAGE_COMMIT set the build arguments)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
tag=${1:-hook-operator:dev}
version=${IMAGE_VERSION:-v0.1.0-dev}
commit=${IMAGE_COMMIT:-$(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)}

log() { printf '%s build.sh: %s\n' "$(date +%T)" "$*" >&2; }
start=$(date +%s)
engine=$("$here/engine.sh")
if [[ "$engine" == docker ]]; then
  docker build --build-arg VERSION="$version" --build-arg COMMIT="$commit" -t "$tag" "$root" >&2
  log "built $tag with docker in $(( $(date +%s) - start )) s"
  exit 0
fi
export CONTAINERS_CONF="$here/containers.conf"
"$here/bases.sh" "$engine"
read -r -a cmd <<<"$engine"
"${cmd[@]}" build --network host --pull=never --layers \
  --build-arg VERSION="$version" --build-arg COMMIT="$commit" -t "$tag" "$root" >&2
log "built $tag with podman in $(( $(date +%s) - start )) s"
