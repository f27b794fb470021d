#!/usr/bin/env bash
# Set up, then grade every example submission in examples/submissions/ as a TA would, with
# `grader batch`: it prints each one's score, and writes examples/results/grades.csv, the report, and
# each submission's results.json under examples/results/grades-results/<name>/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
py=.venv/bin/python
"$py" -m grader build --check >/dev/null
exec "$py" -m grader batch examples/submissions -o examples/results/grades.csv --force "$@"
