#!/usr/bin/env bash
# Runs the suites that talk to Kubernetes against each release of a list:
# for each, it builds the control plane (once per release, cached like the
# pinned one; hack/cluster/build.sh), starts a cluster of that release of its
# own, and runs against it
#
#   integration   every TestIntegration* outside conformance/, faults/ and deploy/
#   conformance   the differential suite beside shell-operator (make conformance)
#   faults        the fault suite (its clusters, of the same release)
#   deploy        the chart's and kustomize's manifests, RBAC included,
#                 applied with server-side dry-run
#
# then removes the clusters it started. It prints a table of releases ×
# suites, pass or FAIL and minutes, and writes its rows into
# docs/compatibility.md between its markers (one row per release: a run
# replaces the rows of its releases and keeps the others). Exits 1 when any
# suite failed.
#
# Usage: test-matrix.sh [v1.X.Y ...]   (default: $KUBE_VERSIONS, else the list below)
# Env:   MATRIX_SUITES="integration conformance faults deploy"   a subset to run
#        MATRIX_LOGS=DIR   where each suite's log goes (default: a new folder under /var/tmp)
#        MATRIX_DOC=0      print the table only; leave docs/compatibility.md alone
#                          (a run of a subset of the suites never writes it)
#        MATRIX_TIMEOUT=60m   go test's -timeout for each suite
#
# A release needs its wrapper module, hack/cluster/matrix/<release>/ (written
# by hack/cluster/kube-module.sh), except the pinned one.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# The default list: the oldest release supported, two between, the one
# before the pinned one, and the pinned one.
default_versions="v1.31.13 v1.33.5 v1.35.0 v1.36.3 v1.37.2"
read -r -a versions <<<"${*:-${KUBE_VERSIONS:-$default_versions}}"
read -r -a suites <<<"${MATRIX_SUITES:-integration conformance faults deploy}"
logs=${MATRIX_LOGS:-$(mktemp -d /var/tmp/hook-operator-matrix-XXXXXX)}
mkdir -p "$logs"
timeout=${MATRIX_TIMEOUT:-60m}

log() { printf '%s test-matrix.sh: %s\n' "$(date +%T)" "$*" >&2; }

for s in "${suites[@]}"; do
  case $s in integration | conformance | faults | deploy) ;; *)
    echo "test-matrix.sh: unknown suite ${s@Q} in MATRIX_SUITES; use integration, conformance, faults or deploy" >&2
    exit 2
    ;;
  esac
done

# suite NAME: runs one suite against the cluster the environment names.
suite() {
  case $1 in
  integration)
    # shellcheck disable=SC2046 # one package per word
    go test -v -count=1 -timeout "$timeout" -run Integration \
      $(go list ./... | grep -v -e '/conformance$' -e '/faults$' -e '/deploy$')
    ;;
  conformance)
    go test -v -count=1 -timeout "$timeout" -run 'TestReference|TestEveryExampleIsCoveredOrExcluded|TestIntegrationConformance|TestIntegrationWebhookExamples' ./conformance
    ;;
  faults)
    go test -v -count=1 -timeout "$timeout" -run Integration ./faults
    ;;
  deploy)
    # The image and release tests are left out: they test the image, which is
    # the same on every release.
    go test -v -count=1 -timeout "$timeout" -run 'ServerDryRun|KustomizeWebhookComponent|KustomizeSecurityComponents' ./deploy
    ;;
  esac
}

# minutes SECONDS
minutes() { awk -v s="$1" 'BEGIN { printf "%.1f", s / 60 }'; }

declare -A result
failed=0
started=$(date +%s)
for v in "${versions[@]}"; do
  export HOOK_OPERATOR_KUBE_VERSION=$v
  t0=$(date +%s)
  log "Kubernetes $v: building (or reusing) its binaries"
  if ! hack/cluster/build.sh >"$logs/$v.build.log" 2>&1; then
    log "Kubernetes $v: the build failed; see $logs/$v.build.log"
    for s in "${suites[@]}"; do result[$v/$s]="not built"; done
    failed=1
    continue
  fi
  result[$v/build]=$(minutes $(($(date +%s) - t0)))
  cluster="matrix-${v//./-}"
  log "Kubernetes $v: starting cluster $cluster"
  if ! kubeconfig=$(HOOK_OPERATOR_CLUSTER=$cluster hack/cluster/up.sh 2>"$logs/$v.up.log"); then
    log "Kubernetes $v: the cluster did not start; see $logs/$v.up.log"
    for s in "${suites[@]}"; do result[$v/$s]="no cluster"; done
    failed=1
    continue
  fi
  for s in "${suites[@]}"; do
    log "Kubernetes $v: $s (log: $logs/$v.$s.log)"
    t0=$(date +%s)
    rc=0
    HOOK_OPERATOR_TEST_KUBECONFIG=$kubeconfig suite "$s" >"$logs/$v.$s.log" 2>&1 || rc=$?
    took=$(minutes $(($(date +%s) - t0)))
    # go test -v prints a line per test skipped, subtests indented.
    skipped=$(grep -cE -- '^ *--- SKIP' "$logs/$v.$s.log" || true)
    note=""
    ((skipped == 0)) || note=", $skipped skipped"
    if ((rc == 0)); then
      result[$v/$s]="pass ($took min$note)"
    else
      result[$v/$s]="FAIL ($took min$note)"
      failed=1
      grep -E -m 20 '^(--- FAIL|FAIL)' "$logs/$v.$s.log" >&2 || true
    fi
    log "Kubernetes $v: $s: ${result[$v/$s]}"
  done
  # The clusters of this release: its own, and those its tests started.
  HOOK_OPERATOR_CLUSTER=$cluster hack/cluster/down.sh 2>>"$logs/$v.up.log" || true
  hack/cluster/down.sh --tests 2>>"$logs/$v.up.log" || true
done
unset HOOK_OPERATOR_KUBE_VERSION

commit=$(git rev-parse --short HEAD)
day=$(date -u +%Y-%m-%d)
header="| Kubernetes | run | build (min) |"
rule="| --- | --- | --- |"
for s in "${suites[@]}"; do header+=" $s |" rule+=" --- |"; done
for v in "${versions[@]}"; do
  row="| $v | $day, $commit, $(nproc) CPUs | ${result[$v/build]:-failed} |"
  for s in "${suites[@]}"; do row+=" ${result[$v/$s]:-} |"; done
  printf '%s\n' "$row"
done >"$logs/rows.md"
{ printf '%s\n%s\n' "$header" "$rule"; cat "$logs/rows.md"; } >"$logs/table.md"
cat "$logs/table.md"
echo "$(minutes $(($(date +%s) - started))) min in all; logs: $logs"

# The page keeps one row per release: this run's rows replace those of the
# same releases, and the others stay. Only a run of every suite writes it.
doc=docs/compatibility.md
all_suites="integration conformance faults deploy"
if [[ "${MATRIX_DOC:-1}" != 0 && "${suites[*]}" == "$all_suites" ]]; then
  begin='<!-- matrix:begin -->' end='<!-- matrix:end -->'
  grep -qF "$begin" "$doc" && grep -qF "$end" "$doc" || {
    echo "test-matrix.sh: $doc lacks the markers $begin and $end; the table is in $logs/table.md" >&2
    exit 1
  }
  awk -v begin="$begin" -v end="$end" '$0 == begin { on = 1; next } $0 == end { on = 0 } on && /^\| v[0-9]/' "$doc" >"$logs/old-rows.md"
  {
    printf '%s\n%s\n' "$header" "$rule"
    {
      cat "$logs/rows.md"
      for v in "${versions[@]}"; do printf '/^| %s |/d\n' "${v//./\\.}"; done >"$logs/drop.sed"
      sed -f "$logs/drop.sed" "$logs/old-rows.md"
    } | sort -t'|' -k2,2V
  } >"$logs/block.md"
  awk -v begin="$begin" -v end="$end" -v block="$logs/block.md" '
    $0 == begin { print; while ((getline line < block) > 0) print line; skip = 1; next }
    $0 == end { skip = 0 }
    !skip { print }
  ' "$doc" >"$logs/doc.md"
  cp "$logs/doc.md" "$doc"
  log "wrote the rows of ${versions[*]} into $doc"
fi
exit "$failed"
