# The hook-operator image, built from source:
#
#   docker build --build-arg VERSION=v1.2.3 --build-arg COMMIT=$(git rev-parse --short HEAD) -t hook-operator .
#
# (or podman build). It is the release's image (make release): the release's
# own scripts build it. hack/release/rootfs.sh unpacks the Debian bookworm
# root from exactly the packages hack/release/debian.lock pins (fetched by
# pool path, checked by SHA-256), hack/release/files.sh builds the image's
# own files (the operator, kubectl, the hooks, shell-operator's shell
# framework), and the image is those two trees, as the release's two
# layers, on nothing, with the release's settings (hack/release/release.sh's
# config.json). deploy/'s TestIntegrationDockerfileImage builds this file
# and holds its image equal to the release's: the same files, modes, owners
# and contents, the same Debian packages, the same settings.
#
# The build stage runs on the builder's platform and cross-builds for the
# target's (TARGETARCH, amd64 or arm64) without running any of its
# programs, as make release does: `docker buildx build --platform
# linux/arm64 .` needs no emulation. It reaches deb.debian.org (or
# snapshot.debian.org for a version Debian has superseded) and the Go
# module proxy. A custom image starts FROM this one (docs/migrating.md,
# "Image").

FROM --platform=$BUILDPLATFORM golang:1.26.8-bookworm AS build
# TARGETARCH is set by BuildKit and recent podman; where the builder leaves
# it empty (the classic builder, podman 4.3), the build image's
# architecture is built.
ARG TARGETARCH
ENV HOOK_OPERATOR_CACHE=/cache GOCACHE=/root/.cache/go-build GOMODCACHE=/go/pkg/mod
WORKDIR /src

# kubectl, pinned by hack/tools/kubectl at the Kubernetes version of
# versions.env: minutes to build from empty caches, so first; this layer
# depends on the pin alone.
COPY hack/release/kubectl.sh hack/release/
COPY hack/cluster/versions.env hack/cluster/
COPY hack/tools/kubectl/go.mod hack/tools/kubectl/go.sum hack/tools/kubectl/
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    hack/release/kubectl.sh "${TARGETARCH:-$(go env GOARCH)}"

# The Debian root, which rootfs.sh and the lock alone decide; unpacked
# with the packages' owners and modes (root here, as rootfs.sh wants).
COPY hack/release/rootfs.sh hack/release/debian.lock hack/release/
RUN arch=${TARGETARCH:-$(go env GOARCH)} \
 && tar=$(hack/release/rootfs.sh "$arch" base) \
 && mkdir /image-root \
 && tar -C /image-root -xf "$tar" --same-owner --same-permissions --numeric-owner \
 && rm -rf "$tar" /cache/release/debs

# The image's own files: the operator, the Go hooks and the shipped hooks,
# shell-operator's shell framework (pinned by hack/tools/shell-operator),
# and kubectl from the cache above.
COPY go.mod go.sum ./
COPY cmd/ cmd/
COPY internal/ internal/
COPY sdk/ sdk/
COPY hooks/ hooks/
COPY hack/tools/shell-operator/go.mod hack/tools/shell-operator/go.sum hack/tools/shell-operator/
COPY hack/release/files.sh hack/release/
ARG VERSION=v0.1.0-dev
ARG COMMIT=unknown
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    hack/release/files.sh "${TARGETARCH:-$(go env GOARCH)}" "$VERSION" "$COMMIT" /image-files

# The image: the root, then the image's own files, and the release's
# settings (release.sh's config.json, in the same order).
FROM scratch
COPY --from=build /image-root/ /
COPY --from=build /image-files/ /
ARG VERSION=v0.1.0-dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="hook-operator" \
      org.opencontainers.image.description="A Kubernetes operator runtime: a folder of executable hooks (bash or Go) becomes an operator" \
      org.opencontainers.image.source="https://github.com/hook-operator/hook-operator" \
      org.opencontainers.image.url="https://github.com/hook-operator/hook-operator" \
      org.opencontainers.image.documentation="https://github.com/hook-operator/hook-operator/tree/main/docs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}"
# HOME points kubectl's cache at the writable /tmp. The hooks folder is
# named by shell-operator's own variable, and CMD is start alone, as in
# shell-operator's image, so that a Deployment's SHELL_OPERATOR_* settings
# win (a variable of ours, or a flag, would win over them); a shell in the
# container (kubectl exec) finds the hooks by it too.
ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    SHELL_OPERATOR_HOOKS_DIR=/hooks \
    HOME=/tmp
EXPOSE 9115
# Not root, unlike shell-operator's image (docs/migrating.md, "Image").
USER 65532:65532
# tini forwards SIGTERM to the operator, which gives running hooks their
# grace period and reaps their orphans itself (docs/guarantees.md).
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/hook-operator"]
CMD ["start"]
