# Shared by hack/demo.sh and hack/demo-gitops.sh (sourced, not run): the
# process bookkeeping, the port check and the waits both demos need.
# Set DEMO_TAG before sourcing; the demo's own steps stay in its script.

say() { printf '\n\033[1m[%s] %s\033[0m\n' "${DEMO_TAG:-demo}" "$*"; }

# Every background process started with demo_bg is stopped, newest first,
# when the demo exits for any reason.
pids=()
demo_bg() { "$@" & pids+=($!); }
demo_cleanup() {
  local code=$?
  say "stopping"
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    kill -TERM "${pids[i]}" 2>/dev/null || true
    wait "${pids[i]}" 2>/dev/null || true
  done
  exit "$code"
}
trap demo_cleanup EXIT
trap 'exit 130' INT TERM

# demo_ports_free PORT...: the demo's fixed ports must be free; a demo still
# running elsewhere would otherwise make a component fail half-way.
demo_ports_free() {
  local port
  for port in "$@"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      echo "port 127.0.0.1:$port is in use (another demo still running?); stop it and try again"; exit 1
    fi
  done
}

# demo_wait_devcluster DIR SECONDS: waits until the kick-devcluster started
# first (pids[0]) printed ready into DIR/devcluster.out.
demo_wait_devcluster() {
  local dir=$1 limit=$2
  for _ in $(seq 1 "$limit"); do
    grep -q '^ready' "$dir/devcluster.out" 2>/dev/null && break
    if ! kill -0 "${pids[0]}" 2>/dev/null; then
      echo "kick-devcluster failed:"; cat "$dir/devcluster.err"; exit 1
    fi
    sleep 1
  done
  grep -q '^ready' "$dir/devcluster.out" || { echo "kick-devcluster did not become ready"; tail -50 "$dir/devcluster.err"; exit 1; }
  cat "$dir/devcluster.out"
}

# demo_wait_manager PROBE_PORT LOG: waits until the kick-manager started
# second (pids[1]) answers /readyz.
demo_wait_manager() {
  local port=$1 logfile=$2
  for _ in $(seq 1 60); do
    curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null 2>&1 && break
    kill -0 "${pids[1]}" 2>/dev/null || { echo "kick-manager failed:"; cat "$logfile"; exit 1; }
    sleep 1
  done
  curl -fsS "http://127.0.0.1:$port/readyz" >/dev/null || { echo "kick-manager is not ready"; tail -50 "$logfile"; exit 1; }
}

# demo_wait_succeeded NAMESPACE SECONDS LOG: waits until KickRequest
# deployment-web reaches Succeeded, then lists the requests.
demo_wait_succeeded() {
  local ns=$1 limit=$2 logfile=$3 ok=0
  for _ in $(seq 1 "$limit"); do
    [[ "$("$kubectl" -n "$ns" get kickrequest deployment-web -o jsonpath='{.status.phase}' 2>/dev/null)" == "Succeeded" ]] && { ok=1; break; }
    sleep 1
  done
  "$kubectl" -n "$ns" get kickrequests
  [[ $ok == 1 ]] || { echo "the KickRequest did not reach Succeeded"; tail -50 "$logfile"; exit 1; }
}
