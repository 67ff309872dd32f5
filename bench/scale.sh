#!/usr/bin/env bash
# Cost and scale curves of our broker (see bench/scale.py): one fresh broker per point (10, 1,000
# and 10,000 partitions; 10 and 1,000 producer connections; 1 and 100 consumer groups) under the
# same fixed produce load. Knobs: BENCH_SCALE_POINTS, BENCH_SCALE_S, BENCH_SCALE_RATE_MIB, BENCH_SCALE_IDLE_S,
# BENCH_SCALE_BROKER (a broker binary; default target/release/broker, built if missing),
# BENCH_SCALE_PORT. Writes bench/.work/scale.md; numbers and diagnosis in docs/scale.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if ! .venv/bin/python -c "import confluent_kafka" 2>/dev/null; then
  [ -x .venv/bin/python ] || python3 -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "confluent-kafka==2.*"
fi
if [ -z "${BENCH_SCALE_BROKER:-}" ] && [ ! -x target/release/broker ]; then
  cargo build --release -p broker -p compactor
fi
# The many-client load (franz-go); Go fetches its modules through the module proxy.
mkdir -p bench/.work
(cd bench/scale-load && go build -o ../.work/scale-load .)

exec .venv/bin/python bench/scale.py "$@"
