#!/usr/bin/env bash
# Set up the kit on this machine: a virtual environment with the pinned tools, and (as root) the
# unprivileged worker user. Usage: scripts/setup.sh [PYTHON]  (default python3). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-${PYTHON:-python3}}
venv=${VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".[dev]"
scripts/setup-worker.sh "$venv/bin/python"
