#!/usr/bin/env bash
# One line per service of the local stack: up/down and its address. Exit 0 when all are up, else 1.
#
#   npm run local:status     (or: bash infra/local/status.sh)
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

all_up=1
line() { printf '%-14s %-5s %s\n' "$1" "$2" "$3"; [[ "$2" == up ]] || all_up=0; }

# Kafka: the port answers; say whose broker it is.
if port_open "$KAFKA_PORT"; then
  if pid="$(kafka_pid)"; then
    owner="Kafka $(cat "$KAFKA_VERSION_FILE" 2>/dev/null || printf 'version unknown'), pid $pid, this checkout"
  else
    owner="not started from this checkout"
  fi
  line kafka up "$KAFKA_HOST:$KAFKA_PORT (controller $KAFKA_HOST:$KAFKA_CONTROLLER_PORT; $owner)"
else
  line kafka down "$KAFKA_HOST:$KAFKA_PORT"
fi

if redis_ping "$REDIS_PORT"; then
  line redis up "$REDIS_HOST:$REDIS_PORT"
else
  line redis down "$REDIS_HOST:$REDIS_PORT"
fi

addrs="$REDIS_HOST:$(IFS=,; printf '%s' "${REDIS_CLUSTER_PORTS[*]}")"
state="$(redis-cli -h "$REDIS_HOST" -p "${REDIS_CLUSTER_PORTS[0]}" cluster info 2>/dev/null | tr -d '\r' | sed -n 's/^cluster_state://p')"
down_nodes=()
for port in "${REDIS_CLUSTER_PORTS[@]}"; do redis_ping "$port" || down_nodes+=("$port"); done
if ((${#down_nodes[@]} == 0)) && [[ "$state" == ok ]]; then
  line redis-cluster up "$addrs (cluster_state:ok)"
elif ((${#down_nodes[@]} == ${#REDIS_CLUSTER_PORTS[@]})); then
  line redis-cluster down "$addrs"
else
  line redis-cluster down "$addrs (nodes not answering: ${down_nodes[*]:-none}; cluster_state:${state:-?})"
fi

((all_up)) && exit 0 || exit 1
