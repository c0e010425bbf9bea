#!/usr/bin/env bash
# Pushes the images of release VERSION, as make release wrote them into
# DIST/oci, to REPOSITORY:VERSION and REPOSITORY:VERSION-python (each an
# index of linux/amd64 and linux/arm64), with the signatures and
# attestations make release wrote if it was given a signing key (sign.sh),
# with the credentials of docker's configuration (`docker login REGISTRY`,
# or a CI login step). Prints each pushed REPOSITORY:TAG@DIGEST.
#
# Usage: push.sh VERSION REPOSITORY [DIST]    (REPOSITORY like ghcr.io/OWNER/hook-operator)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ $# -lt 2 || -z "$1" || -z "$2" ]]; then
  echo "usage: push.sh VERSION REPOSITORY [DIST] (make release-push VERSION=v1.2.3 REGISTRY=ghcr.io/OWNER/hook-operator)" >&2
  exit 2
fi
version=$1 repository=$2 dist=${3:-$root/dist}
if [[ ! -f "$dist/oci/index.json" ]]; then
  echo "push.sh: $dist/oci/index.json is missing: run make release VERSION=$version first" >&2
  exit 1
fi
# Every file of the release is checked before anything leaves the machine.
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || {
  echo "push.sh: $dist does not match its SHA256SUMS: run make release VERSION=$version again" >&2
  exit 1
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
(cd "$here/ociimage" && CGO_ENABLED=0 go build -o "$work/ociimage" .)
for tag in "$version" "$version-python"; do
  "$work/ociimage" push -layout "$dist/oci" -tag "$tag" -to "$repository"
done
