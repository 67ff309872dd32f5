#!/usr/bin/env bash
# Regenerates storage/tests/kafka-topic-configs.jsonl from the reference Kafka jars
# (scripts/kafka-reference.sh install puts them in tests/.work/kafka/libs).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$HERE/../.."
CP="$("$ROOT/scripts/kafka-reference.sh" classpath)"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
javac -d "$OUT" -cp "$CP" "$HERE/PrintTopicConfigs.java"
java -cp "$CP:$OUT" PrintTopicConfigs 2>/dev/null > "$ROOT/storage/tests/kafka-topic-configs.jsonl"
wc -l "$ROOT/storage/tests/kafka-topic-configs.jsonl"
python3 "$HERE/gen_docs.py"
