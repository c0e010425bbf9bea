# hook-operator developer tasks. `make help` lists them.
SHELL := /usr/bin/env bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

MODULE     := github.com/hook-operator/hook-operator
VERSION    ?= $(shell git describe --tags --exact-match 2>/dev/null || echo v0.1.0-dev)
COMMIT     ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS    := -X $(MODULE)/internal/buildinfo.Version=$(VERSION) -X $(MODULE)/internal/buildinfo.Commit=$(COMMIT)
TEST_TIMEOUT ?= 45m
# The platforms hook-operator must build for: hook authors run test and replay
# on macOS.
CROSS_PLATFORMS := linux/amd64 linux/arm64 darwin/amd64 darwin/arm64

.PHONY: help build cross hooks vet unit test cluster cluster-down cluster-binaries run clean

help: ## list the targets
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-16s %s\n", $$1, $$2}'

# Built as the image's is (hack/release/files.sh: without cgo, paths
# trimmed, these -ldflags; deploy/'s TestReleaseFilesBuild keeps them in
# step), so that make bench measures the binary the image ships: with cgo,
# the binary also maps libc and its resolver, 1.6 MB more resident memory
# at idle.
build: ## build bin/hook-operator as the image does (CGO_ENABLED=0)
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/hook-operator ./cmd/hook-operator

# linux/amd64 is built with the image's and the release's flags
# (CGO_ENABLED=0, -trimpath), so that what it compiles is not compiled again
# by make image, make release, vet or the tests (internal/gobuild). The other
# platforms are type-checked from source and vetted by hack/crosscheck:
# building them compiled the whole dependency tree once per platform, about
# a minute each, and darwin's vet two more, on a new 2-core machine
# (docs/development.md); make release builds linux/arm64 for real.
cross: ## build ./cmd/hook-operator for linux/amd64 (output discarded); type-check and vet every package, tests too, for the other CROSS_PLATFORMS
	CGO_ENABLED=0 GOOS=linux GOARCH=amd64 go build -trimpath -o /dev/null ./cmd/hook-operator
	go -C hack/crosscheck run . -dir ../.. $(filter-out linux/amd64,$(CROSS_PLATFORMS))

hooks: ## build the Go hooks: hooks/<d>/<d> from the Go package in hooks/<d>
	@for pkg in $$(go list -f '{{if .GoFiles}}{{.ImportPath}}{{end}}' ./hooks/... 2>/dev/null); do \
		d=$${pkg#$(MODULE)/}; echo "go build -o $$d/$$(basename $$d) ./$$d"; \
		go build -o "$$d/$$(basename $$d)" "./$$d"; \
	done

# With the image's flags, as make cross and the tests' builds (see cross).
vet: ## go vet (CGO_ENABLED=0, -trimpath, as the image builds) and gofmt check
	CGO_ENABLED=0 go vet -trimpath ./...
	@unformatted=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [[ -n "$$unformatted" ]]; then echo "gofmt would change: $$unformatted" >&2; exit 1; fi

unit: ## unit tests only (no cluster)
	go test -race -count=1 -skip 'Integration' ./...

# Tests of a package that call t.Parallel run TEST_PARALLEL at a time (go
# test's default: one per core). The integration tests mostly wait for the
# cluster and for hooks: 4 at a time took cmd/hook-operator/ from 207 to
# 145 s on 2 cores (docs/development.md).
TEST_PARALLEL ?= 4
test: vet cross cluster image ## vet, cross-builds, the image, then unit and integration tests against the local cluster (the image's run with podman among them); removes the clusters the tests started for themselves when they end
	rc=0; go test -race -count=1 -parallel $(TEST_PARALLEL) -timeout $(TEST_TIMEOUT) -skip '$(TRACING_TESTS)' ./... || rc=$$?; \
	(cd hack/release/ociimage && go test -race -count=1 -skip '^TestCosign' ./...) || rc=$$?; \
	(cd hack/crosscheck && go test -count=1 ./...) || rc=$$?; \
	hack/cluster/down.sh --tests; exit $$rc

# The tests that need Jaeger, which takes 13 minutes to build on a fresh
# machine (760 CPU seconds): make test-tracing runs them, and CI runs it
# after make test (.ci/run).
TRACING_TESTS := ^TestIntegration(Tracing|Jaeger)
.PHONY: test-tracing
test-tracing: cluster ## the tracing tests, against a real Jaeger built from its Go module (make jaeger; CI runs them after make test)
	rc=0; go test -race -count=1 -timeout 30m -run '$(TRACING_TESTS)' ./cmd/hook-operator/ ./internal/jaegertest/ || rc=$$?; \
	hack/cluster/down.sh --tests; exit $$rc

.PHONY: test-hostile
test-hostile: cluster ## only the hostile suite (part of make test): attacks on the listeners, resident hooks, hook metrics, the hooks folder and reloads, against a real operator on the local cluster
	go test -race -count=1 -v -run 'TestIntegrationHostile' ./cmd/hook-operator/

.PHONY: test-fresh test-loaded
test-fresh: ## make test, then make test-tracing (.ci/run), as on a new machine: a fresh clone of HEAD, empty caches (HOOK_OPERATOR_CACHE, GOCACHE, HOME, podman storage); prints its wall time
	hack/test-fresh.sh

TEST_RUNS ?= 3
test-loaded: ## make test TEST_RUNS times in a row (default 3) beside a CPU burner on every core; reports how many passed
	hack/test-loaded.sh $(TEST_RUNS)

.PHONY: test-matrix
# The Kubernetes releases make test-matrix runs on; empty: its default list
# (hack/test-matrix.sh: the oldest supported, two between, the one before
# the pinned one, the pinned one).
KUBE_VERSIONS ?=
test-matrix: ## the integration, conformance, fault and deploy suites on each Kubernetes release of KUBE_VERSIONS (default v1.31.13 v1.33.5 v1.35.0 v1.36.3 v1.37.2), each on a cluster of its own; writes the table into docs/compatibility.md (not part of make test; about 15 min a release on 2 cores, plus 10 to build one not cached)
	KUBE_VERSIONS='$(KUBE_VERSIONS)' hack/test-matrix.sh

cluster-binaries: ## build the pinned cluster binaries into the per-user cache (once)
	@hack/cluster/build.sh >/dev/null

cluster: ## start (or reuse) the local cluster; prints its kubeconfig
	@hack/cluster/up.sh

cluster-down: ## stop and remove the local cluster (binaries stay cached)
	@hack/cluster/down.sh

.PHONY: image
IMAGE ?= hook-operator:dev
image: ## load the release's image of this machine's architecture (make release's bytes) into podman, or docker if a daemon answers, as IMAGE (default hook-operator:dev)
	@hack/image/build.sh $(IMAGE)

.PHONY: image-dockerfile
IMAGE_DOCKERFILE ?= hook-operator:dockerfile
image-dockerfile: ## build the top-level Dockerfile (the release's scripts in a build stage) as docker build . does, with podman and this machine's settings or docker, as IMAGE_DOCKERFILE (default hook-operator:dockerfile)
	@hack/image/dockerfile.sh $(IMAGE_DOCKERFILE)

.PHONY: chart
chart: ## package the Helm chart for VERSION (vX.Y.Z) into dist/, after helm lint --strict
	@hack/release/chart.sh $(VERSION) dist

.PHONY: release release-check release-push release-sign-keyless
# Where released images go: make release-push pushes there, and deploy/ and
# the chart name it (deploy/release_test.go keeps them in step).
REGISTRY ?= ghcr.io/hook-operator/hook-operator
release: ## write release VERSION (vX.Y.Z) into dist/: amd64+arm64 images (and -python) as an OCI layout, binaries, chart, SBOMs, SLSA provenance, SHA256SUMS; signed with HOOK_OPERATOR_SIGNING_KEY (cosign.key) if set
	@REGISTRY='$(REGISTRY)' hack/release/release.sh $(VERSION) dist

release-check: release ## make release, then check dist/: both architectures (each image's executables of its own), the SBOMs, SHA256SUMS (make test checks a release of its own of this machine's architecture, without SBOMs)
	HOOK_OPERATOR_RELEASE_DIR=$(CURDIR)/dist HOOK_OPERATOR_RELEASE_VERSION=$(VERSION) \
		go test -count=1 -run '^TestRelease' ./deploy
	cosign=$$(hack/tools/cosign.sh) && cd hack/release/ociimage && HOOK_OPERATOR_COSIGN=$$cosign \
		HOOK_OPERATOR_RELEASE_DIR=$(CURDIR)/dist HOOK_OPERATOR_RELEASE_VERSION=$(VERSION) go test -count=1 -v -run '^TestCosign' .

release-sign-keyless: ## after release-push, in the release workflow: sign REGISTRY's images and dist/'s chart keyless with cosign (the workflow's OIDC identity), attest the provenance and SBOMs
	@hack/release/keyless.sh $(VERSION) $(REGISTRY) dist

.PHONY: release-repro
# The architectures make release-repro builds (release.sh's RELEASE_ARCHES;
# empty: release.sh's default, both).
ARCHES ?=
release-repro: ## build release VERSION twice, the second with an empty release cache (roots unpacked again), and compare every image index and manifest digest and SHA256SUMS (the provenance left out); prints what differs; ARCHES=amd64 for a quicker check; unsigned; not part of make test
	@RELEASE_ARCHES='$(ARCHES)' hack/release/repro.sh $(VERSION)

.PHONY: debian-lock
debian-lock: ## pin the Debian packages of the release roots: resolve them against today's bookworm suites (mmdebstrap) and write hack/release/debian.lock (commit it)
	@hack/release/debian-lock.sh

.PHONY: cosign
cosign: ## build the pinned cosign (hack/tools/cosign), which make release-check verifies the release with, into the per-user cache (once); prints its path
	@hack/tools/cosign.sh

release-push: ## push the images make release wrote to REGISTRY:VERSION and REGISTRY:VERSION-python, with their signatures and attestations if signed (docker login first)
	@hack/release/push.sh $(VERSION) $(REGISTRY) dist

.PHONY: helm deploy shell-operator conformance monitoring promtool prometheus jaeger
helm: ## build the pinned helm (hack/tools/helm) into the per-user cache (once); prints its path
	@hack/tools/helm.sh

shell-operator: ## build the pinned shell-operator, the reference (hack/tools/shell-operator), into the per-user cache (once); prints its path
	@hack/tools/shell-operator.sh

# REFERENCE: another shell-operator binary for make conformance to compare
# with (HOOK_OPERATOR_REFERENCE_BIN); empty, the pinned one.
REFERENCE ?=
CONFORMANCE_TESTS := TestReference|TestEveryExampleIsCoveredOrExcluded|TestIntegrationConformance
conformance: cluster ## the differential suite: every case of conformance/cases under shell-operator and hook-operator, compared (part of make test); REFERENCE=<binary> compares with another shell-operator than the pinned one
	HOOK_OPERATOR_REFERENCE_BIN='$(REFERENCE)' go test -count=1 -v -run '$(CONFORMANCE_TESTS)' ./conformance

# shell-operator from local sources (docs/development.md says where to get
# them): a tag the module proxy does not serve. Opt-in, never part of make test.
SHELL_OPERATOR_SRC ?=
MODULE_SDK_SRC ?=
REF ?= v1.20.3
.PHONY: shell-operator-src conformance-src
shell-operator-src: ## build shell-operator REF (default v1.20.3) from SHELL_OPERATOR_SRC, with MODULE_SDK_SRC for module-sdk (git dirs or checkouts), into the per-user cache (once); prints its path
	@SHELL_OPERATOR_SRC='$(SHELL_OPERATOR_SRC)' MODULE_SDK_SRC='$(MODULE_SDK_SRC)' REF='$(REF)' hack/tools/shell-operator-src.sh

conformance-src: cluster ## make conformance against the shell-operator make shell-operator-src builds (same variables); not part of make test
	bin=$$(SHELL_OPERATOR_SRC='$(SHELL_OPERATOR_SRC)' MODULE_SDK_SRC='$(MODULE_SDK_SRC)' REF='$(REF)' hack/tools/shell-operator-src.sh); \
	HOOK_OPERATOR_REFERENCE_BIN="$$bin" go test -count=1 -v -run '$(CONFORMANCE_TESTS)' ./conformance

deploy: ## regenerate deploy/rbac.yaml and the Helm chart's generated parts from the hooks and CRDs
	@hack/gen-deploy.sh

promtool: ## build the pinned promtool (hack/tools/promtool) into the per-user cache (once); prints its path
	@hack/tools/promtool.sh

prometheus: ## build the Prometheus server of promtool's pinned module into the per-user cache (once; the live monitoring test's); prints its path
	@hack/tools/prometheus.sh

jaeger: ## build the pinned Jaeger (hack/tools/jaeger), the tracing tests' trace backend, into the per-user cache (once); prints its path
	@hack/tools/jaeger.sh

monitoring: ## regenerate the PrometheusRule and the chart's copies from deploy/monitoring/alerts.yaml and dashboard.json
	@hack/gen-monitoring.sh

run: build hooks ## build, start the local cluster, run the operator with hooks/ (Ctrl-C stops)
	@hack/run.sh

# Each fuzz target and its package; `make fuzz` runs each for FUZZTIME.
FUZZTIME ?= 30s
FUZZ_TARGETS := FuzzParseConfig:./internal/hook FuzzParse:./internal/ops FuzzParseHookOps:./internal/metrics \
	FuzzReadObjects:./internal/fixture FuzzEncodeRoundTrip:./internal/binding

.PHONY: fuzz
fuzz: ## fuzz every parser for FUZZTIME each (default 30s); make test runs their seed corpora
	@for t in $(FUZZ_TARGETS); do \
		echo "go test -run '^$$' -fuzz '^$${t%%:*}$$' -fuzztime $(FUZZTIME) $${t#*:}"; \
		go test -run '^$$' -fuzz "^$${t%%:*}\$$" -fuzztime $(FUZZTIME) "$${t#*:}" || exit 1; \
	done

.PHONY: bench
bench: build cluster ## measure speed and memory on the local cluster beside shell-operator, the pinned reference (about 55 min; first removes the clusters make test started for itself, whose control planes would skew the figures); BENCH_FLAGS=--quick for a short run; results in bench/results/
	hack/cluster/down.sh --tests
	go run ./bench $(BENCH_FLAGS)

SOAK_DURATION ?= 30m

.PHONY: soak
soak: build ## 3 sharded replicas, churn and faults for SOAK_DURATION (default 30m) on a cluster of their own; checks and plots in soak/results/ (not part of make test; docs/soak.md)
	go run ./soak --duration $(SOAK_DURATION)

# The results make bench-report draws: a bench's JSON (only a full run
# writes latest.json; name another, e.g. bench/results/<time>.json) and a
# soak's (default: the newest in soak/results/).
BENCH_RESULTS ?= bench/results/latest.json
SOAK_RESULTS ?= $(lastword $(sort $(wildcard soak/results/*.json)))

.PHONY: bench-report
bench-report: ## draw the charts of docs/benchmarks.md into docs/img/ from saved results: the burst's latency distribution from BENCH_RESULTS (default bench/results/latest.json), the soak's memory from SOAK_RESULTS (default the newest soak/results/*.json)
	go run ./bench chart --out docs/img/bench-burst-latency.svg $(BENCH_RESULTS)
	go run ./soak chart --out docs/img/soak-memory.svg $(SOAK_RESULTS)

clean: ## remove build output (not the cluster or its cached binaries)
	rm -rf bin/
	@for pkg in $$(go list -f '{{if .GoFiles}}{{.ImportPath}}{{end}}' ./hooks/... 2>/dev/null); do d=$${pkg#$(MODULE)/}; rm -f "$$d/$$(basename $$d)"; done
