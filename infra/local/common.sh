# Shared by up.sh, down.sh and status.sh (sourced, not run). Paths, ports and small helpers.
# Everything the local stack writes lives under <repo>/.local/ (git-ignored), so two clones of the
# repo never share state; the ports are fixed, so only one clone's stack can run at a time.

INFRA_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_DIR="$(cd "$INFRA_DIR/../.." && pwd)"
LOCAL_DIR="$REPO_DIR/.local"

# The Kafka version: KAFKA_VERSION, else the default pinned in pom.xml (the kafka.version property).
KAFKA_DEFAULT_VERSION="$(sed -n 's|.*<kafka.version>\(.*\)</kafka.version>.*|\1|p' "$INFRA_DIR/pom.xml" | head -n 1)"
KAFKA_VERSION="${KAFKA_VERSION:-$KAFKA_DEFAULT_VERSION}"
[[ "$KAFKA_VERSION" =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] \
  || { printf '[local] ERROR: KAFKA_VERSION must look like 3.9.1, got "%s"\n' "$KAFKA_VERSION" >&2; exit 1; }

KAFKA_HOST=127.0.0.1
# A second broker beside the usual one (trying another version, say) needs other ports and its own
# directory: LOCAL_KAFKA_PORT, LOCAL_KAFKA_CONTROLLER_PORT, LOCAL_KAFKA_DIR.
KAFKA_PORT="${LOCAL_KAFKA_PORT:-9092}"
KAFKA_CONTROLLER_PORT="${LOCAL_KAFKA_CONTROLLER_PORT:-9093}"
KAFKA_DIR="${LOCAL_KAFKA_DIR:-$LOCAL_DIR/kafka}"
# Jars per version, shared by every broker directory of the checkout.
KAFKA_LIBS="$LOCAL_DIR/kafka-libs/$KAFKA_VERSION"
# Storage per version: a log formatted by a newer Kafka is not readable by an older one.
KAFKA_DATA="$KAFKA_DIR/data-$KAFKA_VERSION"
# The version of the broker this directory started last (status.sh, and up.sh when it is already up).
KAFKA_VERSION_FILE="$KAFKA_DIR/version"
KAFKA_LOGS="$KAFKA_DIR/logs"
KAFKA_PID_FILE="$KAFKA_DIR/kafka.pid"
KAFKA_CONFIG="$KAFKA_DIR/server.properties"
KAFKA_CLUSTER_ID_FILE="$KAFKA_DIR/cluster-id"
KAFKA_STDOUT="$KAFKA_LOGS/kafka.out"
KAFKA_SERVER_LOG="$KAFKA_LOGS/server.log"
# Heap for the broker JVM; override with KAFKA_HEAP_OPTS like the stock kafka-server-start.sh.
KAFKA_HEAP_OPTS="${KAFKA_HEAP_OPTS:--Xms256m -Xmx1G}"

REDIS_HOST=127.0.0.1
REDIS_PORT=6379
REDIS_CLUSTER_PORTS=(7000 7001 7002)

log() { printf '[local] %s\n' "$*"; }
warn() { printf '[local] %s\n' "$*" >&2; }
die() { printf '[local] ERROR: %s\n' "$*" >&2; exit 1; }

# Seconds since the epoch with millisecond precision, for phase timings.
now_ms() { date +%s%3N; }
elapsed() { local ms=$(( $(now_ms) - $1 )); printf '%d.%01ds' $((ms / 1000)) $(((ms % 1000) / 100)); }

# True when something accepts TCP connections on 127.0.0.1:<port>.
port_open() {
  timeout 1 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# True when <pid> is alive and its command line contains <needle> (guards against reused pids).
pid_matches() {
  local pid="$1" needle="$2"
  [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$needle"
}

read_pid() { [[ -s "$1" ]] && tr -dc '0-9' <"$1"; }

# The broker we started from this checkout: a java process whose command line names our config.
kafka_pid() {
  local pid
  pid="$(read_pid "$KAFKA_PID_FILE")" || return 1
  pid_matches "$pid" "$KAFKA_CONFIG" && printf '%s\n' "$pid"
}

redis_cluster_dir() { printf '%s/redis-%s\n' "$LOCAL_DIR" "$1"; }

# A cluster node we started from this checkout (its pid file is in our .local/ and it serves <port>).
redis_cluster_pid() {
  local port="$1" pid
  pid="$(read_pid "$(redis_cluster_dir "$port")/redis.pid")" || return 1
  pid_matches "$pid" ":$port" && printf '%s\n' "$pid"
}

redis_ping() { [[ "$(redis-cli -h "$REDIS_HOST" -p "$1" ping 2>/dev/null)" == PONG ]]; }

# The classpath of every jar fetched by infra/local/pom.xml.
kafka_classpath() {
  local jars=("$KAFKA_LIBS"/*.jar)
  local IFS=:
  printf '%s\n' "${jars[*]}"
}

# Runs a Kafka command-line tool class (StorageTool, BrokerApiVersionsCommand) on our classpath.
kafka_tool() {
  local main="$1"; shift
  java -Xmx256m -cp "$(kafka_classpath)" \
    -Dlog4j.configuration="file:$INFRA_DIR/log4j.properties" \
    -Dkafka.logs.dir="$KAFKA_LOGS" -Dkafka.log.file=tools.log \
    "$main" "$@"
}
