#!/usr/bin/env bash
# The provenance, signatures and attestations of a release: release.sh runs
# it once the images, the chart and the SBOMs are in OUTDIR, before
# SHA256SUMS. It writes
#   hook-operator-TAG.provenance.json   the SLSA v1 provenance predicate of
#                                       each image (always): builder, source
#                                       commit, command, and the materials:
#                                       the Go toolchain, the go.sum files, the Debian lock,
#                                       each Debian root's package sources and
#                                       packages
# and, when HOOK_OPERATOR_SIGNING_KEY names a signing key, in cosign's
# formats (docs/releases.md, "Verifying a release"):
#   oci/ sha256-HEX.sig, sha256-HEX.att the signature of each index and
#                                       image, and their attestations (the
#                                       provenance, the CycloneDX SBOMs),
#                                       pushed with the images by push.sh
#   hook-operator-X.Y.Z.tgz.sig         the chart's signature (cosign
#                                       sign-blob's format)
#   cosign.pub                          the public key they verify with
# Without a key the release is unsigned; the release workflow then signs
# what it pushed with cosign, keyless.
#
# Usage: sign.sh VERSION OUTDIR OCIIMAGE WORKDIR   (OCIIMAGE: the built
#        hack/release/ociimage; WORKDIR: release.sh's, holding root-ARCH-VARIANT.tar)
# Env:   HOOK_OPERATOR_SIGNING_KEY  the key: cosign.key of `cosign
#                                   generate-key-pair` (its password in
#                                   COSIGN_PASSWORD), or an unencrypted PEM
#                                   EC P-256 key
#        RELEASE_STARTED            when the release began (RFC 3339), for the provenance
#        REGISTRY                   the repository the images are pushed to,
#                                   the signatures' identity (make passes its
#                                   REGISTRY; default ghcr.io/hook-operator/hook-operator)
set -euo pipefail
if [[ "${1:-}" == -h || "${1:-}" == --help ]]; then
  sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
  exit 0
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
if [[ $# -ne 4 ]]; then
  sed -n '2,/^set -euo/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}" >&2
  exit 2
fi
version=$1 out=$2 ociimage=$3 work=$4
repository=${REGISTRY:-ghcr.io/hook-operator/hook-operator}
key=${HOOK_OPERATOR_SIGNING_KEY:-}
log() { printf '%s sign.sh: %s\n' "$(date +%T)" "$*" >&2; }
if [[ -n "$key" && ! -f "$key" ]]; then
  echo "sign.sh: HOOK_OPERATOR_SIGNING_KEY=$key is not a file: give the path of cosign.key (docs/releases.md)" >&2
  exit 1
fi

commit=$(git -C "$root" rev-parse HEAD)
# Who built it: the workflow and its run on GitHub Actions, else this machine.
if [[ -n "${GITHUB_WORKFLOW_REF:-}" ]]; then
  builder="${GITHUB_SERVER_URL}/${GITHUB_WORKFLOW_REF}"
  invocation="${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}/actions/runs/${GITHUB_RUN_ID}/attempts/${GITHUB_RUN_ATTEMPT:-1}"
  source="git+${GITHUB_SERVER_URL}/${GITHUB_REPOSITORY}"
else
  builder="https://github.com/hook-operator/hook-operator/tree/main/hack/release#local:$(id -un)@$(hostname)"
  invocation=""
  source="git+https://github.com/hook-operator/hook-operator"
fi
sums=()
for f in go.sum hack/release/ociimage/go.sum hack/tools/kubectl/go.sum hack/tools/helm/go.sum hack/tools/syft/go.sum hack/release/debian.lock; do
  sums+=(-sum "$f=$root/$f")
done

for variant in base python; do
  tag=$version
  [[ "$variant" == base ]] || tag=$version-$variant
  roots=() sboms=()
  for tar in "$work"/root-*-"$variant".tar; do
    arch=${tar#"$work"/root-} arch=${arch%-"$variant".tar}
    roots+=(-root "linux/$arch=$(readlink -f "$tar")")
    sbom="$out/hook-operator-$tag-$arch.cdx.json"
    [[ ! -f "$sbom" ]] || sboms+=(-sbom "linux/$arch=$sbom")
  done
  predicate="$out/hook-operator-$tag.provenance.json"
  "$ociimage" provenance -tag "$tag" -source "$source" -commit "$commit" \
    -command "hack/release/release.sh $version (make release VERSION=$version)" \
    -builder "$builder" -invocation "$invocation" -started "${RELEASE_STARTED:-}" \
    -go "$(go env GOVERSION GOHOSTOS GOHOSTARCH | xargs)" -go-binary "$(go env GOROOT)/bin/go" \
    "${sums[@]}" "${roots[@]}" >"$predicate"
  if [[ -n "$key" ]]; then
    log "signing $tag and its images as $repository, with the provenance and $(( ${#sboms[@]} / 2 )) SBOMs"
    "$ociimage" sign -layout "$out/oci" -tag "$tag" -key "$key" -repository "$repository" \
      -provenance "$predicate" "${sboms[@]}" >/dev/null
  fi
done
if [[ -z "$key" ]]; then
  log "unsigned: HOOK_OPERATOR_SIGNING_KEY is not set (the provenance is written; docs/releases.md says how to sign)"
  exit 0
fi
"$ociimage" sign-blob -key "$key" "$out"/hook-operator-*.tgz >/dev/null
"$ociimage" public-key -key "$key" >"$out/cosign.pub"
log "signed with the key whose public half is $out/cosign.pub"
