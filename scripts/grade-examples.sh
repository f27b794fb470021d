#!/usr/bin/env bash
# Set up, then grade every example submission in examples/submissions/ and print a table of scores.
# Each submission's results.json goes to examples/results/<name>.json.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh >/dev/null
py=.venv/bin/python
"$py" -m grader build --check >/dev/null
mkdir -p examples/results
printf '%-28s %8s\n' "submission" "score"
for submission in examples/submissions/*; do
  name=$(basename "$submission")
  "$py" -m grader grade "$submission" -o "examples/results/${name%.*}.json" >/dev/null
  "$py" -c "import json,sys; d=json.load(open(sys.argv[1])); print(f'{sys.argv[2]:28s} {d[\"score\"]:8.2f}')" \
    "examples/results/${name%.*}.json" "$name"
done
