#!/usr/bin/env bash
# The SASL parsing paths (broker/tests/sasl_fuzz.rs) and what listeners read before a client is
# known, TLS handshakes and pre-authentication SASL frames into a real broker
# (broker/tests/listener_fuzz.rs), under many more random and mutated inputs than CI runs
# (proptest on stable Rust: cargo-fuzz needs nightly).
#
#   scripts/fuzz-sasl.sh [CASES]      default 20000 cases per property (listener batches: a
#                                      tenth of that), release build
#
# A failure prints the minimal input proptest shrank it to; proptest also records it under
# broker/proptest-regressions/ so that the next run tries it first.
set -euo pipefail
cd "$(dirname "$0")/.."
cases="${1:-20000}"
PROPTEST_CASES="$cases" cargo test -p broker --release --test sasl_fuzz -- --test-threads 2
PROPTEST_CASES="$((cases / 10))" cargo test -p broker --release --test listener_fuzz
