#!/usr/bin/env bash
# Print the path of a Python 3.11 to 3.13 for the kit: $PYTHON if set, else the first of python3,
# python3.13, python3.12, python3.11 on PATH that is one. None, and root on Debian or Ubuntu (the
# Docker image: Ubuntu 22.04 ships 3.10): install python3.11 from the distribution's packages.
# Usage: scripts/python.sh   (prints one path; exit 1 with a message when there is none)
set -euo pipefail
supported() { "$1" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null; }
if [ -n "${PYTHON:-}" ]; then
  if command -v "$PYTHON" >/dev/null && supported "$PYTHON"; then command -v "$PYTHON"; exit 0; fi
  echo "python: PYTHON=$PYTHON is not a Python 3.11 to 3.13 (unset it to use the one on PATH)" >&2
  exit 1
fi
for candidate in python3 python3.13 python3.12 python3.11; do
  if command -v "$candidate" >/dev/null && supported "$candidate"; then command -v "$candidate"; exit 0; fi
done
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv >&2
  rm -rf /var/lib/apt/lists/*
  command -v python3.11
  exit 0
fi
echo "python: no Python 3.11 to 3.13 here: install one, or set PYTHON=/path/to/python3.x" >&2
exit 1
