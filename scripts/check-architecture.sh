#!/usr/bin/env bash
# Checks that every "`name` (path:line)" in docs/architecture.md names a function defined at that
# line; `--fix` rewrites the line numbers to where the functions are now.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 - "$@" <<'PY'
import re, sys
doc = "docs/architecture.md"
text = open(doc).read()
fix = "--fix" in sys.argv
bad = []

def find(path, name):
    fn = name.split("::")[-1]
    for n, line in enumerate(open(path).read().split("\n"), 1):
        if re.search(rf"\bfn {re.escape(fn)}\b", line):
            return n
    return None

def check(m):
    name, path, line = m.group(1), m.group(2), int(m.group(3))
    at = find(path, name)
    if at is None:
        bad.append(f"{path}: no fn {name}")
        return m.group(0)
    if at != line:
        if not fix:
            bad.append(f"{path}:{line} is not fn {name} (it is at line {at})")
        return f"`{name}` ({path}:{at})"
    return m.group(0)

new = re.sub(r"`([A-Za-z_:]+)` \(([a-z_/.-]+\.rs):(\d+)\)", check, text)
if fix:
    open(doc, "w").write(new)
if bad:
    print("\n".join(bad))
    sys.exit(1)
print(f"{doc}: every function reference holds")
PY
