#!/usr/bin/env bash
# `make run`: runs the operator in the foreground against the local cluster
# with the shipped hooks, and applies the examples once it is up so that
# events flow at once. Ctrl-C stops it (gracefully).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
kubeconfig=$("$root/hack/cluster/up.sh")
export KUBECONFIG="$kubeconfig"
kubectl get nodes >&2
echo "The local cluster is up; use it with:  export KUBECONFIG='$kubeconfig'" >&2

(
  # Apply the examples once the operator has started its watches.
  sleep 3
  kubectl apply -f "$root/examples/hello-configmap.yaml" >&2
  sleep 2
  echo >&2
  echo "--- the hook's answer:" >&2
  kubectl get configmap hello -n default -o jsonpath='{.metadata.annotations.hook-operator\.dev/greeting}{"\n"}' >&2
  echo "--- change it and watch the log:  KUBECONFIG=$kubeconfig kubectl patch configmap hello -p '{\"data\":{\"name\":\"you\"}}'" >&2
) &

exec "$root/bin/hook-operator" start --hooks-dir "$root/hooks" --kubeconfig "$kubeconfig"
