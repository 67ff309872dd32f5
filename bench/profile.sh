#!/usr/bin/env bash
# Profiles our broker (local-folder store) under the max-throughput produce workload and a
# catch-up consume, with perf's cpu-clock software event (works without hardware counters).
# Prints the top symbols; the raw profile stays in bench/.work/profile/perf.data.
#   bench/profile.sh [records]        (default 400000 records of 1 KiB)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
records="${1:-400000}"
port=29492
dir="$ROOT/bench/.work/profile"
rm -rf "$dir" && mkdir -p "$dir"
cp="$(scripts/kafka-reference.sh classpath)"

target/release/broker --listen "127.0.0.1:$port" --data-dir "$dir/data" \
  --group-initial-rebalance-delay-ms 0 2>"$dir/broker.log" &
broker_pid=$!
trap 'kill "$broker_pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && break; sleep 0.2; done

.venv/bin/python bench/rdkafka_bench.py create --bootstrap "127.0.0.1:$port" --topic prof --partitions 8 >/dev/null
perf record -e cpu-clock -F 999 -o "$dir/perf.data" -p "$broker_pid" 2>"$dir/perf.log" &
perf_pid=$!
java -Xmx512M -cp "$cp" org.apache.kafka.tools.ProducerPerformance --topic prof --num-records "$records" \
  --record-size 1024 --throughput -1 --producer-props "bootstrap.servers=127.0.0.1:$port" acks=all \
  linger.ms=5 batch.size=1048576 | tail -1
.venv/bin/python bench/rdkafka_bench.py consume --bootstrap "127.0.0.1:$port" --topic prof --count "$records"
kill -INT "$perf_pid"; wait "$perf_pid" || true
perf report -i "$dir/perf.data" --no-children --sort dso,symbol --stdio 2>/dev/null \
  | grep -v '^#' | grep '%' | sed -n 1,40p
