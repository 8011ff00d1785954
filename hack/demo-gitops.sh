#!/usr/bin/env bash
# make demo-gitops: the local control plane with the real Argo CD
# (application controller, repo-server, redis) and a git server; KICK
# restarts a Deployment that Argo CD synced from Git, but only once the
# AppProject's deny window has ended. With DEMO_EXIT=1 it exits (0 only if
# the restart was held and then released) instead of running until Ctrl-C.
set -euo pipefail

bin=${1:?usage: demo-gitops.sh BIN_DIR K8S_BIN_DIR GITOPS_BIN_DIR}
k8s=${2:?usage: demo-gitops.sh BIN_DIR K8S_BIN_DIR GITOPS_BIN_DIR}
gitops=${3:?usage: demo-gitops.sh BIN_DIR K8S_BIN_DIR GITOPS_BIN_DIR}
root=$(cd "$(dirname "$0")/.." && pwd)
dir="${DEMO_DIR:-$root/.demo-gitops}"
rm -rf "$dir/work" && mkdir -p "$dir"
DEMO_TAG=demo-gitops
# shellcheck source=hack/demo-lib.sh
source "$root/hack/demo-lib.sh"

demo_ports_free 18180 18181 18182

say "starting the local control plane with Argo CD and a git server (about a minute)"
started=$SECONDS
demo_bg "$bin/kick-devcluster" up --dir "$dir/cluster" --bin-dir "$k8s" --kick-crds "$root/deploy/crds" \
  --gitops argocd --gitops-bin-dir "$gitops" >"$dir/devcluster.out" 2>"$dir/devcluster.err"
demo_wait_devcluster "$dir" 400
echo "(up in $((SECONDS - started))s)"
giturl=$(sed -n 's/^gitops: git server \(http:[^ ]*\) (repositories in \([^)]*\)).*/\1/p' "$dir/devcluster.out")
gitroot=$(sed -n 's/^gitops: git server \(http:[^ ]*\) (repositories in \([^)]*\)).*/\2/p' "$dir/devcluster.out")

export KUBECONFIG="$dir/cluster/kubeconfig"
kubectl="$k8s/kubectl"
"$kubectl" create namespace kick-system >/dev/null

say "starting kick-manager (log: $dir/manager.log)"
demo_bg "$bin/kick-manager" --kubeconfig "$KUBECONFIG" --namespace kick-system --argocd-namespace argocd \
  --metrics-bind-address 127.0.0.1:18180 --health-probe-bind-address 127.0.0.1:18181 \
  --timeline-bind-address 127.0.0.1:18182 >"$dir/manager.log" 2>&1
demo_wait_manager 18181 "$dir/manager.log"

say "pushing the shop repository to the git server: web/deployment.yaml"
git=(git -c user.name=demo -c user.email=demo@kick.invalid)
"${git[@]}" init -q --bare --initial-branch=main "$gitroot/repos/shop.git"
"${git[@]}" init -q --initial-branch=main "$dir/work/shop"
mkdir -p "$dir/work/shop/web"
cat >"$dir/work/shop/web/deployment.yaml" <<'YAML'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, labels: {app: web}}
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
YAML
(cd "$dir/work/shop" && "${git[@]}" add -A && "${git[@]}" commit -qm "web" && "${git[@]}" push -q "$gitroot/repos/shop.git" HEAD:main)

say "namespace shop, its Secret (kept out of Git) and a KickPolicy gated on Argo CD; AppProject shop and Application web (automated sync)"
"$kubectl" apply -f - <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: shop}
---
apiVersion: v1
kind: Secret
metadata: {name: web-secret, namespace: shop}
stringData: {API_TOKEN: alpha}
---
apiVersion: kick.corewire.io/v1alpha1
kind: KickPolicy
metadata: {name: web, namespace: shop}
spec:
  discovery: {workloadSelector: {matchLabels: {app: web}}}
  gitOps: {provider: ArgoCD}
---
apiVersion: argoproj.io/v1alpha1
kind: AppProject
metadata: {name: shop, namespace: argocd}
spec:
  sourceRepos: ['*']
  destinations: [{server: '*', namespace: '*'}]
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  project: shop
  source: {repoURL: $giturl/shop.git, path: web, targetRevision: main}
  destination: {server: https://kubernetes.default.svc, namespace: shop}
  syncPolicy: {automated: {}}
YAML
for _ in $(seq 1 120); do
  [[ "$("$kubectl" -n argocd get application web -o jsonpath='{.status.sync.status}/{.status.operationState.phase}' 2>/dev/null)" == "Synced/Succeeded" ]] && break
  sleep 1
done
"$kubectl" -n argocd get application web
"$kubectl" -n shop rollout status deployment/web --timeout=2m
echo "Argo CD's tracking annotation on deployment/web: $("$kubectl" -n shop get deployment web -o jsonpath='{.metadata.annotations.argocd\.argoproj\.io/tracking-id}')"
for _ in $(seq 1 60); do
  "$kubectl" -n shop get sourceobservations -o name 2>/dev/null | grep -q . && break
  sleep 1
done

start_min=$(date -u +%M | sed 's/^0//'); start_hour=$(date -u +%H | sed 's/^0//')
end=$(date -u -d "$(date -u +%Y-%m-%dT%H:%M:00Z) + 2 minutes" +%s)
say "adding a deny window to AppProject shop: '$start_min $start_hour * * *' for 2m, until $(date -u -d "@$end" +%H:%M:%S) UTC"
"$kubectl" -n argocd patch appproject shop --type merge -p \
  "{\"spec\":{\"syncWindows\":[{\"kind\":\"deny\",\"schedule\":\"$start_min $start_hour * * *\",\"duration\":\"2m\",\"applications\":[\"*\"],\"timeZone\":\"UTC\"}]}}"

say "changing the Secret: KICK holds the restart while the window is active"
"$kubectl" -n shop patch secret web-secret --type merge -p '{"stringData":{"API_TOKEN":"bravo"}}'
held=0
for _ in $(seq 1 60); do
  if [[ "$("$kubectl" -n shop get kickrequest deployment-web -o jsonpath='{.status.gate.reason}' 2>/dev/null)" == "OutsideSchedule" ]]; then held=1; break; fi
  sleep 1
done
"$kubectl" -n shop get kickrequest deployment-web -o jsonpath='{.status.phase}: {.status.gate.message}{"\n"}'
[[ $held == 1 ]] || { echo "KICK did not hold the restart"; tail -50 "$dir/manager.log"; exit 1; }

say "waiting for the window to end ($((end - $(date +%s)))s)"
demo_wait_succeeded shop 200 "$dir/manager.log"
stamp=$("$kubectl" -n shop get deployment web -o jsonpath='{.spec.template.metadata.annotations.kubectl\.kubernetes\.io/restartedAt}')
echo "restarted at $stamp; the window ended at $(date -u -d "@$end" +%Y-%m-%dT%H:%M:%SZ)"
(( $(date -u -d "$stamp" +%s) >= end )) || { echo "the restart came before the window ended"; exit 1; }
"$kubectl" -n shop get replicasets
"$kubectl" -n argocd get application web

cat <<EOF

Try it:
  export KUBECONFIG=$KUBECONFIG
  $kubectl -n shop patch secret web-secret --type merge -p '{"stringData":{"API_TOKEN":"charlie"}}'
  $kubectl -n shop get kickrequests -w
  $bin/kubectl-kick explain deployment/web -n shop
  $kubectl -n argocd get application web -o yaml
  edit $dir/work/shop/web/deployment.yaml, commit, and push to $gitroot/repos/shop.git
The timeline: http://127.0.0.1:18182/timeline/ui

EOF
if [[ "${DEMO_EXIT:-0}" == "1" ]]; then
  say "DEMO_EXIT=1: the restart was held by the window and released when it ended; exiting"
  exit 0
fi
say "running; press Ctrl-C to stop"
wait "${pids[0]}"
