#!/usr/bin/env bash
# One benchmark run: our broker (local folder, then S3 on moto) against Apache Kafka, same clients.
# Writes BENCHMARKS.md. Knobs: BENCH_RECORDS, BENCH_LATENCY_S, BENCH_BROKERS, BENCH_OBJECT_LATENCY
# (none, s3-standard, s3-express: each of our brokers runs once per profile; see bench/run.py).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/install-s3.sh >/dev/null
scripts/kafka-reference.sh install
if ! .venv/bin/python -c "import confluent_kafka, boto3" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "confluent-kafka==2.*" boto3
fi
cargo build --release -p broker
if [ -d compactor ]; then cargo build --release -p compactor; fi

exec .venv/bin/python bench/run.py "$@"
