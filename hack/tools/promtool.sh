#!/usr/bin/env bash
# Builds the promtool CLI pinned by hack/tools/promtool/go.mod from the Go
# module proxy, once per user and version, and prints the path of the binary.
# A second call with the same version only prints the path. The first build
# takes a few minutes; later ones reuse the Go module and build caches.
# prometheus.sh does the work: it builds the Prometheus server from the same
# pinned module.
#
# Cache: ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/bin/promtool-<version>-nosd/promtool
# Usage: promtool.sh [--path]   (--path prints where the binary goes, building nothing)
set -euo pipefail
exec "$(dirname "${BASH_SOURCE[0]}")/prometheus.sh" promtool "$@"
