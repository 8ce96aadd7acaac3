#!/usr/bin/env bash
# Stops what up.sh started from this checkout: the Kafka broker and the three Redis Cluster nodes.
# The cluster nodes' state is wiped, so the next up.sh creates a fresh cluster. Kafka's data is kept
# unless --wipe is given. The Redis on 6379 is left alone (it normally belongs to the machine).
# Processes started by another checkout (their pid files live in that checkout's .local/) are not
# touched; down.sh says so, and that is no failure.
#
#   npm run local:down [-- --wipe]     (or: bash infra/local/down.sh [--wipe])
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

WIPE=0
for arg in "$@"; do
  case "$arg" in
    --wipe) WIPE=1 ;;
    -h | --help) sed -n '2,9p' "$0"; exit 0 ;;
    *) die "unknown argument '$arg' (expected --wipe)" ;;
  esac
done

# SIGTERM, then SIGKILL after <grace> seconds.
stop_pid() {
  local pid="$1" name="$2" grace="$3" i
  kill -TERM "$pid" 2>/dev/null || return 0
  for ((i = 0; i < grace * 10; i++)); do
    kill -0 "$pid" 2>/dev/null || { log "$name: stopped (pid $pid)"; return 0; }
    sleep 0.1
  done
  warn "$name: pid $pid still running after ${grace}s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  for ((i = 0; i < 50; i++)); do
    kill -0 "$pid" 2>/dev/null || { log "$name: killed (pid $pid)"; return 0; }
    sleep 0.1
  done
  warn "$name: pid $pid did not exit"
  return 1
}

wait_port_closed() {
  local port="$1" i
  for ((i = 0; i < 50; i++)); do
    port_open "$port" || return 0
    sleep 0.1
  done
  return 1
}

status=0

# A single-node KRaft broker shuts down in a few seconds; 30 s covers a slow log flush.
# What another checkout started is its own to stop: reported, not an error.
if pid="$(kafka_pid)"; then
  stop_pid "$pid" kafka 30 || status=1
  for port in "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"; do
    wait_port_closed "$port" || { warn "kafka: port $port is still held after the broker stopped"; status=1; }
  done
elif port_open "$KAFKA_PORT"; then
  log "kafka: running, but not started from this checkout: left alone"
else
  log "kafka: not running"
fi
rm -f "$KAFKA_PID_FILE"
if ((WIPE)) && kafka_pid >/dev/null; then
  warn "kafka: broker still running; not wiping its data"
  status=1
elif ((WIPE)); then
  # Every version's storage (and the data dir of checkouts from before versions had their own).
  rm -rf "$KAFKA_DIR"/data "$KAFKA_DIR"/data-* "$KAFKA_CLUSTER_ID_FILE" "$KAFKA_LOGS" "$KAFKA_VERSION_FILE"
  log "kafka: data wiped (${KAFKA_DIR#"$REPO_DIR/"}/data-*, logs; the jars stay)"
fi

# A node takes 1-2 s to exit after SIGTERM; stop the three in parallel.
stoppers=()
stopped=()
for port in "${REDIS_CLUSTER_PORTS[@]}"; do
  if pid="$(redis_cluster_pid "$port")"; then
    # SIGTERM is a clean SHUTDOWN; with --save "" no dump is written.
    stop_pid "$pid" "redis-cluster node $port" 10 &
    stoppers+=("$!")
    stopped+=("$port")
  elif port_open "$port"; then
    log "redis-cluster node $port: running, but not started from this checkout: left alone"
  else
    log "redis-cluster node $port: not running"
    rm -rf "$(redis_cluster_dir "$port")"
  fi
done
for stopper in "${stoppers[@]}"; do wait "$stopper" || status=1; done
for port in "${stopped[@]}"; do
  if wait_port_closed "$port"; then
    rm -rf "$(redis_cluster_dir "$port")"
  else
    warn "redis-cluster node $port: port still held after the node stopped"
    status=1
  fi
done
rm -f "$LOCAL_DIR/redis-cluster-create.out"

log "redis $REDIS_HOST:$REDIS_PORT: left running (not managed by down.sh)"
exit "$status"
