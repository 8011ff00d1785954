#!/usr/bin/env bash
# make demo: start the local control plane, install KICK's CRDs, run the
# manager against it and say what to try. With DEMO_EXIT=1 it checks that
# everything came up and exits (0 only on success) instead of waiting.
set -euo pipefail

bin=${1:?usage: demo.sh BIN_DIR K8S_BIN_DIR}
k8s=${2:?usage: demo.sh BIN_DIR K8S_BIN_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
dir="$root/.demo"
mkdir -p "$dir"
say() { printf '\n\033[1m[demo] %s\033[0m\n' "$*"; }

pids=()
cleanup() {
  local code=$?
  say "stopping"
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  exit "$code"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

say "starting the local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok)"
"$bin/kick-devcluster" up --dir "$dir/cluster" --bin-dir "$k8s" --kick-crds "$root/deploy/crds" \
  >"$dir/devcluster.out" 2>"$dir/devcluster.err" &
pids+=($!)
for _ in $(seq 1 300); do
  grep -q '^ready' "$dir/devcluster.out" 2>/dev/null && break
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "kick-devcluster failed:"; cat "$dir/devcluster.err"; exit 1
  fi
  sleep 1
done
grep -q '^ready' "$dir/devcluster.out" || { echo "kick-devcluster did not become ready"; cat "$dir/devcluster.err"; exit 1; }
cat "$dir/devcluster.out"

export KUBECONFIG="$dir/cluster/kubeconfig"
kubectl="$k8s/kubectl"
"$kubectl" create namespace kick-system >/dev/null

say "starting kick-manager (log: $dir/manager.log)"
"$bin/kick-manager" --kubeconfig "$KUBECONFIG" --namespace kick-system \
  --metrics-bind-address 127.0.0.1:18080 --health-probe-bind-address 127.0.0.1:18081 \
  >"$dir/manager.log" 2>&1 &
pids+=($!)
for _ in $(seq 1 60); do
  curl -fsS http://127.0.0.1:18081/readyz >/dev/null 2>&1 && break
  if ! kill -0 "${pids[1]}" 2>/dev/null; then
    echo "kick-manager failed:"; cat "$dir/manager.log"; exit 1
  fi
  sleep 1
done
curl -fsS http://127.0.0.1:18081/readyz >/dev/null || { echo "kick-manager is not ready"; cat "$dir/manager.log"; exit 1; }

say "KICK's CRDs on the cluster"
"$kubectl" get crd -o name | grep kick.corewire.io

cat <<EOF

Try it:
  export KUBECONFIG=$KUBECONFIG
  $kubectl explain kickpolicy.spec
  $kubectl get kick -A
  curl -s http://127.0.0.1:18080/metrics | grep -E '^(controller_runtime|workqueue)' | head

EOF
if [[ "${DEMO_EXIT:-0}" == "1" ]]; then
  say "DEMO_EXIT=1: everything came up; exiting"
  exit 0
fi
say "running; press Ctrl-C to stop"
wait "${pids[0]}"
