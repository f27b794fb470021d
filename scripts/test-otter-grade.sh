#!/usr/bin/env bash
# `otter grade` of the packaged autograder.zip as a TA runs it, with Podman behind `docker`: the example
# submissions and a hostile one (the stub beside a submitted .OTTER_LOG and an `otter/` package) graded
# with --containers 2 on the Debian 12 base that scripts/test-image.sh makes, then Otter's CSV checked
# against `grader batch`'s grades.csv (tests/kit/test_kit_otter_grade.py: one column per exercise, every
# example's total and exercise points equal, the hostile one 0). Needs root. Podman is set up as for the
# image test (scripts/podman.sh: its own CONTAINERS_CONF, the base kept between runs); Otter reaches it
# through scripts/otter-podman/docker, first on PATH (Podman 4.3 has no `buildx inspect`). Otter's image
# is kept as otter-grade:optlab-ci: the next run builds only the layers of the kit's files (the zip).
# Usage: scripts/test-otter-grade.sh   (CI runs it after scripts/test-image.sh; prints each step's seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
kit=$PWD
base=localhost/optlab-base:bookworm
state=$kit/.optlab-podman
name=optlab-ci
image=localhost/otter-grade:$name
say() { echo "test-otter-grade: $*"; }
step() {  # step NAME COMMAND...: run it, then say how long it took
  local what=$1 start=$SECONDS
  shift
  "$@"
  say "$what: $((SECONDS - start)) s"
}
if [ "$(id -u)" -ne 0 ]; then say "needs root (Podman's rootful containers, the worker uids)"; exit 1; fi
. scripts/podman.sh
[ -x .venv/bin/python ] || scripts/setup.sh >/dev/null

previous=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
leftovers() {  # containers of Otter's image left by a grading that failed (Otter removes the others)
  podman ps -a -q --filter "ancestor=$image" | xargs -r podman rm -f >/dev/null 2>&1 || true
}
trap leftovers EXIT
check() {
  PATH=$kit/scripts/otter-podman:$PATH OPTLAB_OTTER_GRADE_IMAGE=$base OPTLAB_OTTER_GRADE_NAME=$name \
    .venv/bin/python -m pytest -q -s -p no:cacheprovider tests/kit/test_kit_otter_grade.py
}
step "otter grade of the examples and a hostile stub, checked against grader batch" check
# the image this run replaced (the zip's layers changed with the kit), left untagged: gone
if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$image")" ]; then
  podman rmi "$previous" >/dev/null 2>&1 || true
fi
say "passed ($SECONDS s in all)"
