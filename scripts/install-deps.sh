#!/usr/bin/env bash
# System packages the build needs (protoc for the Oxia client) plus Debian's kcat for the tour
# and tests. Idempotent; quick when everything is present.
set -euo pipefail

need=()
command -v protoc >/dev/null || need+=(protobuf-compiler)
command -v kcat >/dev/null || need+=(kcat)
command -v cc >/dev/null || need+=(build-essential)
command -v pkg-config >/dev/null || need+=(pkg-config)
python3 -c 'import venv, ensurepip' 2>/dev/null || need+=(python3-venv)
if [ ${#need[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
fi

if ! command -v cargo >/dev/null; then
  if [ -x "$HOME/.cargo/bin/cargo" ]; then
    export PATH="$HOME/.cargo/bin:$PATH"
  else
    echo "cargo not found: install Rust 1.85 or newer (for example Debian's 'rustup' package, then 'rustup default stable')" >&2
    exit 1
  fi
fi
