#!/usr/bin/env bash
# Installs the Oxia server used by the Oxia MetaStore tests into <repo>/.tools/bin/oxia.
#
# The binary is built from scripts/oxia-wrapper (upstream oxiad at the Oxia v0.15.0 commit, gRPC
# API io.oxia.proto.v1) through the Go module proxy. Idempotent: when the installed binary was
# built from the same wrapper sources it returns at once. Prints the binary's path on stdout.
set -euo pipefail

repo_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
wrapper_dir="$repo_dir/scripts/oxia-wrapper"
bin_dir="$repo_dir/.tools/bin"
bin="$bin_dir/oxia"
stamp="$bin_dir/oxia.stamp"

if ! command -v go >/dev/null 2>&1 && [ -x /usr/local/go/bin/go ]; then
  export PATH="/usr/local/go/bin:$PATH"
fi
if ! command -v go >/dev/null 2>&1; then
  echo "install-oxia: the go toolchain (>= 1.25) is required to build the oxia server" >&2
  exit 1
fi

# The stamp names exactly what the binary was built from; any change rebuilds.
wanted="$(cat "$wrapper_dir/go.mod" "$wrapper_dir/go.sum" "$wrapper_dir/main.go" | sha256sum | cut -d' ' -f1)"
if [ -x "$bin" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$bin_dir"
echo "install-oxia: building oxia server (first build takes a few minutes)" >&2
start_s=$(date +%s)
(cd "$wrapper_dir" && go build -mod=readonly -buildvcs=false -trimpath -o "$bin.tmp" .)
mv "$bin.tmp" "$bin"
echo "$wanted" > "$stamp"
echo "install-oxia: built $bin in $(( $(date +%s) - start_s ))s" >&2
echo "$bin"
