#!/usr/bin/env bash
# What instrumentation costs: broker CPU per GiB and produce MiB/s at max produce (librdkafka,
# acks=all) with --metrics-enabled true and false, rounds alternating so that both see the same
# machine (see bench/metrics_cost.py). Knobs: BENCH_METRICS_RECORDS, BENCH_METRICS_ROUNDS.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
cargo build --release -p broker -p compactor
exec .venv/bin/python bench/metrics_cost.py "$@"
