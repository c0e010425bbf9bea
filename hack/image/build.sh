#!/usr/bin/env bash
# Builds the image from the Dockerfile, unchanged: with docker when a docker
# daemon answers, else with podman (installed on first use, see engine.sh),
# whose base images are pulled or assembled here (bases.sh). Layers are
# cached by the builder between runs; with podman, the build stage also
# shares this machine's Go caches (below).
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
# The build stage's Go runs on this machine's Go build and module caches
# (podman mounts them into its RUN steps; the image's content does not
# change): its go is this machine's (bases.sh), so what the cluster build
# (hack/cluster/build.sh: same flags) and earlier builds compiled is not
# compiled again, and what it compiles (kubectl, the operator) is not
# compiled again by make release, the deploy/ tests or make cross. On a new
# machine, make test builds kubectl once instead of twice.
mounts=()
gocache=$(go env GOCACHE) gomodcache=$(go env GOMODCACHE)
if [[ "$gocache" == /* && "$gomodcache" == /* ]] && mkdir -p "$gocache" "$gomodcache"; then
  mounts=(-v "$gocache:/root/.cache/go-build" -v "$gomodcache:/go/pkg/mod")
fi
"${cmd[@]}" build --network host --pull=never --layers "${mounts[@]}" \
  --build-arg VERSION="$version" --build-arg COMMIT="$commit" -t "$tag" "$root" >&2
log "built $tag with podman in $(( $(date +%s) - start )) s"
