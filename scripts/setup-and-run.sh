#!/usr/bin/env bash
# Installs what the broker needs, builds it, and starts it on the embedded defaults:
# Kafka listener on 127.0.0.1:9092, objects in ./data/objects, metadata in ./data/meta.
# Extra arguments go to the broker (see `target/release/broker --help`).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
export PATH="$HOME/.cargo/bin:$PATH"
cargo build --release -p broker
exec target/release/broker "$@"
