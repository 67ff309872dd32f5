#!/usr/bin/env bash
# The built-in schema registry (issue 24): API lookups and registrations per second, and produce
# throughput with broker-side validation off and on, for Avro and Protobuf records (see
# bench/schema_registry.py). Knobs: BENCH_SR_RECORDS, BENCH_SR_ROUNDS, BENCH_SR_SECONDS.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
export PATH="/usr/local/go/bin:$PATH"

if ! .venv/bin/python -c "import confluent_kafka.schema_registry.avro, fastavro, google.protobuf" 2>/dev/null; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check "confluent-kafka[avro,protobuf,schemaregistry]==2.*"
fi
cargo build --release -p broker
mkdir -p bench/.work
(cd bench/registry-load && go build -o ../.work/registry-load .)

exec .venv/bin/python bench/schema_registry.py "$@"
