#!/usr/bin/env bash
# Starts the local stack: Kafka 127.0.0.1:9092 (KRaft, controller on 9093), Redis 127.0.0.1:6379 and
# a 3-master Redis Cluster on 127.0.0.1:7000-7002. Idempotent: whatever already answers is left alone,
# so a second run with everything up returns in about a second.
#
#   npm run local:up            (or: bash infra/local/up.sh)
#
# Environment:
#   KAFKA_VERSION        Apache Kafka version of the broker (default: kafka.version in pom.xml, 3.9.1);
#                        tested: 3.9.1, 4.1.1, 4.4.0 (see docs/testing.md). To switch, `npm run local:down` first.
#   LOCAL_SERVICES       what to start, comma separated (default redis,redis-cluster,kafka)
#   LOCAL_KAFKA_PORT, LOCAL_KAFKA_CONTROLLER_PORT, LOCAL_KAFKA_DIR
#                        a second broker beside the usual one (default 9092, 9093, .local/kafka)
#   KAFKA_READY_TIMEOUT  seconds to wait for the broker to answer (default 90)
#   KAFKA_HEAP_OPTS      broker heap (default -Xms256m -Xmx1G)
#   MAVEN_OPTS           passed to mvn, e.g. -Dmaven.repo.local=/some/dir
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

KAFKA_READY_TIMEOUT="${KAFKA_READY_TIMEOUT:-90}"

require() {
  command -v "$1" >/dev/null 2>&1 || die "'$1' is not installed (Debian package: $2)"
}

# ---------------------------------------------------------------------------------------------- Kafka

# The jars are fetched once per checkout; a stamp of pom.xml makes a version bump refetch them.
fetch_kafka_jars() {
  local stamp="$KAFKA_LIBS/.pom.sha256" want
  want="$( (cat "$INFRA_DIR/pom.xml"; printf '%s\n' "$KAFKA_VERSION") | sha256sum | cut -d' ' -f1)"
  if [[ -f "$stamp" && "$(cat "$stamp")" == "$want" ]] && compgen -G "$KAFKA_LIBS/kafka_2.13-$KAFKA_VERSION.jar" >/dev/null; then
    return 0
  fi
  require mvn maven
  log "kafka: fetching Kafka $KAFKA_VERSION broker jars with Maven (first run only; slow with an empty Maven cache)"
  local t0; t0="$(now_ms)"
  rm -rf "$KAFKA_LIBS"
  mkdir -p "$KAFKA_LIBS"
  mkdir -p "$KAFKA_LOGS"
  if ! mvn -B --no-transfer-progress -f "$INFRA_DIR/pom.xml" dependency:copy-dependencies \
      -Dkafka.version="$KAFKA_VERSION" -Dlibs.dir="$KAFKA_LIBS" >"$KAFKA_LOGS/mvn.out" 2>&1; then
    tail -n 40 "$KAFKA_LOGS/mvn.out" >&2
    rm -rf "$KAFKA_LIBS"
    die "kafka: mvn could not fetch the Kafka $KAFKA_VERSION broker jars (is KAFKA_VERSION a released version? full output: $KAFKA_LOGS/mvn.out)"
  fi
  printf '%s\n' "$want" >"$stamp"
  log "kafka: $(find "$KAFKA_LIBS" -name '*.jar' | wc -l) jars in ${KAFKA_LIBS#"$REPO_DIR/"} ($(elapsed "$t0"))"
}

render_kafka_config() {
  mkdir -p "$KAFKA_DATA" "$KAFKA_LOGS"
  sed -e "s|@KAFKA_DATA_DIR@|$KAFKA_DATA|g" -e "s|@KAFKA_PORT@|$KAFKA_PORT|g" \
    -e "s|@KAFKA_CONTROLLER_PORT@|$KAFKA_CONTROLLER_PORT|g" "$INFRA_DIR/server.properties" >"$KAFKA_CONFIG.tmp"
  mv "$KAFKA_CONFIG.tmp" "$KAFKA_CONFIG"
}

format_kafka_storage() {
  [[ -f "$KAFKA_DATA/meta.properties" ]] && return 0
  local t0 cluster_id; t0="$(now_ms)"
  if [[ ! -s "$KAFKA_CLUSTER_ID_FILE" ]]; then
    kafka_tool kafka.tools.StorageTool random-uuid | tail -n 1 | tr -d '[:space:]' >"$KAFKA_CLUSTER_ID_FILE"
  fi
  cluster_id="$(cat "$KAFKA_CLUSTER_ID_FILE")"
  [[ -n "$cluster_id" ]] || die "kafka: StorageTool random-uuid printed nothing"
  log "kafka: formatting Kafka $KAFKA_VERSION storage in ${KAFKA_DATA#"$REPO_DIR/"} (cluster id $cluster_id)"
  kafka_tool kafka.tools.StorageTool format --config "$KAFKA_CONFIG" --cluster-id "$cluster_id" \
    --ignore-formatted >"$KAFKA_LOGS/format.out" 2>&1 \
    || { cat "$KAFKA_LOGS/format.out" >&2; die "kafka: formatting storage failed"; }
  log "kafka: storage formatted ($(elapsed "$t0"))"
}

start_kafka() {
  # setsid: the broker gets its own session, so it outlives the shell (and the npm run) that started it
  # and is not hit by signals sent to that shell's process group.
  : >"$KAFKA_STDOUT"
  # A fresh server.log per start, so a failure report shows this start's lines only.
  [[ -f "$KAFKA_SERVER_LOG" ]] && mv -f "$KAFKA_SERVER_LOG" "$KAFKA_SERVER_LOG.previous"
  (
    cd "$KAFKA_DIR"
    # shellcheck disable=SC2086 # KAFKA_HEAP_OPTS is a list of JVM flags.
    exec setsid nohup java $KAFKA_HEAP_OPTS \
      -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 -XX:InitiatingHeapOccupancyPercent=35 \
      -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
      -Xlog:gc*:file="$KAFKA_LOGS/gc.log":time,tags:filecount=2,filesize=20M \
      -Dlog4j.configuration="file:$INFRA_DIR/log4j.properties" \
      -Dkafka.logs.dir="$KAFKA_LOGS" -Dkafka.log.file=server.log \
      -cp "$(kafka_classpath)" kafka.Kafka "$KAFKA_CONFIG" \
      >>"$KAFKA_STDOUT" 2>&1 </dev/null
  ) &
  local pid="$!"
  printf '%s\n' "$pid" >"$KAFKA_PID_FILE"
  # setsid forks when the caller leads its process group; then $! is not the JVM: find it by config.
  sleep 0.2
  if ! kafka_pid >/dev/null; then
    local found
    found="$(pgrep -n -f -- "$KAFKA_CONFIG" || true)"
    [[ -n "$found" ]] && pid="$found" && printf '%s\n' "$pid" >"$KAFKA_PID_FILE"
  fi
  KAFKA_STARTED_PID="$pid"
  printf '%s\n' "$KAFKA_VERSION" >"$KAFKA_VERSION_FILE"
  log "kafka: started Kafka $KAFKA_VERSION broker (pid $pid), logs in ${KAFKA_LOGS#"$REPO_DIR/"}"
}

# Node and the kafkajs package answer in ~0.3 s; without node_modules fall back to a JVM tool.
# With a pid, stop waiting as soon as that process is gone.
wait_for_kafka() {
  local timeout="$1" pid="${2:-}"
  if command -v node >/dev/null 2>&1 && [[ -d "$REPO_DIR/node_modules/kafkajs" ]]; then
    node "$INFRA_DIR/kafka-ready.mjs" "$KAFKA_HOST:$KAFKA_PORT" "$timeout" $pid
    return
  fi
  local deadline=$((SECONDS + timeout))
  while ((SECONDS < deadline)); do
    [[ -z "$pid" ]] || kill -0 "$pid" 2>/dev/null || { warn "kafka: the broker process (pid $pid) exited"; return 2; }
    if port_open "$KAFKA_PORT" && kafka_tool kafka.admin.BrokerApiVersionsCommand \
        --bootstrap-server "$KAFKA_HOST:$KAFKA_PORT" >/dev/null 2>&1; then
      log "kafka answers on $KAFKA_HOST:$KAFKA_PORT"
      return 0
    fi
    sleep 1
  done
  return 1
}

kafka_failed() {
  warn "kafka: the broker is not answering on $KAFKA_HOST:$KAFKA_PORT (gave up after $(elapsed "$1"))"
  local file
  # Not running any more: forget the pid so the next up.sh starts afresh.
  kafka_pid >/dev/null || rm -f "$KAFKA_PID_FILE"
  for file in "$KAFKA_STDOUT" "$KAFKA_SERVER_LOG"; do
    [[ -s "$file" ]] || continue
    warn "---- last lines of $file"
    tail -n 30 "$file" >&2
  done
  warn "---- full logs: $KAFKA_LOGS"
  exit 1
}

up_kafka() {
  local t0; t0="$(now_ms)"
  if port_open "$KAFKA_PORT"; then
    # Ours or another checkout's broker (or one still starting): only check that it answers.
    wait_for_kafka 20 >/dev/null || die "kafka: something listens on $KAFKA_HOST:$KAFKA_PORT but does not answer as a Kafka broker"
    # A running broker is never replaced: say which version answers, and refuse a different one asked for.
    local running=''
    kafka_pid >/dev/null && [[ -s "$KAFKA_VERSION_FILE" ]] && running="$(cat "$KAFKA_VERSION_FILE")"
    if [[ -n "$running" && "$running" != "$KAFKA_VERSION" ]]; then
      die "kafka: the broker on $KAFKA_HOST:$KAFKA_PORT runs Kafka $running, not $KAFKA_VERSION; stop it first (npm run local:down)"
    fi
    log "kafka: already up on $KAFKA_HOST:$KAFKA_PORT (Kafka ${running:-version not recorded}, $(elapsed "$t0"))"
    # This checkout still needs the jars: the integration tests start brokers of their own from them (the ACL
    # test's SASL broker), also when another checkout's broker answers here.
    fetch_kafka_jars
    return 0
  fi
  require java openjdk-17-jdk-headless
  KAFKA_STARTED_PID="$(kafka_pid || true)"
  if [[ -z "$KAFKA_STARTED_PID" ]]; then
    port_open "$KAFKA_CONTROLLER_PORT" && die "kafka: port $KAFKA_CONTROLLER_PORT is taken by another process"
    fetch_kafka_jars
    render_kafka_config
    format_kafka_storage
    start_kafka
  else
    log "kafka: broker pid $KAFKA_STARTED_PID is starting; waiting for it"
  fi
  wait_for_kafka "$KAFKA_READY_TIMEOUT" "$KAFKA_STARTED_PID" || kafka_failed "$t0"
  log "kafka: Kafka $KAFKA_VERSION up on $KAFKA_HOST:$KAFKA_PORT ($(elapsed "$t0"))"
}

# ---------------------------------------------------------------------------------------------- Redis

# The standalone Redis on 6379 usually belongs to the machine; start one only when nothing answers.
up_redis() {
  if redis_ping "$REDIS_PORT"; then
    log "redis: already up on $REDIS_HOST:$REDIS_PORT"
    return 0
  fi
  require redis-server redis-server
  local dir="$LOCAL_DIR/redis-$REDIS_PORT"
  mkdir -p "$dir"
  redis-server --daemonize yes --bind 127.0.0.1 -::1 --port "$REDIS_PORT" --save "" --appendonly no \
    --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
  wait_for_redis "$REDIS_PORT" || die "redis: did not answer on $REDIS_PORT; see $dir/redis.log"
  log "redis: started on $REDIS_HOST:$REDIS_PORT"
}

wait_for_redis() {
  local port="$1" i
  for ((i = 0; i < 50; i++)); do
    redis_ping "$port" && return 0
    sleep 0.1
  done
  return 1
}

cluster_field() { # <port> <field> -> value from CLUSTER INFO
  redis-cli -h "$REDIS_HOST" -p "$1" cluster info 2>/dev/null | tr -d '\r' | sed -n "s/^$2://p"
}

# Created means: every node knows all three and the 16384 slots are assigned.
cluster_created() {
  local port
  for port in "${REDIS_CLUSTER_PORTS[@]}"; do
    [[ "$(cluster_field "$port" cluster_known_nodes)" == "${#REDIS_CLUSTER_PORTS[@]}" ]] || return 1
    [[ "$(cluster_field "$port" cluster_slots_assigned)" == 16384 ]] || return 1
  done
}

cluster_ok() {
  local port
  for port in "${REDIS_CLUSTER_PORTS[@]}"; do
    [[ "$(cluster_field "$port" cluster_state)" == ok ]] || return 1
  done
}

up_redis_cluster() {
  local t0 port dir; t0="$(now_ms)"
  require redis-server redis-server
  require redis-cli redis-tools
  for port in "${REDIS_CLUSTER_PORTS[@]}"; do
    redis_ping "$port" && continue
    dir="$(redis_cluster_dir "$port")"
    mkdir -p "$dir"
    redis-server --port "$port" --bind 127.0.0.1 --daemonize yes --save "" --appendonly no \
      --cluster-enabled yes --cluster-config-file "$dir/nodes.conf" --cluster-node-timeout 5000 \
      --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log"
    wait_for_redis "$port" || die "redis-cluster: node $port did not start; see $dir/redis.log"
    log "redis-cluster: started node $REDIS_HOST:$port"
  done

  if ! cluster_created; then
    # Half-made (a node restarted without its peers, an interrupted create): start over. The nodes
    # hold test data only, and --cluster create refuses nodes that know other nodes or hold keys.
    for port in "${REDIS_CLUSTER_PORTS[@]}"; do
      redis-cli -h "$REDIS_HOST" -p "$port" flushall >/dev/null 2>&1 || true
      redis-cli -h "$REDIS_HOST" -p "$port" cluster reset hard >/dev/null
    done
    local addrs=()
    for port in "${REDIS_CLUSTER_PORTS[@]}"; do addrs+=("$REDIS_HOST:$port"); done
    log "redis-cluster: creating a cluster of ${#addrs[@]} masters"
    redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes >"$LOCAL_DIR/redis-cluster-create.out" 2>&1 \
      || { cat "$LOCAL_DIR/redis-cluster-create.out" >&2; die "redis-cluster: redis-cli --cluster create failed"; }
  fi

  local deadline=$((SECONDS + 30))
  until cluster_ok; do
    ((SECONDS < deadline)) || die "redis-cluster: cluster_state is not ok after 30s (redis-cli -p 7000 cluster info)"
    sleep 0.2
  done
  log "redis-cluster: up on $REDIS_HOST:${REDIS_CLUSTER_PORTS[*]} (cluster_state:ok, $(elapsed "$t0"))"
}

main() {
  local t0 service; t0="$(now_ms)"
  mkdir -p "$LOCAL_DIR"
  local services=",${LOCAL_SERVICES:-redis,redis-cluster,kafka},"
  for service in ${services//,/ }; do
    [[ "$service" =~ ^(redis|redis-cluster|kafka)$ ]] || die "LOCAL_SERVICES: unknown service \"$service\" (known: redis, redis-cluster, kafka)"
  done
  [[ "$services" == *,redis,* ]] && up_redis
  [[ "$services" == *,redis-cluster,* ]] && up_redis_cluster
  [[ "$services" == *,kafka,* ]] && up_kafka
  log "local stack up ($(elapsed "$t0"))"
}

main "$@"
