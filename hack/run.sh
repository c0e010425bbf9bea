#!/usr/bin/env bash
# `make run`: runs the operator in the foreground against the local cluster
# with the shipped hooks. It installs the shipped CRDs first and applies the
# sample resources of examples/ once the operator is up, so that the
# operators start working at once. Ctrl-C stops it (gracefully).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kubeconfig=$("$root/hack/cluster/up.sh")
export KUBECONFIG="$kubeconfig"
kubectl get nodes >&2
echo "The local cluster is up; use it with:  export KUBECONFIG='$kubeconfig'" >&2

if compgen -G "$root/deploy/crds/*.yaml" >/dev/null; then
  kubectl apply --server-side --field-manager hook-operator-make-run -f "$root/deploy/crds/" >&2
  kubectl wait --for condition=Established --timeout 60s -f "$root/deploy/crds/" >&2
fi

(
  # Apply the samples once the operator has started its watches.
  sleep 3
  for f in "$root"/examples/*.yaml; do
    kubectl apply -f "$f" >&2
  done
  sleep 5
  echo >&2
  echo "--- what the operators did (kubectl get in namespace default):" >&2
  kubectl get configmap hello -n default -o jsonpath='hello ConfigMap greeting: {.metadata.annotations.hook-operator\.dev/greeting}{"\n"}' >&2 || true
  for kind in flighttickets memcacheds sampledbs deployments statefulsets jobs; do
    kubectl get "$kind" -n default >&2 2>/dev/null || true
  done
  echo "--- try:  KUBECONFIG=$kubeconfig kubectl get ft,memcached,sampledb -A -w" >&2
) &

exec "$root/bin/hook-operator" start --hooks-dir "$root/hooks" --kubeconfig "$kubeconfig"
