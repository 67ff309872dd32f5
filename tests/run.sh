#!/usr/bin/env bash
# The whole test suite, exactly what CI runs (.ci/run calls this). It installs what the tests
# need, and every test harness starts and stops the servers it uses (Oxia, moto, brokers).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:/usr/local/go/bin:$PATH"
started=$(date +%s)
step() { echo; echo "==> $* ($(( $(date +%s) - started ))s)"; }

# CI builds once from a clean checkout: incremental caches would only cost disk.
export CARGO_INCREMENTAL="${CARGO_INCREMENTAL:-0}"
free_disk() { df -h "${CARGO_TARGET_DIR:-$PWD}" | awk 'NR==2 {print $4 " free on " $6}'; }

step "installing build and test dependencies ($(free_disk))"
scripts/install-deps.sh
OXIA_BIN="$(scripts/install-oxia.sh | tail -n 1)"
export OXIA_BIN
scripts/install-s3.sh
export MOTO_SERVER_BIN="$PWD/.venv/bin/moto_server"
scripts/install-test-deps.sh

step "format and lint"
cargo fmt --all -- --check
cargo clippy --workspace --all-targets --locked -- -D warnings
scripts/check-architecture.sh

step "rust unit, conformance and integration tests ($(free_disk))"
cargo test --workspace --locked

step "end-to-end tests with real clients against real broker processes ($(free_disk))"
cargo build -p broker -p compactor --locked
target_dir="${CARGO_TARGET_DIR:-$PWD/target}"
export BROKER_BIN="$target_dir/debug/broker" COMPACTOR_BIN="$target_dir/debug/compactor"
.venv/bin/python -m pytest tests/e2e -q -p no:cacheprovider

step "all tests passed"
