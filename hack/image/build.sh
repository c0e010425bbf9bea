#!/usr/bin/env bash
# Loads the release's image of this machine's architecture into the
# container engine under TAG, so that what make test and a developer run is
# what make release ships (docs/design/releasing.md, "One image build path: the
# release's; the Dockerfile goes"). hack/release/release.sh builds it into
# a temporary folder, not dist/ (RELEASE_ARCHES=<this machine's>,
# RELEASE_SBOMS=0, RELEASE_IMAGE_ONLY=1: the image alone, the same bytes as
# make release's image of this architecture for the same VERSION and
# commit); podman then pulls it from that OCI layout (its oci: transport),
# docker loads it from an archive in docker load's format (manifest.json
# naming TAG, beside the layout's config and layer blobs). It needs what
# make release needs (Go; root or fakeroot for the Debian root, cached per
# user with kubectl), and the engine only to load: engine.sh names docker
# when a docker daemon answers, else podman (installed on first use).
#
# Usage: build.sh [TAG]     (default hook-operator:dev; IMAGE_VERSION, the
#                            release's VERSION, default v0.1.0-dev; the
#                            commit is HEAD's, as make release stamps it)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
tag=${1:-hook-operator:dev}
version=${IMAGE_VERSION:-v0.1.0-dev}
if [[ -n "${IMAGE_COMMIT:-}" ]]; then
  echo "build.sh: IMAGE_COMMIT is not read any more: the image is the release's of HEAD, stamped with HEAD's commit; check out the commit you want" >&2
  exit 2
fi
arch=$(go env GOHOSTARCH)
case "$arch" in amd64 | arm64) ;; *) echo "build.sh: this machine is $arch; the release's images are amd64 and arm64" >&2; exit 1 ;; esac

log() { printf '%s build.sh: %s\n' "$(date +%T)" "$*" >&2; }
start=$(date +%s)
engine=$("$here/engine.sh")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
RELEASE_ARCHES=$arch RELEASE_SBOMS=0 RELEASE_IMAGE_ONLY=1 "$root/hack/release/release.sh" "$version" "$tmp/release" >&2
oci="$tmp/release/oci"

if [[ "$engine" == docker ]]; then
  # docker load's own format, which every docker reads (an OCI layout only
  # some, and a nested index fewer): the image's manifest.json naming TAG,
  # its config and its gzip layers from the layout's blobs.
  blob() { echo "$oci/blobs/${1/://}"; }
  index=$(jq -r --arg v "$version" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $v) | .digest' "$oci/index.json")
  manifest=$(jq -r --arg a "$arch" '.manifests[] | select(.platform.os == "linux" and .platform.architecture == $a) | .digest' "$(blob "$index")")
  jq --arg tag "$tag" '[{Config: ("blobs/" + (.config.digest | sub(":"; "/"))), RepoTags: [$tag],
    Layers: [.layers[].digest | "blobs/" + sub(":"; "/")]}]' "$(blob "$manifest")" >"$tmp/manifest.json"
  mapfile -t blobs < <(jq -r '.[0].Config, .[0].Layers[]' "$tmp/manifest.json")
  tar -cf - -C "$tmp" manifest.json -C "$oci" "${blobs[@]}" | docker load >&2
  log "loaded release $version (linux/$arch) into docker as $tag in $(( $(date +%s) - start )) s"
  exit 0
fi

export CONTAINERS_CONF="$here/containers.conf"
read -r -a cmd <<<"$engine"
# podman names an image pulled from a layout after the layout's path, as
# given: a link of a name of its own, untagged once the image has TAG.
ln -s release/oci "$tmp/hook-operator-image"
old=$("${cmd[@]}" image inspect --format '{{.Id}}' "$tag" 2>/dev/null) || old=""
id=$(cd "$tmp" && "${cmd[@]}" pull -q "oci:hook-operator-image:$version")
"${cmd[@]}" tag "$id" "$tag"
"${cmd[@]}" untag "$id" localhost/hook-operator-image:latest
# The image TAG named before, if no other name is left to it (and no
# container runs it: rmi refuses that).
if [[ -n "$old" && "$old" != "$id" && "$("${cmd[@]}" image inspect --format '{{len .RepoTags}}' "$old" 2>/dev/null)" == 0 ]]; then
  "${cmd[@]}" rmi "$old" >/dev/null 2>&1 || true
fi
log "loaded release $version (linux/$arch, image ${id:0:12}) into podman as $tag in $(( $(date +%s) - start )) s"
