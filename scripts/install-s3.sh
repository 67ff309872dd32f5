#!/usr/bin/env bash
# Installs an S3-compatible server (moto) for the object-store conformance tests.
# Idempotent: a second run only checks that moto_server is present and exits quickly.
# The .venv is shared with other tooling (Python Kafka clients), so it is never recreated.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${repo_root}/.venv"
moto_version="${MOTO_VERSION:-5.1.*}"

if [ ! -x "${venv}/bin/python" ]; then
    echo "creating ${venv}"
    python3 -m venv "${venv}"
fi

if [ -x "${venv}/bin/moto_server" ] && "${venv}/bin/python" -c "import moto.server, flask" 2>/dev/null; then
    echo "moto_server already installed at ${venv}/bin/moto_server"
    exit 0
fi

"${venv}/bin/python" -m pip install --quiet --disable-pip-version-check "moto[server]==${moto_version}"
"${venv}/bin/python" -c "import moto.server" 
echo "installed moto_server at ${venv}/bin/moto_server"
