# syntax=docker/dockerfile:1
#
# The hook-operator image: the operator, kubectl, bash and jq for bash hooks,
# shell-operator's shell framework (/shell_lib.sh), the bash helpers in
# /hooks/lib, and the shipped demonstration hooks in /examples/hooks. It runs
# only the hooks mounted at /hooks, or in a folder under it (next to lib/);
# `start --hooks-dir /examples/hooks` runs the demonstrations instead.
#
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse --short HEAD) -t hook-operator .
#
# Base images are pinned to exact versions. Where a registry is reachable,
# append their digests (docker buildx imagetools inspect IMAGE) for
# byte-for-byte reproducible builds. deploy/deploy_test.go checks this file.

# Build stage: hook-operator, the Go hooks, and kubectl, all statically linked.
FROM golang:1.26.8-bookworm AS build
ENV CGO_ENABLED=0 GOFLAGS="-trimpath -buildvcs=false"
WORKDIR /src

# kubectl for bash hooks, built from the tool module hack/tools/kubectl at
# the Kubernetes version the local test cluster runs (versions.env), so it
# matches the tested API server and go.sum verifies its source. Debian
# bookworm's kubernetes-client is v1.20, far outside kubectl's version skew.
# This layer depends only on the pin: it is rebuilt when the pin moves.
COPY hack/cluster/versions.env hack/tools/kubectl/go.mod hack/tools/kubectl/go.sum /src/kubectl/
RUN cd /src/kubectl \
 && . ./versions.env \
 && minor=${KUBE_VERSION#v1.} && minor=${minor%%.*} \
 && go build -o /out/kubectl -ldflags "-s -w \
      -X k8s.io/component-base/version.gitVersion=${KUBE_VERSION} \
      -X k8s.io/component-base/version.gitMajor=1 \
      -X k8s.io/component-base/version.gitMinor=${minor} \
      -X k8s.io/component-base/version.gitTreeState=clean \
      -X k8s.io/client-go/pkg/version.gitVersion=${KUBE_VERSION} \
      -X k8s.io/client-go/pkg/version.gitMajor=1 \
      -X k8s.io/client-go/pkg/version.gitMinor=${minor}" \
      k8s.io/kubernetes/cmd/kubectl \
 && /out/kubectl version --client | grep -F "${KUBE_VERSION}"

# shell-operator's shell framework, which hooks written for shell-operator's
# image source by these paths: /shell_lib.sh and /frameworks/shell/. Taken
# from the shell-operator module pinned by hack/tools/shell-operator (its
# go.sum verifies the content), with the module's licence; nothing of it is
# kept in this repository.
COPY hack/tools/shell-operator/go.mod hack/tools/shell-operator/go.sum /src/shell-operator/
RUN cd /src/shell-operator \
 && go mod download github.com/flant/shell-operator \
 && dir=$(go list -m -f '{{.Dir}}' github.com/flant/shell-operator) \
 && mkdir -p /out/shell-framework/frameworks \
 && cp "$dir/shell_lib.sh" "$dir/LICENSE" /out/shell-framework/ \
 && cp -R "$dir/frameworks/shell" /out/shell-framework/frameworks/shell \
 && chmod -R u+w,a+rX,go-w /out/shell-framework

COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY internal/ internal/
COPY sdk/ sdk/
COPY hooks/ hooks/

# The same -ldflags as the Makefile's build target.
ARG VERSION=v0.1.0-dev
ARG COMMIT=unknown
RUN go build -o /out/hook-operator \
      -ldflags "-X github.com/hook-operator/hook-operator/internal/buildinfo.Version=${VERSION} -X github.com/hook-operator/hook-operator/internal/buildinfo.Commit=${COMMIT}" \
      ./cmd/hook-operator

# /out/hooks: the shipped hooks without Go sources, tests or fixtures, plus
# each Go hook's executable built as hooks/<d>/<d> (as `make hooks` does).
RUN cp -a hooks /out/hooks \
 && find /out/hooks \( -name '*.go' -o -name go.mod -o -name go.sum \) -type f -delete \
 && find /out/hooks -name testdata -type d -prune -exec rm -rf {} + \
 && for d in $(go list -f '{{if and (eq .Name "main") .GoFiles}}{{.Dir}}{{end}}' ./hooks/...); do \
      d=${d#/src/}; \
      echo "go build -o /out/$d/${d##*/} ./$d"; \
      go build -o "/out/$d/${d##*/}" "./$d" || exit 1; \
    done \
 && find /out/hooks -type d -empty -delete

# Runtime stage: bash, jq and kubectl for bash hooks; tini as PID 1;
# bsdextrautils for the `rev` that shell-operator's shell framework uses.
FROM debian:12.15-slim AS runtime
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash jq ca-certificates tini bsdextrautils \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 hook-operator \
 && useradd --uid 65532 --gid 65532 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin hook-operator

COPY --from=build /out/hook-operator /usr/local/bin/hook-operator
COPY --from=build /out/kubectl /usr/local/bin/kubectl
# Owned by root: the operator's user can run the hooks but not change them.
# The demonstrations are not in /hooks, so that a folder of hooks mounted
# beside lib/ runs alone; lib/ is never taken for hooks.
COPY --from=build /out/hooks/ /examples/hooks/
COPY --from=build /out/hooks/lib/ /hooks/lib/
# shell-operator's shell framework at the paths its image has it.
COPY --from=build /out/shell-framework/shell_lib.sh /shell_lib.sh
COPY --from=build /out/shell-framework/frameworks/ /frameworks/
COPY --from=build /out/shell-framework/LICENSE /usr/share/doc/shell-operator-framework/LICENSE

ARG VERSION=v0.1.0-dev
ARG COMMIT=unknown
LABEL org.opencontainers.image.title="hook-operator" \
      org.opencontainers.image.description="A Kubernetes operator runtime: a folder of executable hooks (bash or Go) becomes an operator" \
      org.opencontainers.image.source="https://github.com/hook-operator/hook-operator" \
      org.opencontainers.image.url="https://github.com/hook-operator/hook-operator" \
      org.opencontainers.image.documentation="https://github.com/hook-operator/hook-operator/tree/main/docs" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${COMMIT}" \
      org.opencontainers.image.base.name="docker.io/library/debian:12.15-slim"

# The settings a shell in the container needs too: `kubectl exec ... --
# hook-operator hooks list` finds the hooks, `... debug queues` the socket
# in /tmp. HOME points kubectl's cache at the writable /tmp.
ENV HOOK_OPERATOR_HOOKS_DIR=/hooks \
    HOOK_OPERATOR_TMP_DIR=/tmp \
    HOOK_OPERATOR_LISTEN_ADDRESS=:9115 \
    HOME=/tmp
EXPOSE 9115
USER 65532:65532

# tini forwards SIGTERM to the operator only (not to its process group: the
# operator gives running hooks their grace period itself). Orphans of hooks
# do not reach tini: the operator is their subreaper, and kills and reaps
# them itself when their run ends (docs/guarantees.md).
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/hook-operator"]
CMD ["start", "--hooks-dir", "/hooks", "--tmp-dir", "/tmp"]
