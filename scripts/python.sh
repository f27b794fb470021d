#!/usr/bin/env bash
# Print the path of a released Python 3.11 to 3.13 for the kit: $PYTHON if set, else the first of
# python3, python3.13, python3.12, python3.11 on PATH that is one. None, and root on Debian or Ubuntu (the
# Docker image: debian:bookworm-slim has no Python): install python3.11 from the distribution's packages.
# A pre-release is refused (Ubuntu 22.04's python3.11 is 3.11.0rc1: no limit on integer digits).
# Usage: scripts/python.sh   (prints one path; exit 1 with a message when there is none)
set -euo pipefail
supported() { "$1" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))' 2>/dev/null; }
released() { "$1" -c 'import sys; sys.exit(sys.version_info.releaselevel != "final")' 2>/dev/null; }
prerelease() {  # the one-line refusal of an interpreter that is not a released version
  echo "python: $1 is Python $("$1" -c 'import platform; print(platform.python_version())'), a pre-release: install a released 3.11 to 3.13, or set PYTHON=/path/to/it" >&2
}
if [ -n "${PYTHON:-}" ]; then
  if command -v "$PYTHON" >/dev/null && supported "$PYTHON"; then
    if released "$PYTHON"; then command -v "$PYTHON"; exit 0; fi
    prerelease "$PYTHON"; exit 1
  fi
  echo "python: PYTHON=$PYTHON is not a Python 3.11 to 3.13 (unset it to use the one on PATH)" >&2
  exit 1
fi
refused=""
for candidate in python3 python3.13 python3.12 python3.11; do
  if command -v "$candidate" >/dev/null && supported "$candidate"; then
    if released "$candidate"; then command -v "$candidate"; exit 0; fi
    refused=${refused:-$candidate}
  fi
done
if [ -n "$refused" ]; then prerelease "$(command -v "$refused")"; exit 1; fi
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends python3.11 python3.11-venv >&2
  rm -rf /var/lib/apt/lists/*
  if released python3.11; then command -v python3.11; exit 0; fi
  prerelease "$(command -v python3.11)"; exit 1
fi
echo "python: no Python 3.11 to 3.13 here: install one, or set PYTHON=/path/to/python3.x" >&2
exit 1
