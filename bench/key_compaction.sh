#!/usr/bin/env bash
# Key compaction benchmark: KEYS keys (default 1,000,000) updated UPDATES times (default 10),
# values of VALUE_BYTES (default 100), one partition of a compacted topic; prints the key
# compaction pass's time, CPU, bytes, peak RSS and the topic's Parquet size before and after.
# See compactor/examples/key_compaction_bench.rs and docs/compaction.md.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
KEYS="${KEYS:-1000000}" UPDATES="${UPDATES:-10}" VALUE_BYTES="${VALUE_BYTES:-100}"
CARGO_INCREMENTAL=0 cargo build --release -q -p compactor --example key_compaction_bench
BIN=target/release/examples/key_compaction_bench
DIR="$(mktemp -d)"
trap 'rm -rf "$DIR"' EXIT
"$BIN" prepare "$DIR" "$KEYS" "$UPDATES" "$VALUE_BYTES"
"$BIN" compact "$DIR"
