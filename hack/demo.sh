#!/usr/bin/env bash
# make demo: start the local control plane, install KICK's CRDs, run the
# manager and a CloudEvents receiver, apply a sample, change its Secret and
# show the KickRequest succeed, the new ReplicaSet and the delivered event;
# then hold the Secret's restarts (kubectl kick hold), change it again, show
# the request held, release it and show the restart.
# With DEMO_EXIT=1 it exits (0 only if all of that happened) instead of
# running until Ctrl-C.
set -euo pipefail

bin=${1:?usage: demo.sh BIN_DIR K8S_BIN_DIR}
k8s=${2:?usage: demo.sh BIN_DIR K8S_BIN_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
dir="${DEMO_DIR:-$root/.demo}"
mkdir -p "$dir"
DEMO_TAG=demo
# shellcheck source=hack/demo-lib.sh
source "$root/hack/demo-lib.sh"

demo_ports_free 18080 18081 18082 18090

say "starting the local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok)"
demo_bg "$bin/kick-devcluster" up --dir "$dir/cluster" --bin-dir "$k8s" --kick-crds "$root/deploy/crds" \
  >"$dir/devcluster.out" 2>"$dir/devcluster.err"
demo_wait_devcluster "$dir" 300

export KUBECONFIG="$dir/cluster/kubeconfig"
kubectl="$k8s/kubectl"
"$kubectl" create namespace kick-system >/dev/null

say "starting kick-manager (log: $dir/manager.log)"
demo_bg "$bin/kick-manager" --kubeconfig "$KUBECONFIG" --namespace kick-system \
  --metrics-bind-address 127.0.0.1:18080 --health-probe-bind-address 127.0.0.1:18081 \
  --timeline-bind-address 127.0.0.1:18082 \
  --webhook-allow-cidrs 127.0.0.1/32 \
  >"$dir/manager.log" 2>&1
demo_wait_manager 18081 "$dir/manager.log"

say "starting a CloudEvents receiver on 127.0.0.1:18090 (log: $dir/receiver.log)"
demo_bg "$bin/kick-devcluster" receive --port 18090 >"$dir/receiver.log" 2>&1
for _ in $(seq 1 30); do
  (exec 3<>/dev/tcp/127.0.0.1/18090) 2>/dev/null && break
  sleep 1
done
(exec 3<>/dev/tcp/127.0.0.1/18090) 2>/dev/null || { echo "the receiver is not listening"; cat "$dir/receiver.log"; exit 1; }

say "applying the sample: namespace shop, Secret, Deployment, KickPolicy, NotificationPolicy"
"$kubectl" apply -f - <<'YAML'
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: shop}
stringData: {API_TOKEN: alpha}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop, labels: {app: web}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: registry.k8s.io/pause:3.10
        envFrom: [{secretRef: {name: web-secret}}]
---
apiVersion: kick.corewire.io/v1alpha1
kind: KickPolicy
metadata: {name: web, namespace: shop}
spec:
  discovery: {workloadSelector: {matchLabels: {app: web}}}
---
apiVersion: kick.corewire.io/v1alpha1
kind: NotificationPolicy
metadata: {name: events, namespace: shop}
spec:
  webhook:
    url: http://127.0.0.1:18090/
    format: cloudevents
YAML
"$kubectl" -n shop rollout status deployment/web --timeout=2m
# KICK records the Secret's content first (a baseline, no restart); only a
# change after that is one to act on.
recorded=0
for _ in $(seq 1 60); do
  "$kubectl" -n shop get sourceobservations -o name 2>/dev/null | grep -q . && { recorded=1; break; }
  sleep 1
done
[[ $recorded == 1 ]] || { echo "KICK did not record web-secret"; tail -50 "$dir/manager.log"; exit 1; }
"$kubectl" -n shop get replicasets

say "changing the Secret's data"
"$kubectl" -n shop patch secret web-secret --type merge -p '{"stringData":{"API_TOKEN":"bravo"}}'
demo_wait_succeeded shop 90 "$dir/manager.log"
say "the Deployment rolled out a new ReplicaSet"
"$kubectl" -n shop get replicasets
[[ $("$kubectl" -n shop get replicasets -o name | wc -l) -ge 2 ]] || { echo "no new ReplicaSet"; exit 1; }
delivered=0
for _ in $(seq 1 30); do
  grep -q "io.corewire.kick.request.succeeded.v1" "$dir/receiver.log" && { delivered=1; break; }
  sleep 1
done
say "the CloudEvents receiver got:"
cat "$dir/receiver.log"
[[ $delivered == 1 ]] || { echo "no CloudEvent was delivered"; exit 1; }

say "an incident: hold restarts for web-secret's changes, then change it again"
"$bin/kubectl-kick" hold secret/web-secret -n shop --reason "INC-1: checking the new token first"
"$kubectl" -n shop patch secret web-secret --type merge -p '{"stringData":{"API_TOKEN":"charlie"}}'
held=0
for _ in $(seq 1 60); do
  [[ "$("$kubectl" -n shop get kickrequest deployment-web -o jsonpath='{.status.reason}' 2>/dev/null)" == "Held" ]] && { held=1; break; }
  sleep 1
done
"$kubectl" -n shop get kickholds,kickrequests
[[ $held == 1 ]] || { echo "the restart was not held"; tail -50 "$dir/manager.log"; exit 1; }
say "the restart waits (reason Held); releasing the hold lets it run"
"$bin/kubectl-kick" release secret/web-secret -n shop
demo_wait_succeeded shop 90 "$dir/manager.log"
[[ $("$kubectl" -n shop get replicasets -o name | wc -l) -ge 3 ]] || { echo "no new ReplicaSet after the release"; exit 1; }

cat <<EOF

Try it:
  export KUBECONFIG=$KUBECONFIG
  $kubectl -n shop patch secret web-secret --type merge -p '{"stringData":{"API_TOKEN":"delta"}}'
  $kubectl -n shop get kickrequests -w
  $kubectl -n shop describe kickrequest deployment-web
  $kubectl -n shop get kickpolicy,notificationpolicy
  tail -f $dir/receiver.log
  curl -s http://127.0.0.1:18080/metrics | grep ^kick_
  $bin/kubectl-kick timeline deployment/web -n shop
  $bin/kubectl-kick hold namespace -n shop --reason "freeze"   # and: release namespace -n shop

The timeline (changes, gates, restarts, events) in your browser:
  http://127.0.0.1:18082/timeline/ui
(from another machine: ssh -L 18082:127.0.0.1:18082 this-host, then open the same URL)

EOF
if [[ "${DEMO_EXIT:-0}" == "1" ]]; then
  say "DEMO_EXIT=1: the restart happened and was delivered, the held one ran on release; exiting"
  exit 0
fi
say "running; press Ctrl-C to stop"
wait "${pids[0]}"
