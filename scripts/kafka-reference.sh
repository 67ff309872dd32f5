#!/usr/bin/env bash
# Reference Apache Kafka (KRaft, single node: broker + controller) assembled from Maven Central jars.
#
#   scripts/kafka-reference.sh install
#       copy Kafka's jars into tests/.work/kafka/libs (skipped when already there)
#   scripts/kafka-reference.sh start --dir DIR [--port 9092] [--controller-port 9093] [--property k=v]...
#       format DIR once (kept across restarts) and run the broker in the foreground (exec java),
#       so the caller's pid is the JVM's: SIGKILL/SIGTERM on it behave as on a real broker.
#       Each --property is appended to server.properties (e.g. log.retention.ms=3600000).
#   scripts/kafka-reference.sh classpath
#       print the classpath (for kafka-tools benchmarks: org.apache.kafka.tools.ProducerPerformance)
#
# Opt-in: KAFKA_REFERENCE_PROPERTIES="key=value ..." (separated by whitespace or ';') is appended
# to the broker's properties, for tests that need settings beyond Kafka's defaults (e.g. a
# consumer-group session timeout below group.consumer.min.session.timeout.ms, or a short
# log.retention.check.interval.ms). KAFKA_REFERENCE_JVM_OPTS adds JVM options (e.g. the
# -Dorg.apache.kafka.sasl.oauthbearer.allowed.urls=file:///... an OAUTHBEARER JWKS file needs).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
LIBS="$ROOT/tests/.work/kafka/libs"
POM="$ROOT/tests/reference/pom.xml"

install() {
  if [ -f "$LIBS/.complete" ] && [ "$LIBS/.complete" -nt "$POM" ]; then
    return 0
  fi
  mkdir -p "$LIBS"
  mvn -q -B -Dstyle.color=never -f "$POM" dependency:copy-dependencies -DoutputDirectory="$LIBS" -DincludeScope=runtime
  touch "$LIBS/.complete"
}

classpath() {
  install >&2
  local cp=""
  for jar in "$LIBS"/*.jar; do cp="$cp${cp:+:}$jar"; done
  printf '%s\n' "$cp"
}

start() {
  local dir="" port=9092 cport=9093
  local properties=()
  while [ $# -gt 0 ]; do
    case "$1" in
      --dir) dir="$2"; shift 2 ;;
      --property) properties+=("$2"); shift 2 ;;
      --port) port="$2"; shift 2 ;;
      --controller-port) cport="$2"; shift 2 ;;
      *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
  done
  [ -n "$dir" ] || { echo "--dir is required" >&2; exit 2; }
  mkdir -p "$dir"
  dir="$(cd "$dir" && pwd)"
  local cp; cp="$(classpath)"

  cat > "$dir/server.properties" <<PROPS
process.roles=broker,controller
node.id=1
controller.quorum.voters=1@127.0.0.1:$cport
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$dir/logs
num.partitions=1
auto.create.topics.enable=true
delete.topic.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
# Bound the memory held by requests being read (unbounded by default): a client that announces a
# huge frame and never sends it must not exhaust the heap.
queued.max.request.bytes=268435456
PROPS
  if [ ${#properties[@]} -gt 0 ]; then
    printf '%s\n' "${properties[@]}" >> "$dir/server.properties"
  fi
  if [ -n "${KAFKA_REFERENCE_PROPERTIES:-}" ]; then
    printf '%s\n' "$KAFKA_REFERENCE_PROPERTIES" | tr -s ';[:blank:]' '\n' >> "$dir/server.properties"
  fi

  cat > "$dir/log4j2.properties" <<'LOG'
status = error
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
LOG

  local jvm=(-Xms256m -Xmx768m -XX:+UseG1GC -XX:TieredStopAtLevel=1 -Djava.awt.headless=true
             -Dkafka.logs.dir="$dir" -Dlog4j2.configurationFile="$dir/log4j2.properties")
  if [ -n "${KAFKA_REFERENCE_JVM_OPTS:-}" ]; then
    read -r -a extra <<<"$KAFKA_REFERENCE_JVM_OPTS"
    jvm+=("${extra[@]}")
  fi

  if [ ! -f "$dir/logs/meta.properties" ]; then
    local cluster_id
    # Like Kafka's Uuid.randomUuid: base64url, never starting with '-' (it would read as a flag).
    cluster_id="-"
    while [ "${cluster_id:0:1}" = "-" ] || [ "${cluster_id:0:1}" = "_" ]; do
      cluster_id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=')"
    done
    java "${jvm[@]}" -cp "$cp" kafka.tools.StorageTool format \
      -t "$cluster_id" -c "$dir/server.properties" >"$dir/format.log" 2>&1 || {
      cat "$dir/format.log" >&2; exit 1; }
  fi
  exec java "${jvm[@]}" -cp "$cp" kafka.Kafka "$dir/server.properties"
}

case "${1:-}" in
  install) install ;;
  classpath) classpath ;;
  start) shift; start "$@" ;;
  *) sed -n '2,14p' "$0" >&2; exit 2 ;;
esac
