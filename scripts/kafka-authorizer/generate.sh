#!/usr/bin/env bash
# Regenerates broker/tests/kafka-authorizer-cases.jsonl: random ACL scenarios answered by the
# reference Kafka's StandardAuthorizer (scripts/kafka-reference.sh install puts its jars in
# tests/.work/kafka/libs). The seed is fixed, so the file only changes with Kafka's answers.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$HERE/../.."
CP="$("$ROOT/scripts/kafka-reference.sh" classpath)"
OUT="$(mktemp -d)"
trap 'rm -rf "$OUT"' EXIT
javac -d "$OUT" -cp "$CP" "$HERE/AuthorizerCases.java"
java -cp "$CP:$OUT" AuthorizerCases 2>/dev/null > "$ROOT/broker/tests/kafka-authorizer-cases.jsonl"
wc -lc "$ROOT/broker/tests/kafka-authorizer-cases.jsonl"
