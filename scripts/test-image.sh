#!/usr/bin/env bash
# Build the grading image (the Dockerfile as shipped) with Podman and grade in it as Gradescope does,
# against the same gradings on this machine: the reference 100, the stub 0, a partial submission equal
# to `grader grade` here entry by entry, the reference graded here and in the image at the same time
# with separate worker-uid lease folders (full points on both sides, round after round), `grader batch`
# over examples/submissions equal to this machine's grades.csv score by score, and the kit's isolation
# and Landlock tests in the image. Needs root; installs podman, runc and debootstrap when missing.
# Podman is set up for this machine in .optlab-podman/ (git-ignored) through its own CONTAINERS_CONF,
# never the machine's configuration: runc (crun refuses cgroup v1 without a writable hierarchy),
# default ulimits within this shell's hard limits (Podman's defaults are higher: the container would not
# start). The FROM image is a Debian 12 made with debootstrap from the machine's Debian mirror and
# `podman import` (kept between runs as localhost/optlab-base:bookworm; no registry is needed), with
# this machine's CA bundle, which pip in the build uses.
# Usage: scripts/test-image.sh   (CI: prints each step's seconds; exit 1 at the first difference)
#        scripts/test-image.sh --side-by-side ROUNDS [FEW_UID_ROUNDS]   (benchmarks/bench_image.sh: the
#          set-up and build, then only the full reference graded here and in the image at once, ROUNDS
#          rounds, then FEW_UID_ROUNDS with both sides on 12 uids; prints each round's scores and seconds)
set -euo pipefail
cd "$(dirname "$0")/.."
kit=$PWD
base=localhost/optlab-base:bookworm
image=localhost/optlab-grader:test
state=$kit/.optlab-podman
say() { echo "test-image: $*"; }
rounds='' few_uid_rounds=0
number() { [[ "$1" =~ ^(0|[1-9][0-9]*)$ ]]; }
case "${1:-}" in
  "") ;;
  --side-by-side)
    rounds=${2:-} few_uid_rounds=${3:-0}
    if ! number "$rounds" || ! number "$few_uid_rounds" || ((rounds + few_uid_rounds == 0)); then
      say "--side-by-side takes a number of rounds and, optionally, of rounds on 12 uids: --side-by-side 20 5"; exit 2
    fi ;;
  *) say "unknown argument $1: scripts/test-image.sh [--side-by-side ROUNDS [FEW_UID_ROUNDS]]"; exit 2 ;;
esac
step() {  # step NAME COMMAND...: run it, then say how long it took
  local name=$1 start=$SECONDS
  shift
  "$@"  # never as a condition (a `||` here would switch set -e off inside the step)
  say "$name: $((SECONDS - start)) s"
}

if [ "$(id -u)" -ne 0 ]; then say "needs root (Podman's rootful containers, the worker uids)"; exit 1; fi
# Podman set up for this run (scripts/podman.sh): the tools, $state/containers.conf, the base.
. scripts/podman.sh

# Proxies (http_proxy and the like) reach the build by themselves: Podman passes them on by default.
build() {
  podman build --pull=never --build-arg "BASE=$base" -t "$image" . >"$state/build.log" 2>&1 \
    || { tail -n 20 "$state/build.log"; say "build failed: $state/build.log"; return 1; }
}
previous=$(podman image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
step "build $image" build
# the image this build replaced, left untagged (about 400 MB of its own): gone, unless a container uses it
if [ -n "$previous" ] && [ "$previous" != "$(podman image inspect --format '{{.Id}}' "$image")" ]; then
  podman rmi "$previous" >/dev/null 2>&1 || true
fi
say "image size: $(podman image inspect "$image" --format '{{.Size}}' | awk '{printf "%.0f MB", $1 / 1e6}')"

# The host's gradings, with the kit's environment (scripts/setup.sh makes it when missing).
[ -x .venv/bin/python ] || scripts/setup.sh >/dev/null
py=$kit/.venv/bin/python
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
chmod 755 "$work"
# The reference graded here and in the image at the same time, each with its own lease folder (here the
# machine's /run/optlab-kit, in the image the container's own: a site that shares nothing), round after
# round: full points on both sides every time. On issue 25's main both leased 64100 first and this
# machine's sweep killed the image's worker (the reference scored 70.98 to 99.8). Each round's grading
# here starts once the image's has printed its first line. In the last rounds both sides draw from 12
# uids (OPTLAB_WORKER_UIDS; a grading holds up to 5 at once), so they do run workers under one uid.
side_by_side() {  # side_by_side ROUNDS FEW_UID_ROUNDS [--exercise N]...: prints each round; exit 1 if short
  "$py" - "$work/side" "$state" "$image" "$@" <<'PY'
import json, os, shutil, subprocess, sys, threading, time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
folder, keep, image, rounds, few_uid_rounds, *selection = sys.argv[1:]
folder, keep, rounds, few_uid_rounds = Path(folder), Path(keep), int(rounds), int(few_uid_rounds)
(folder / "submission").mkdir(parents=True)
shutil.copy("solutions/optimization_toolkit.py", folder / "submission")

def sides(number, uids):  # side -> (command, environment, its results.json)
    here, there = folder / f"here-{number}" / "results.json", folder / f"image-{number}"
    here.parent.mkdir()
    there.mkdir()
    uids_env = {"OPTLAB_WORKER_UIDS": uids} if uids else {}
    return {
        "in the image": (["podman", "run", "--rm", "-v", f"{folder / 'submission'}:/autograder/submission:ro",
                          "-v", f"{there}:/autograder/results", "--env=PYTHONUNBUFFERED=1",
                          *(f"--env={k}={v}" for k, v in uids_env.items()), image, "grader", "grade",
                          "/autograder/submission", "-o", "/autograder/results/results.json", *selection],
                         os.environ, there / "results.json"),
        "here": ([sys.executable, "-m", "grader", "grade", str(folder / "submission"), "-o", str(here),
                  *selection], dict(os.environ, **uids_env), here),
    }

def grade(command, env, results, started):  # -> score, points possible, seconds, the first shortfall
    begun = time.monotonic()
    run = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    printed = run.stdout.readline()  # the grader's first line ("isolation: ..."): it has started
    started.set()
    printed += run.stdout.read()
    run.wait()
    seconds = time.monotonic() - begun
    if run.returncode != 0 or not results.exists():
        return None, None, seconds, f"exit {run.returncode}: " + " ".join(printed.split()[-40:])
    document = json.loads(results.read_text())
    short = [f"{test['name']}: {test.get('score')} / {test.get('max_score')}"
             for test in document["tests"] if test.get("score") != test.get("max_score")]
    if short:  # kept for a look (the work folder goes at the end)
        kept = keep / f"side-by-side-{results.parent.name}.json"
        shutil.copy(results, kept)
        short[0] += f" (its results.json: {kept})"
    return document["score"], document["extra_data"]["points_possible"], seconds, (short or [""])[0]

failures = []
with ThreadPoolExecutor(2) as pool:
    for number in range(1, rounds + few_uid_rounds + 1):
        uids = "64100-64111" if number > rounds else ""
        running = {}
        for side, how in sides(number, uids).items():  # the image first: here starts once its grader has
            started = threading.Event()
            running[side] = pool.submit(grade, *how, started)
            started.wait(300)
        figures = {side: running[side].result() for side in ("here", "in the image")}
        print(f"test-image: side by side, round {number}{f' (uids {uids} both sides)' if uids else ''}: "
              + ", ".join(f"{side} {score} of {possible} in {seconds:.1f} s"
                          for side, (score, possible, seconds, _) in figures.items()), flush=True)
        failures += [f"test-image: side by side, round {number}, {side}: the reference scored {score} of "
                     f"{possible}: {why}" for side, (score, possible, _, why) in figures.items()
                     if score is None or score != possible]
print("\n".join(failures) or "test-image: side by side: full points on both sides in every round")
sys.exit(1 if failures else 0)
PY
}
if [ -n "$rounds" ]; then
  step "the full reference here and in the image at once, $rounds + $few_uid_rounds rounds" \
    side_by_side "$rounds" "$few_uid_rounds"
  exit 0
fi
submission() {  # submission NAME FILE: a Gradescope submission folder holding FILE as the module
  mkdir -p "$work/$1/submission" "$work/$1/results"
  cp "$2" "$work/$1/submission/optimization_toolkit.py"
}
# The gradings below share this machine's lease folder with the image, as a site may (README: then no
# worker here, another's grading or a TA's, ever runs under a uid a worker in the image holds); the
# side-by-side step above shows that separate folders cost no points either.
leases=/run/optlab-kit
[ -d "$leases" ] || mkdir -m 700 "$leases"
run() { podman run --rm -v "$leases:$leases" "$@"; }
in_image() {  # in_image NAME: grade NAME's folder in the image, as Gradescope lays it out
  run -v "$work/$1/submission:/autograder/submission:ro" \
    -v "$work/$1/results:/autograder/results" "$image" >"$work/$1/image.log" 2>&1 \
    || { tail -n 20 "$work/$1/image.log"; say "grading $1 in the image failed (its output above)"; return 1; }
}
on_host() {
  "$py" -m grader grade "$work/$1/submission" -o "$work/$1/host.json" >"$work/$1/host.log" 2>&1 \
    || { tail -n 20 "$work/$1/host.log"; say "grading $1 on this machine failed (its output above)"; return 1; }
}
score() { "$py" -c 'import json, sys; print(json.load(open(sys.argv[1]))["score"])' "$1"; }
layers() { "$py" -c 'import json, sys; print(json.load(open(sys.argv[1])).get("extra_data", {}).get("isolation"))' "$1"; }
expect_score() {  # expect_score NAME SCORE
  local got
  got=$(score "$work/$1/results/results.json")
  if ! "$py" -c 'import sys; sys.exit(abs(float(sys.argv[1]) - float(sys.argv[2])) > 1e-9)' "$got" "$2"; then
    say "$1 in the image scored $got, not $2"
    "$py" -c 'import json, sys
for test in json.load(open(sys.argv[1]))["tests"]:
    if test.get("score") != test.get("max_score"):
        print("  ", test.get("name"), test.get("score"), "/", test.get("max_score"), (test.get("output") or "")[:300])
' "$work/$1/results/results.json" | head -n 20
    exit 1
  fi
  say "$1 in the image: $got (isolation: $(layers "$work/$1/results/results.json"))"
}
submission reference solutions/optimization_toolkit.py
submission stub student/optimization_toolkit.py
submission partial examples/submissions/ben_partial.py
step "grade the reference in the image" in_image reference
expect_score reference 100
step "grade the stub in the image" in_image stub
expect_score stub 0
step "grade the partial submission in the image" in_image partial
step "grade the partial submission on this machine" on_host partial
say "on this machine: $(grep -m 1 isolation "$work/partial/host.log" || echo "isolation: (not printed)")"
"$py" - "$work/partial/host.json" "$work/partial/results/results.json" <<'PY'
import json, sys
host, image = (json.load(open(path)) for path in sys.argv[1:])
def entries(results):
    return [(test.get("name"), test.get("score"), test.get("max_score")) for test in results["tests"]]
differ = [(h, i) for h, i in zip(entries(host), entries(image)) if h != i]
if differ or len(host["tests"]) != len(image["tests"]) or host["score"] != image["score"]:
    print(f"test-image: the partial submission: {host['score']} here, {image['score']} in the image")
    for h, i in differ[:10]:
        print(f"  here {h}\n  image {i}")
    sys.exit(1)
print(f"test-image: the partial submission: {image['score']} in the image and here, "
      f"{len(image['tests'])} entries equal")
PY

step "the reference here and in the image at once, separate lease folders (3 + 2 rounds, exercises 6, 10, 11, 13)" \
  side_by_side 3 2 --exercise 6 --exercise 10 --exercise 11 --exercise 13

mkdir -p "$work/batch/out"
batch_in_image() {
  run -v "$kit/examples/submissions:/submissions:ro" -v "$work/batch/out:/out" "$image" \
    grader batch /submissions -o /out/grades.csv >"$work/batch/image.log" 2>&1 \
    || { tail -n 20 "$work/batch/image.log"; say "grader batch in the image failed (its output above)"; return 1; }
}
batch_on_host() {
  "$py" -m grader batch examples/submissions -o "$work/batch/grades.csv" >"$work/batch/host.log" 2>&1 \
    || { tail -n 20 "$work/batch/host.log"; say "grader batch on this machine failed (its output above)"; return 1; }
}
step "grader batch over examples/submissions in the image" batch_in_image
step "grader batch over examples/submissions on this machine" batch_on_host
"$py" - "$work/batch/grades.csv" "$work/batch/out/grades.csv" <<'PY'
import csv, sys
host, image = (list(csv.DictReader(open(path, newline=""))) for path in sys.argv[1:])
def scores(rows):  # file -> the row's points and status (not the kit's version: the image has no .git)
    return {row["file"]: {k: v for k, v in row.items() if k not in ("kit_version", "inventory_hash")}
            for row in rows}
if scores(host) != scores(image):
    print("test-image: grader batch: grades.csv differs between this machine and the image")
    for name in sorted(set(scores(host)) | set(scores(image))):
        print(f"  {name}: here {scores(host).get(name)}\n  {' ' * len(name)}  image {scores(image).get(name)}")
    sys.exit(1)
print(f"test-image: grader batch: grades.csv equal in the image and here ({len(image)} submissions)")
PY
# The isolation and Landlock tests of the kit, in the image as on this machine (the layers the container
# has: no namespaces without CAP_SYS_ADMIN; each test adapts to what the machine has).
kit_tests() {
  run "$image" python -m pytest -q -p no:cacheprovider tests/kit/test_kit_isolation.py \
    tests/kit/test_kit_landlock.py >"$work/kit-tests.log" 2>&1 \
    || { tail -n 40 "$work/kit-tests.log"; say "the isolation and Landlock tests failed in the image (above)"; return 1; }
  say "in the image: $(tail -n 1 "$work/kit-tests.log")"
}
step "the kit's isolation and Landlock tests in the image" kit_tests
say "passed ($SECONDS s in all)"
