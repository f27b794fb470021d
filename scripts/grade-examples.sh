#!/usr/bin/env bash
# Set up, then grade every example submission in examples/submissions/ as a TA would, with
# `grader batch`: it prints each one's score, and writes examples/results/grades.csv, the report, and
# each submission's results.json (and the page its student sees) under examples/results/grades-results/.
# It says what it is doing at each step: the first run's set-up takes about 2 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "grade-examples: setting up .venv (the first run installs the pinned packages: about 2 minutes)"
scripts/setup.sh
py=.venv/bin/python
echo "grade-examples: checking that student/ and tests/inventory.json match the reference (grader build --check)"
"$py" -m grader build --check >/dev/null
echo "grade-examples: grading examples/submissions/ with grader batch"
exec "$py" -m grader batch examples/submissions -o examples/results/grades.csv --force "$@"
