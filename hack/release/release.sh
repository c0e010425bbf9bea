#!/usr/bin/env bash
# Writes the release VERSION into OUTDIR (default dist/), on this machine,
# for linux/amd64 and linux/arm64 alike, without a container engine and
# without emulation (docs/design/releasing.md, "Release images: ..."):
#   oci/                       an OCI image layout: the index tagged VERSION
#                              (the image) and VERSION-python (with python3),
#                              each with one image per architecture
#   hook-operator-linux-ARCH   the operator's binary per architecture
#   hook-operator-X.Y.Z.tgz    the Helm chart (chart.sh)
#   *.cdx.json                 CycloneDX SBOMs of each binary and of each
#                              image (TAG-ARCH), by the pinned syft
#   *.provenance.json, *.sig,  the images' SLSA provenance; signatures and
#   cosign.pub                 attestations with HOOK_OPERATOR_SIGNING_KEY (sign.sh)
#   SHA256SUMS                 SHA-256 of every other file in OUTDIR
# Base roots (rootfs.sh), kubectl (files.sh) and syft are cached per user;
# the rest is built each time.
#
# Usage: release.sh VERSION [OUTDIR]     (VERSION like v1.2.3)
# Env:   RELEASE_ARCHES="amd64 arm64"    the architectures (make release: both)
#        RELEASE_SBOMS=0                 no SBOMs, and no syft built for them
#        RELEASE_IMAGE_ONLY=1            OUTDIR/oci alone, with the tag VERSION
#                                        alone: no -python variant, binaries,
#                                        chart, SBOMs, provenance, signatures
#                                        or SHA256SUMS. Its images are make
#                                        release's, byte for byte, for the
#                                        same VERSION and commit (make image:
#                                        hack/image/build.sh; deploy/'s
#                                        TestReleaseImageOnly compares them)
# make test's release (deploy/) is of this machine's architecture alone,
# without SBOMs: arm64's kubectl and syft are the slowest builds of a new
# machine, and make release-check checks a whole release (docs/development.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
version=${1:-} out=${2:-$root/dist}
if [[ ! "$version" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release.sh: VERSION '$version' is not vMAJOR.MINOR.PATCH[-PRERELEASE]: run make release VERSION=v1.2.3" >&2
  exit 2
fi
read -r -a arches <<<"${RELEASE_ARCHES:-amd64 arm64}"
for arch in "${arches[@]}"; do
  case "$arch" in amd64 | arm64) ;; *) echo "release.sh: RELEASE_ARCHES: $arch: give amd64, arm64 or both" >&2; exit 2 ;; esac
done
(( ${#arches[@]} > 0 )) || { echo "release.sh: RELEASE_ARCHES is empty: give amd64, arm64 or both" >&2; exit 2; }
sboms=${RELEASE_SBOMS:-1}
[[ "$sboms" == 0 || "$sboms" == 1 ]] || { echo "release.sh: RELEASE_SBOMS=$sboms: give 1 (SBOMs, the default) or 0" >&2; exit 2; }
image_only=${RELEASE_IMAGE_ONLY:-0}
[[ "$image_only" == 0 || "$image_only" == 1 ]] || { echo "release.sh: RELEASE_IMAGE_ONLY=$image_only: give 1 (the image alone) or 0 (the whole release, the default)" >&2; exit 2; }
variants=(base python)
if (( image_only )); then
  [[ "${RELEASE_SBOMS:-0}" == 0 ]] || { echo "release.sh: RELEASE_IMAGE_ONLY=1 writes no SBOMs: give RELEASE_SBOMS=0 or leave it unset" >&2; exit 2; }
  sboms=0 variants=(base)
fi
commit=$(git -C "$root" rev-parse --short HEAD)
# The commit's time, not the clock's: the images' creation time and the
# files' times in their layers, the same for every build of one commit.
epoch=$(git -C "$root" log -1 --format=%ct HEAD)
created=$(date -u -d "@$epoch" +%Y-%m-%dT%H:%M:%SZ)
export SOURCE_DATE_EPOCH=$epoch # the chart's (chart.sh) and the SBOMs' times too
log() { printf '%s release.sh: %s\n' "$(date +%T)" "$*" >&2; }
start=$(date +%s)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ociimage="$work/ociimage"
(cd "$here/ociimage" && CGO_ENABLED=0 go build -o "$ociimage" .)

rm -rf "$out"
mkdir -p "$out"
out=$(cd "$out" && pwd)
for arch in "${arches[@]}"; do
  log "linux/$arch: files"
  "$here/files.sh" "$arch" "$version" "$commit" "$work/files-$arch"
  (( image_only )) || cp "$work/files-$arch/usr/local/bin/hook-operator" "$out/hook-operator-linux-$arch"
  tar -C "$work/files-$arch" --sort=name --owner=0 --group=0 --numeric-owner --mtime="@$epoch" \
    -cf "$work/files-$arch.tar" .
  for variant in "${variants[@]}"; do
    log "linux/$arch: $variant root"
    ln -sf "$("$here/rootfs.sh" "$arch" "$variant")" "$work/root-$arch-$variant.tar"
  done
done

# The images' runtime settings (deploy/'s TestReleaseImageConfig checks
# them in the images written). Only shell-operator's own variable names the
# hooks folder, and the command is start alone, as in shell-operator's
# image: a variable of ours, or a flag, would win over the
# SHELL_OPERATOR_* settings of a Deployment written for shell-operator. The
# temp dir and the listener are the defaults (/tmp, :9115).
jq -n --arg version "$version" --arg commit "$commit" '{
  Entrypoint: ["/usr/bin/tini", "--", "/usr/local/bin/hook-operator"],
  Cmd: ["start"],
  Env: ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        "SHELL_OPERATOR_HOOKS_DIR=/hooks", "HOME=/tmp"],
  User: "65532:65532",
  ExposedPorts: {"9115/tcp": {}},
  Labels: {
    "org.opencontainers.image.title": "hook-operator",
    "org.opencontainers.image.description": "A Kubernetes operator runtime: a folder of executable hooks (bash or Go) becomes an operator",
    "org.opencontainers.image.source": "https://github.com/hook-operator/hook-operator",
    "org.opencontainers.image.url": "https://github.com/hook-operator/hook-operator",
    "org.opencontainers.image.documentation": "https://github.com/hook-operator/hook-operator/tree/main/docs",
    "org.opencontainers.image.version": $version,
    "org.opencontainers.image.revision": $commit
  }
}' >"$work/config.json"

for variant in "${variants[@]}"; do
  tag=$version
  [[ "$variant" == base ]] || tag=$version-$variant
  log "image $tag"
  platforms=()
  for arch in "${arches[@]}"; do
    platforms+=("linux/$arch=$work/root-$arch-$variant.tar,$work/files-$arch.tar")
  done
  "$ociimage" build -layout "$out/oci" -tag "$tag" -config "$work/config.json" -created "$created" \
    "${platforms[@]}" >/dev/null
done
if (( image_only )); then
  log "image $version (${arches[*]}) written to $out/oci in $(( $(date +%s) - start )) s (RELEASE_IMAGE_ONLY=1: nothing else)"
  exit 0
fi

"$here/chart.sh" "$version" "$out" >/dev/null

# SBOMs, read from the files alone: no engine, no registry, no update check.
if (( sboms )); then
  syft=$("$root/hack/tools/syft.sh")
  export SYFT_CHECK_FOR_APP_UPDATE=false
  for arch in "${arches[@]}"; do
    log "SBOMs for linux/$arch"
    "$syft" scan -q "file:$out/hook-operator-linux-$arch" -o "cyclonedx-json=$out/hook-operator-linux-$arch.cdx.json"
    for tag in "$version" "$version-python"; do
      # syft reads a layout of one index: this tag's, sharing dist/oci's blobs.
      one="$work/oci-$tag"
      if [[ ! -d "$one" ]]; then
        mkdir "$one"
        cp "$out/oci/oci-layout" "$one/"
        ln -s "$out/oci/blobs" "$one/blobs"
        jq --arg tag "$tag" '.manifests |= map(select(.annotations["org.opencontainers.image.ref.name"] == $tag))' \
          "$out/oci/index.json" >"$one/index.json"
      fi
      "$syft" scan -q "oci-dir:$one" --platform "linux/$arch" --source-name hook-operator --source-version "$tag" \
        -o "cyclonedx-json=$out/hook-operator-$tag-$arch.cdx.json"
    done
  done
fi

# Each SBOM as the same build of the same files writes it: syft stamps the
# scan's time, a random serial number, and an ID of the scanned path (a
# temporary folder here); they become the commit's time, an ID of the
# scanned file's name and digest, and a serial number of the content.
for f in "$out"/*.cdx.json; do
  [[ -f "$f" ]] || continue
  ref=$(jq -r '.metadata.component | "\(.name) \(.version)"' "$f" | sha256sum | cut -c1-16)
  jq --arg created "$created" --arg ref "$ref" '(.metadata.component["bom-ref"]) as $old
    | walk(if . == $old then $ref else . end) | .metadata.timestamp = $created | del(.serialNumber)' "$f" >"$f.tmp"
  h=$(jq -cS . "$f.tmp" | sha256sum)
  jq --arg serial "urn:uuid:${h:0:8}-${h:8:4}-5${h:13:3}-8${h:17:3}-${h:20:12}" '.serialNumber = $serial' "$f.tmp" >"$f"
  rm "$f.tmp"
done

# The provenance; signatures and attestations with HOOK_OPERATOR_SIGNING_KEY.
RELEASE_STARTED=$(date -u -d "@$start" +%Y-%m-%dT%H:%M:%SZ) "$here/sign.sh" "$version" "$out" "$ociimage" "$work"

(cd "$out" && find . -type f ! -name SHA256SUMS | LC_ALL=C sort | sed 's|^\./||' | xargs sha256sum >SHA256SUMS)
log "release $version written to $out in $(( $(date +%s) - start )) s"
