#!/usr/bin/env bash
# Starts the local Kubernetes cluster (kwokctl, binary runtime, one fake Node),
# or reuses it when it is healthy, and prints the path of its kubeconfig on
# stdout. Progress goes to stderr. Safe to call from several processes at
# once: callers queue on a lock and the later ones reuse the cluster.
#
#   state:      ${HOOK_OPERATOR_CACHE:-~/.cache/hook-operator}/cluster/
#   kubeconfig: <state>/kubeconfig
#
# HOOK_OPERATOR_CLUSTER=NAME starts (or reuses) another cluster, NAME, with
# its state in <cache>/cluster-NAME/: tests that stop the control plane use
# one of their own, so that they disturb no other test.
# HOOK_OPERATOR_CLUSTER_FEATURE_GATES=Gate=true,... turns on Kubernetes
# feature gates (kwokctl's --kube-feature-gates), for a cluster of its own
# (alpha features are not turned on in the shared one).
# HOOK_OPERATOR_KUBE_VERSION=v1.X.Y runs another Kubernetes release than the
# pinned one (make test-matrix; build.sh builds it); a running cluster of
# another release is made again.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cache=${HOOK_OPERATOR_CACHE:-$HOME/.cache/hook-operator}
name=hook-operator
state="$cache/cluster"
if [[ -n "${HOOK_OPERATOR_CLUSTER:-}" && "$HOOK_OPERATOR_CLUSTER" != hook-operator ]]; then
  [[ "$HOOK_OPERATOR_CLUSTER" =~ ^[a-z0-9][a-z0-9-]{0,40}$ ]] || { echo "up.sh: HOOK_OPERATOR_CLUSTER must be a lowercase name, not ${HOOK_OPERATOR_CLUSTER@Q}" >&2; exit 2; }
  name=$HOOK_OPERATOR_CLUSTER
  state="$cache/cluster-$name"
fi
kubeconfig="$state/kubeconfig"
node=fake-node-0
export KWOK_WORKDIR="$state/kwok"

log() { printf '%s up.sh: %s\n' "$(date +%T)" "$*" >&2; }
kc() { kubectl --kubeconfig "$kubeconfig" --request-timeout=10s "$@"; }

mkdir -p "$state"
chmod 700 "$state"
exec 9>"$state/.lock"
flock 9

# How the cluster is made. A cluster made otherwise (by an older up.sh) is
# made again. Leader election is off: a single kube-controller-manager and
# kube-scheduler need no lease, and with one they exit for good when a busy
# machine keeps them from renewing it in time (seen with two cores fuzzing).
create_args=(
  --runtime binary
  --disable-qps-limits
  --extra-args kube-controller-manager=leader-elect=false
  --extra-args kube-scheduler=leader-elect=false
)
if [[ -n "${HOOK_OPERATOR_CLUSTER_FEATURE_GATES:-}" ]]; then
  [[ "$name" != hook-operator ]] || { echo "up.sh: HOOK_OPERATOR_CLUSTER_FEATURE_GATES needs a cluster of its own: set HOOK_OPERATOR_CLUSTER too" >&2; exit 2; }
  create_args+=(--kube-feature-gates "$HOOK_OPERATOR_CLUSTER_FEATURE_GATES")
fi
stamp="$state/create-args"
# The release is part of how the cluster is made (see build.sh).
source "$here/versions.env"
kube_version=${HOOK_OPERATOR_KUBE_VERSION:-$KUBE_VERSION}
stamp_text="${create_args[*]} kubernetes=$kube_version"

# Every control-plane process still runs (kwokctl does not restart them).
alive() {
  local pids="$KWOK_WORKDIR/clusters/$name/pids" f
  [[ -d "$pids" ]] || return 1
  for f in "$pids"/*.pid; do
    [[ -e "$f" ]] && kill -0 "$(cat "$f")" 2>/dev/null || return 1
  done
}

healthy() {
  [[ -s "$kubeconfig" ]] &&
    [[ "$(cat "$stamp" 2>/dev/null)" == "$stamp_text" ]] &&
    alive &&
    kc get --raw=/readyz >/dev/null 2>&1 &&
    kc get node "$node" >/dev/null 2>&1
}

if healthy; then
  log "reusing the running cluster"
  echo "$kubeconfig"
  exit 0
fi

bin=$("$here/build.sh")
kwokctl="$bin/kwokctl"

# Whatever is left is stale (its processes are gone, e.g. after a reboot, or
# a start was interrupted): remove it and start clean.
if [[ -d "$KWOK_WORKDIR/clusters/$name" ]]; then
  log "removing a stale cluster"
  "$kwokctl" delete cluster --name "$name" --kubeconfig "$kubeconfig" >&2 9>&- ||
    rm -rf "$KWOK_WORKDIR/clusters/$name"
fi
rm -f "$kubeconfig"

# not_started says why the cluster did not come up, and fails: the API
# server's last words (an unknown feature gate, a flag this release lacks)
# are in its log.
not_started() {
  local component f
  for component in kube-apiserver etcd; do # etcd's only when the API server wrote nothing
    f="$KWOK_WORKDIR/clusters/$name/logs/$component.log"
    [[ -s "$f" ]] && { echo "up.sh: the last lines of $f:" >&2; tail -n 15 "$f" >&2; break; }
  done
  echo "up.sh: cluster $name (Kubernetes $kube_version${HOOK_OPERATOR_CLUSTER_FEATURE_GATES:+, feature gates $HOOK_OPERATOR_CLUSTER_FEATURE_GATES}) did not start; hack/cluster/down.sh with the same HOOK_OPERATOR_CLUSTER removes what is left" >&2
  exit 1
}

log "starting cluster $name"
"$kwokctl" create cluster \
  --name "$name" \
  "${create_args[@]}" \
  --etcd-binary "$bin/etcd" \
  --kube-apiserver-binary "$bin/kube-apiserver" \
  --kube-controller-manager-binary "$bin/kube-controller-manager" \
  --kube-scheduler-binary "$bin/kube-scheduler" \
  --kwok-controller-binary "$bin/kwok" \
  --kubeconfig "$kubeconfig" \
  --wait 2m >&2 9>&- || not_started # the daemons it starts must not inherit (and hold) the lock
# kwokctl may return with an API server that never came up (it only warns).
kc get --raw=/readyz >/dev/null 2>&1 || not_started
chmod 600 "$kubeconfig"
echo "$stamp_text" >"$stamp"

# A fake Node: kwok's controller owns nodes with this annotation, keeps them
# Ready, and marks the Pods scheduled onto them Running.
kc apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Node
metadata:
  name: $node
  annotations:
    node.alpha.kubernetes.io/ttl: "0"
    kwok.x-k8s.io/node: fake
  labels:
    kubernetes.io/hostname: $node
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
status:
  allocatable: {cpu: "64", memory: 256Gi, pods: "1000"}
  capacity: {cpu: "64", memory: 256Gi, pods: "1000"}
YAML
kc wait --for=condition=Ready "node/$node" --timeout=60s >/dev/null
# The default ServiceAccount must exist before Pods can be created in a namespace.
for _ in $(seq 1 60); do
  kc get serviceaccount default -n default >/dev/null 2>&1 && break
  sleep 0.5
done
log "cluster ready"
echo "$kubeconfig"
