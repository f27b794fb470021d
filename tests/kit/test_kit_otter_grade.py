"""`otter grade` of the packaged autograder.zip, run as a TA runs it: the example submissions and a
hostile one graded in Otter's containers (--containers 2), Otter's final_grades.csv against `grader
batch`'s grades.csv of the same examples.

scripts/test-otter-grade.sh runs this as root with the engine behind `docker` set up (Podman through
scripts/otter-podman first on PATH, with its own CONTAINERS_CONF) and OPTLAB_OTTER_GRADE_IMAGE naming
the base image (`otter grade --image`); without that variable only the adapter's own test runs (against
a stand-in for podman). It prints how long each command took (no assertion on time).
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from otter_attacks import common_attacks, write_zip

from grader.grading.grade import kit_manifest
from grader.layout import MODULE_FILE
from grader.packaging.package import write_autograder
from grader.sandbox.isolation import WORKER_UIDS_VARIABLE
from tests.kit.conftest import KIT

IMAGE = os.environ.get("OPTLAB_OTTER_GRADE_IMAGE", "")
NAME = os.environ.get("OPTLAB_OTTER_GRADE_NAME", "optlab-ci")  # otter-grade:NAME, kept as the build cache
EXAMPLES = KIT / "examples" / "submissions"
HOSTILE = "hostile_stub.zip"
OTTER_COLUMNS = ("file", "total_points_earned", "percent_correct", "grading_status")
POINTS_ROW = "points-per-question"  # Otter's row of points possible, when it writes one
CENTS = 0.005  # both CSVs give points to the cent

ADAPTER = KIT / "scripts" / "otter-podman"
with_engine = pytest.mark.skipif(
    not IMAGE, reason="scripts/test-otter-grade.sh runs it (root, Podman or Docker behind `docker`)"
)


def test_adapter_answers_otters_builder_questions_and_hands_the_rest_to_podman(tmp_path, monkeypatch):
    """What python-on-whales asks before building (the builder, its driver) is answered as Docker's
    default builder; every other command reaches podman with its arguments as they were."""
    from python_on_whales import DockerClient

    log = tmp_path / "podman.log"
    (tmp_path / "podman").write_text(f'#!/bin/bash\nprintf "%s|" "$@" >> {log}\necho >> {log}\n')
    (tmp_path / "podman").chmod(0o755)
    docker = DockerClient(client_call=[str(ADAPTER / "docker")])
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")
    builder = docker.buildx.inspect()
    docker.container.start("some container")
    assert (builder.name, builder.driver) == ("default", "docker")
    assert log.read_text().splitlines() == ["container|start|some container|"]


def timed(command: list[str], what: str) -> subprocess.CompletedProcess:
    begun = time.monotonic()
    run = subprocess.run(command, capture_output=True, text=True, cwd=KIT)
    print(f"\ntest-otter-grade: {what}: {time.monotonic() - begun:.0f} s", flush=True)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return run


def hostile_submission(folder: Path) -> Path:
    """The stub, beside a pickled .OTTER_LOG, an `otter/` package and the rest of what Otter, its kernel
    or the grader could load: any of them run makes the kit grade the reference (100) instead."""
    folder.mkdir()
    files = common_attacks(Path("/tmp/optlab-attack-marks"))  # inside the container
    files[MODULE_FILE] = (KIT / "student" / MODULE_FILE).read_bytes()
    assert ".OTTER_LOG" in files and "otter/__init__.py" in files
    return write_zip(folder / HOSTILE, files)


def rows(path: Path) -> dict[str, dict[str, str]]:
    with path.open(newline="") as handle:
        return {row["file"]: row for row in csv.DictReader(handle) if row["file"] != POINTS_ROW}


@pytest.fixture(scope="module")
def graded(tmp_path_factory) -> tuple[list[str], dict[str, dict[str, str]], dict[str, dict[str, str]]]:
    """Otter's CSV columns and rows (file -> row), and grader batch's rows, of one otter grade run."""
    tmp = tmp_path_factory.mktemp("otter-grade")
    autograder = write_autograder(KIT, tmp / "dist")
    submissions = sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".py", ".zip"))
    examples = {"ada_full.py", "ben_partial.py", "cam_broken.py", "dana_submission.zip"}
    assert examples <= {p.name for p in submissions}
    out = tmp / "grades"
    out.mkdir()
    command = [sys.executable, "-m", "otter", "grade", "-n", NAME, "-a", str(autograder), "--ext", "zip",
               "--containers", "2", "--timeout", "900", "--image", IMAGE, "-o", str(out),
               *map(str, submissions), str(hostile_submission(tmp / "hostile"))]  # fmt: skip
    batch = tmp / "batch" / "grades.csv"
    # grader batch runs while Otter builds its image (a build waits on the disk and the network, mostly),
    # its workers under uids of their own: the containers' graders cannot see the host's uid leases
    env = {**os.environ, WORKER_UIDS_VARIABLE: "63000-63099"}
    with subprocess.Popen(
        [sys.executable, "-m", "grader", "batch", str(EXAMPLES), "-o", str(batch)],
        cwd=KIT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    ) as beside:  # fmt: skip
        timed(command, f"otter grade of {len(submissions) + 1} submissions, 2 containers, its build included")
        said = beside.communicate()[0]
    assert beside.returncode == 0, said[-3000:]
    with (out / "final_grades.csv").open(newline="") as handle:
        columns = next(csv.reader(handle))
    return columns, rows(out / "final_grades.csv"), rows(batch)


@with_engine
def test_otters_csv_has_one_column_per_exercise(graded):
    columns, _, _ = graded
    labels = [exercise.label for exercise in kit_manifest(KIT).exercises]
    assert sorted(c for c in columns if c not in OTTER_COLUMNS) == sorted(labels)  # Otter sorts by name
    assert set(OTTER_COLUMNS) <= set(columns) and len(columns) == len(set(columns))


@with_engine
def test_otter_grade_gives_grader_batchs_grades(graded):
    """Every example: completed, its total and each exercise's points as grades.csv has them."""
    _, otter, batch = graded
    labels = [exercise.label for exercise in kit_manifest(KIT).exercises]
    assert set(batch) <= set(otter), f"otter graded {sorted(otter)}, grader batch {sorted(batch)}"
    for name, expected in batch.items():
        got = otter[name]
        assert got["grading_status"] == "Completed", (name, got["grading_status"][:2000])
        total = float(expected["total_points_earned"])
        assert float(got["total_points_earned"]) == pytest.approx(total, abs=CENTS), name
        for label in labels:
            assert float(got[label]) == pytest.approx(float(expected[label]), abs=CENTS), (name, label)
        print(f"test-otter-grade: {name}: otter grade {got['total_points_earned']}, "
              f"grader batch {expected['total_points_earned']}")  # fmt: skip


@with_engine
def test_hostile_stub_scores_zero(graded):
    _, otter, _ = graded
    row = otter[HOSTILE]
    assert row["grading_status"] == "Completed", row["grading_status"][:2000]
    assert float(row["total_points_earned"]) == 0
