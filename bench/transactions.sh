#!/usr/bin/env bash
# Transactional produce MiB/s (transactions of 100 and of 10,000 records) and commit latency
# p50/p99, our broker and Apache Kafka side by side (see bench/transactions.py). Knobs:
# BENCH_TXN_RECORDS, BENCH_TXN_PARTITIONS, BENCH_BROKERS.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/kafka-reference.sh install
if ! .venv/bin/python -c "import confluent_kafka" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "confluent-kafka==2.*"
fi
case " ${BENCH_BROKERS:-kafka ours} " in
  *" ours "*) cargo build --release -p broker ;;
esac

exec .venv/bin/python bench/transactions.py "$@"
