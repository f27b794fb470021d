#!/usr/bin/env bash
# Prepare this machine for sandboxed grading as root (Gradescope, the Docker image, CI): let the worker
# uids (numeric, from grader.sandbox.isolation's pool: no user accounts) reach the Python interpreter and its
# standard library: add the search bit (o+x, traverse only, never read or list) to every folder above
# them that lacks it (/root is 0700).
# Usage: scripts/setup-worker.sh [PYTHON]   (default: python3 on PATH). Idempotent. Needs root.
set -euo pipefail
python=${1:-python3}
if [ "$(id -u)" -ne 0 ]; then
  echo "setup-worker: not root: nothing to do (the worker runs as you, with limits and an audit hook)"
  exit 0
fi
"$python" - <<'PY'
import os, stat, sys, sysconfig
targets = {os.path.realpath(sys.executable), sysconfig.get_paths()["stdlib"], sysconfig.get_paths()["platstdlib"]}
for target in sorted(targets):
    folder = os.path.dirname(target) if os.path.isfile(target) else target
    while True:
        mode = os.stat(folder).st_mode
        if not mode & stat.S_IXOTH:
            os.chmod(folder, mode | stat.S_IXOTH)
            print(f"setup-worker: o+x {folder}")
        if folder == "/":
            break
        folder = os.path.dirname(folder)
PY
echo "setup-worker: ready"
