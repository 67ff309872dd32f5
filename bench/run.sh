#!/usr/bin/env bash
# One benchmark run: our broker (local folder, then S3 on moto) against Apache Kafka, same clients.
# Writes BENCHMARKS.md. Knobs: BENCH_RECORDS, BENCH_LATENCY_S, BENCH_BROKERS, BENCH_OBJECT_LATENCY
# (none, s3-standard, s3-express: each of our brokers runs once per profile; see bench/run.py),
# BENCH_OLD_BROKER_BIN (an earlier build, broker `ours-old-file`). Then the cost and scale curves
# (bench/scale.sh, its knobs) are appended to the report; BENCH_SCALE=0 leaves them out.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

scripts/install-s3.sh >/dev/null
scripts/kafka-reference.sh install
if ! .venv/bin/python -c "import confluent_kafka, boto3" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "confluent-kafka==2.*" boto3
fi
# Both in one build: built one at a time, each would unify features differently and rebuild the
# dependencies they share.
cargo build --release -p broker -p compactor

.venv/bin/python bench/run.py "$@"

if [ "${BENCH_SCALE:-1}" != 0 ]; then
  report="${BENCH_REPORT:-$ROOT/BENCHMARKS.md}"
  BENCH_SCALE_BROKER="${BENCH_SCALE_BROKER:-$ROOT/target/release/broker}" bench/scale.sh
  {
    printf '\n## Cost and scale curves (`bench/scale.sh`, same run)\n\n'
    printf 'One fresh broker of this build per point, local-folder store; diagnosis in `docs/scale.md`.\n\n'
    cat bench/.work/scale.md
  } >> "$report"
fi
