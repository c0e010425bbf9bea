# syntax=docker/dockerfile:1
# Build stage: the hook-operator binary, statically linked.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY cmd/ cmd/
COPY internal/ internal/
COPY sdk/ sdk/
ARG VERSION=v0.1.0-dev
ARG COMMIT=unknown
RUN CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X github.com/hook-operator/hook-operator/internal/buildinfo.Version=${VERSION} -X github.com/hook-operator/hook-operator/internal/buildinfo.Commit=${COMMIT}" \
      -o /out/hook-operator ./cmd/hook-operator

# Runtime stage: bash and jq for bash hooks, tini as PID 1 (forwards signals,
# reaps the hooks' orphaned children), a non-root user.
FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends bash jq ca-certificates tini \
 && rm -rf /var/lib/apt/lists/* \
 && useradd --uid 65532 --user-group --no-create-home --home-dir /nonexistent hook-operator \
 && mkdir -p /hooks
COPY --from=build /out/hook-operator /usr/local/bin/hook-operator
USER 65532:65532
ENTRYPOINT ["/usr/bin/tini", "--", "/usr/local/bin/hook-operator"]
CMD ["start", "--hooks-dir", "/hooks", "--tmp-dir", "/tmp"]
