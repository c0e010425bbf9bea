#!/usr/bin/env bash
# Signs release VERSION keyless, once push.sh pushed it to REPOSITORY: run
# by the release workflow (.github/workflows/release.yml), whose OIDC
# identity Sigstore's Fulcio certifies and whose signatures Rekor logs. With
# the pinned cosign (hack/tools/cosign.sh), for each tag:
#   cosign sign --recursive         the index and each platform's image
#   cosign attest slsaprovenance1   DIST/hook-operator-TAG.provenance.json
#                                   (sign.sh wrote it), on each of them
#   cosign attest cyclonedx         each platform's SBOM, on its image and
#                                   on the index
# in the tag-based format (sha256-HEX.sig, .att) that a key-signed release
# has too and that the policy engines read; and the chart with cosign
# sign-blob, into DIST/hook-operator-X.Y.Z.tgz.sigstore.json. The digests
# are the layout's (DIST/oci), which push.sh pushed unchanged.
#
# Usage: keyless.sh VERSION REPOSITORY [DIST]   (in GitHub Actions, with
#        permissions: id-token: write; verify as docs/releases.md shows)
set -euo pipefail
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
  exit 0
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ $# -lt 2 || -z "$1" || -z "$2" ]]; then
  sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
version=$1 repository=$2 dist=${3:-$root/dist}
cosign=$("$root/hack/tools/cosign.sh")
# The tag-based format, not cosign 3's Sigstore bundles as OCI referrers.
legacy=(--yes --new-bundle-format=false --use-signing-config=false)

# digest TAG: the index digest of TAG in the layout.
digest() {
  jq -r --arg tag "$1" '.manifests[] | select(.annotations["org.opencontainers.image.ref.name"] == $tag) | .digest' "$dist/oci/index.json"
}
for tag in "$version" "$version-python"; do
  index=$(digest "$tag")
  [[ "$index" == sha256:* ]] || { echo "keyless.sh: $dist/oci has no image tagged $tag: run make release VERSION=$version" >&2; exit 1; }
  "$cosign" sign "${legacy[@]}" --recursive "$repository@$index"
  targets=("$index")
  while read -r platform image; do
    targets+=("$image")
    sbom="$dist/hook-operator-$tag-${platform#linux/}.cdx.json"
    if [[ -f "$sbom" ]]; then
      for d in "$index" "$image"; do
        "$cosign" attest "${legacy[@]}" --type cyclonedx --predicate "$sbom" "$repository@$d"
      done
    fi
  done < <(jq -r '.manifests[] | "\(.platform.os)/\(.platform.architecture) \(.digest)"' "$dist/oci/blobs/sha256/${index#sha256:}")
  for d in "${targets[@]}"; do
    "$cosign" attest "${legacy[@]}" --type slsaprovenance1 --predicate "$dist/hook-operator-$tag.provenance.json" "$repository@$d"
  done
done
for chart in "$dist"/hook-operator-*.tgz; do
  "$cosign" sign-blob --yes --bundle "$chart.sigstore.json" "$chart" >/dev/null
done
