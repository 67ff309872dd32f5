#!/usr/bin/env bash
# Installs what the end-to-end suite (tests/e2e) needs. Idempotent and quick when already done:
# Debian's kcat, a Python venv at ./.venv (created only if missing, never deleted; others add
# packages to it), the Java client program, the Go client programs, and the reference Kafka jars.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BIN="$ROOT/tests/.work/bin"
mkdir -p "$BIN"

# Debian's kcat on purpose: its librdkafka 2.0.2 is the strict parser real users still run.
# docker-compose (Debian's 1.29) only validates docker-compose.yml offline; no engine is needed.
need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v docker-compose >/dev/null 2>&1 || need+=(docker-compose)
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}"
fi

DUCKDB=1.5.5
if [ ! -x "$ROOT/.venv/bin/python" ]; then
  python3 -m venv "$ROOT/.venv"
fi
if ! "$ROOT/.venv/bin/python" -c 'import pytest, confluent_kafka, kafka, aiokafka, lz4, snappy, zstandard, cramjam, duckdb, pyarrow' 2>/dev/null; then
  "$ROOT/.venv/bin/pip" install -q pytest pyyaml confluent-kafka kafka-python aiokafka lz4 python-snappy zstandard cramjam "duckdb==$DUCKDB" pyarrow
fi
# Iceberg tables are judged by pyiceberg (REST and SQL catalogs) and by DuckDB's iceberg
# extension, which PyPI packages per DuckDB release (with avro and httpfs, which it loads): the
# extensions load only into the DuckDB of their version.
if ! "$ROOT/.venv/bin/python" -c "import pyiceberg.catalog.sql, duckdb_extension_iceberg, duckdb_extension_avro, duckdb_extension_httpfs, duckdb; assert duckdb.__version__ == '$DUCKDB'" 2>/dev/null; then
  "$ROOT/.venv/bin/pip" install -q "pyiceberg[sql-sqlite,pyarrow]==0.12.0" "duckdb==$DUCKDB" \
    "duckdb-extension-iceberg==$DUCKDB" "duckdb-extension-avro==$DUCKDB" "duckdb-extension-httpfs==$DUCKDB"
fi
# confluent-kafka's Schema Registry client and its Avro, Protobuf and JSON Schema serializers.
if ! "$ROOT/.venv/bin/python" -c 'import confluent_kafka.schema_registry.avro, confluent_kafka.schema_registry.protobuf, confluent_kafka.schema_registry.json_schema' 2>/dev/null; then
  "$ROOT/.venv/bin/pip" install -q "confluent-kafka[avro,json,protobuf,schemaregistry]"
fi

# Rebuild a program only when one of its sources is newer than the built artifact.
stale() { # stale ARTIFACT SOURCE_DIR
  [ ! -e "$1" ] || [ -n "$(find "$2" -newer "$1" -type f \( -name '*.go' -o -name 'go.*' -o -name '*.java' -o -name 'pom.xml' \) -print -quit)" ]
}

JAVA_DIR="$ROOT/tests/clients/java"
if stale "$JAVA_DIR/target/e2e-client.jar" "$JAVA_DIR"; then
  mvn -q -B -Dstyle.color=never -f "$JAVA_DIR/pom.xml" package
fi
STREAMS_DIR="$ROOT/tests/clients/streams"
if stale "$STREAMS_DIR/target/e2e-streams.jar" "$STREAMS_DIR"; then
  mvn -q -B -Dstyle.color=never -f "$STREAMS_DIR/pom.xml" package
fi

for prog in franz sarama; do
  if stale "$BIN/$prog" "$ROOT/tests/clients/$prog"; then
    (cd "$ROOT/tests/clients/$prog" && go build -o "$BIN/$prog" .)
  fi
done

"$ROOT/scripts/kafka-reference.sh" install
