#!/usr/bin/env bash
# An authenticated producer and consumer quiet and under a pre-login attack, our broker and Apache
# Kafka side by side (see bench/front_door.py). Knobs: BENCH_FRONT_DOOR_RECORDS,
# BENCH_FRONT_DOOR_ATTACKERS, BENCH_BROKERS.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/kafka-reference.sh install
if ! .venv/bin/python -c "import confluent_kafka" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "confluent-kafka==2.*"
fi
cargo build --release -p broker -p compactor

exec .venv/bin/python bench/front_door.py "$@"
