#!/usr/bin/env bash
# Set up, then run every check of the kit: lint (Python and the Dockerfile), types (mypy over grader/),
# the student mirror and inventory are current, the suites' verdicts (reference 100%, stubs 0 on every
# exercise), and all tests (the kit's own, the packaging and its rehearsals, and both suites against the
# reference; the TA's pages in headless Chromium, installed as root where missing), and the hostile
# tests once more with the audit hook not installed. With
# python3.12 / python3.13 on the machine, the reference's golden demo (and on 3.13 its suites) are checked
# on them too.
# As root, beside all of that (their output shown at the end): the grading image, built with Podman and
# graded in (scripts/test-image.sh), then `otter grade` of the packaged zip in Otter's own image on the
# same base (scripts/test-otter-grade.sh). They run at once with the checks because most of their time is
# waiting on builds and downloads; the gradings on both sides are safe side by side (a host grader leases
# its worker uids on the machine and passes over any uid a process of a container runs under).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
py=.venv/bin/python
if [ "$(id -u)" -eq 0 ] && ! command -v chromium >/dev/null 2>&1; then
  echo "test: installing Debian's chromium (the TA's pages are checked in a real browser)"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi
containers=''
if [ "$(id -u)" -eq 0 ]; then
  containers_log=$(mktemp)
  echo "test: the grading image and otter grade, started beside the checks below (their output comes last)"
  setsid bash -c 'scripts/test-image.sh && scripts/test-otter-grade.sh' >"$containers_log" 2>&1 &
  containers=$!
  trap 'kill -- -"$containers" 2>/dev/null || true' EXIT  # a failed check ends them too
fi
"$py" -m ruff check .
"$py" -m mypy
.venv/bin/hadolint Dockerfile
"$py" -m grader build --check
"$py" -m grader validate
"$py" -m pytest -q
# (tests/kit/test_kit_isolation.py switches the hook off in its own tests: not run twice)
echo "test: the hostile tests again, with the audit hook not installed (the OS layers alone must hold)"
OPTLAB_LAYERS_OFF=audit_hook "$py" -m pytest -q tests/kit/test_kit_hostile.py
interpreter() {  # the first python$1 that runs: on PATH, under pyenv, or Debian's
  for candidate in "python$1" /root/.pyenv/versions/"$1".*/bin/python "/usr/bin/python$1"; do
    if "$candidate" -c "import sys" >/dev/null 2>&1; then echo "$candidate"; return; fi
  done
}
# 3.13 (Otter's grading environment): both suites on the reference, its golden demo, the codec; 3.12,
# between the two ends of the range: the golden demo and the codec (the suites' verdicts are 3.11's and
# 3.13's, and nothing the suites use changed between them)
for version in 3.12 3.13; do
  other=$(interpreter "$version")
  if [ -z "$other" ]; then echo "test: no python$version on this machine, skipped"; continue; fi
  VENV=".venv-$version" EXTRAS= scripts/setup.sh "$other" >/dev/null  # the suites' own packages only
  suites=(); what="the golden demo and the codec"
  if [ "$version" = 3.13 ]; then suites=(tests/visible tests/hidden); what="the suites on the reference, $what"; fi
  echo "test: $what on python$version"
  ".venv-$version/bin/python" -m pytest -q "${suites[@]}" tests/kit/test_kit_reference.py tests/kit/test_kit_codec.py
done
if [ -n "$containers" ]; then
  echo "test: the grading image, built with Podman and graded in as on this machine (scripts/test-image.sh),"
  echo "      then otter grade of the packaged zip, with Podman behind docker, against grader batch"
  echo "      (scripts/test-otter-grade.sh): waiting for them"
  status=0
  wait "$containers" || status=$?
  trap - EXIT
  cat "$containers_log"
  rm -f "$containers_log"
  exit "$status"
fi
echo "test: not root: the grading image and otter grade are not tested here (scripts/test-image.sh and"
echo "      scripts/test-otter-grade.sh need root; CI runs them)"
