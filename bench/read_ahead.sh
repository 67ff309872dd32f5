#!/usr/bin/env bash
# Catch-up reads of compacted files under an object-store latency model, read-ahead on vs off
# (see bench/read_ahead.py). Prints Markdown.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
scripts/install-test-deps.sh >/dev/null
cargo build --release -p broker -p compactor
exec .venv/bin/python bench/read_ahead.py "$@"
