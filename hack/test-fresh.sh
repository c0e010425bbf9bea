#!/usr/bin/env bash
# Runs the README's test command as a new user's machine would: in a fresh
# clone of this repository's committed HEAD (uncommitted changes are not in
# it), with an empty HOME, HOOK_OPERATOR_CACHE (cluster binaries, helm, the
# pinned shell-operator, the release's kubectl, Debian packages and roots),
# GOCACHE and podman storage of its own.
# Only the Go module cache is shared: it holds downloads, which a new machine
# fetches from the proxy unchanged. Then, as CI (.ci/run) does, make
# test-tracing, which builds Jaeger. Prints each one's wall time and exits
# with the first failure's status. What the run started (its clusters, its podman storage, its
# folder) is removed when it ends; TEST_FRESH_KEEP=1 keeps the folder.
#
# Podman itself is not uninstalled: a machine that has it runs with it (on a
# machine without it, hack/image/engine.sh installs it, as on a new machine).
#
# Usage: test-fresh.sh [REF]       (default HEAD; the log goes to <dir>/make-test.log)
# Env:   TEST_FRESH_DIR=DIR        where to work (default: a new folder under /var/tmp)
#        TEST_FRESH_KEEP=1         keep that folder afterwards
set -euo pipefail

root=$(git -C "$(dirname "${BASH_SOURCE[0]}")" rev-parse --show-toplevel)
ref=$(git -C "$root" rev-parse --verify "${1:-HEAD}^{commit}")
modcache=$(go env GOMODCACHE)
base=${TEST_FRESH_DIR:-$(mktemp -d /var/tmp/hook-operator-fresh-XXXXXX)}
mkdir -p "$base"
base=$(cd "$base" && pwd)

log() { printf '%s test-fresh.sh: %s\n' "$(date +%T)" "$*" >&2; }

git clone -q --no-local "$root" "$base/src"
git -C "$base/src" checkout -q --detach "$ref"

export HOME="$base/home"
export HOOK_OPERATOR_CACHE="$base/cache"
export GOCACHE="$base/gocache"
export GOMODCACHE="$modcache"
export GOPATH="$base/gopath"
export CONTAINERS_STORAGE_CONF="$base/storage.conf"
unset XDG_CACHE_HOME XDG_CONFIG_HOME XDG_DATA_HOME XDG_RUNTIME_DIR HOOK_OPERATOR_CLUSTER KUBECONFIG
mkdir -p "$HOME" "$HOOK_OPERATOR_CACHE" "$GOCACHE" "$base/containers"
cat > "$CONTAINERS_STORAGE_CONF" <<EOF
[storage]
driver = "overlay"
graphroot = "$base/containers/storage"
runroot = "$base/containers/run"
EOF

cleanup() {
  # The clusters this run started (the shared one of its cache and the tests'
  # own), then its podman storage, whose overlay mounts rm cannot remove.
  (cd "$base/src" && hack/cluster/down.sh --tests && hack/cluster/down.sh) >/dev/null 2>&1 || true
  local m
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(findmnt -rn -o TARGET | awk -v b="$base/" 'index($0, b) == 1' | sort -r)
  if [[ -z "${TEST_FRESH_KEEP:-}" ]]; then
    chmod -R u+w "$base" 2>/dev/null || true
    rm -rf "$base"
  else
    log "kept $base"
  fi
}
trap cleanup EXIT

log "commit $(git -C "$base/src" log -1 --format='%h %s' | cut -c1-100)"
log "in $base; make test's output goes to $base/make-test.log"
start=$(date +%s)
rc=0
(cd "$base/src" && make test) > "$base/make-test.log" 2>&1 || rc=$?
wall=$(( $(date +%s) - start ))
if (( rc != 0 )); then
  tail -n 60 "$base/make-test.log" >&2
  TEST_FRESH_KEEP=1
fi
log "make test from empty caches: $( ((rc == 0)) && echo passed || echo "FAILED (exit $rc)") in $((wall / 60)) min $((wall % 60)) s"
# Then what CI runs after it (.ci/run), with the caches make test left.
start=$(date +%s)
trc=0
(cd "$base/src" && make test-tracing) > "$base/make-test-tracing.log" 2>&1 || trc=$?
twall=$(( $(date +%s) - start ))
if (( trc != 0 )); then
  tail -n 60 "$base/make-test-tracing.log" >&2
  TEST_FRESH_KEEP=1
  rc=$trc
fi
log "make test-tracing after it: $( ((trc == 0)) && echo passed || echo "FAILED (exit $trc)") in $((twall / 60)) min $((twall % 60)) s"
exit "$rc"
