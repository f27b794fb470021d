#!/usr/bin/env bash
# Set up the kit on this machine: a virtual environment with the pinned tools, and (as root) the
# unprivileged worker user. Usage: scripts/setup.sh [PYTHON]  (default: what scripts/python.sh finds).
# EXTRAS picks the optional dependencies (default dev: everything CI needs; the Docker image: batch;
# empty: none, the suites' own packages).
# VENV names the environment's folder (default .venv). Idempotent.
set -euo pipefail
cd "$(dirname "$0")/.."
python=${1:-$(scripts/python.sh)}
venv=${VENV:-.venv}
if [ ! -x "$venv/bin/python" ]; then
  echo "setup: making $venv with $python"
  "$python" -m venv "$venv"
fi
extras=${EXTRAS-dev}  # unset: dev; set but empty: none (the suites' own packages only)
echo "setup: installing the kit and its pinned packages (.${extras:+[$extras]}) into $venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -e ".${extras:+[$extras]}"
scripts/setup-worker.sh "$venv/bin/python"
