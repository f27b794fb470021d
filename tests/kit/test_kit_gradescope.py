"""Rehearsals of dist/autograder.zip where it runs: Gradescope, and the image `otter grade` builds.

Each lays out a temporary root as /autograder: Gradescope unpacks the whole zip into source/; Otter's
own Dockerfile (otter/grade/Dockerfile) copies only setup.sh, environment.yml, requirements.*,
otter_config.json, run_otter.py, files/ and tests/, and leaves an empty submission_metadata.json.
The zip's own setup.sh makes the grading environment, on its branch for a base with a released Python
(this machine's: a virtual environment of PyPI's packages), with its paths (/autograder, the
environment's folder, its /tmp scripts) moved into the rehearsal's root; its Miniforge branch (a base
without one: Gradescope's Ubuntu 22.04) runs against stand-ins for apt-get, wget and mamba that log
what they are asked. Then the zip's run_autograder grades, with the same paths moved.
Gradescope's results.json must be `grader grade`'s, entry by entry (execution time aside), for the
reference, the stubs, a partial and a hostile submission: what students see is what the instructor
previewed. otter grade's results.pkl is read back as otter grade reads it, into its grades table, which
must agree with `grader grade` per exercise.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import yaml
from gradescope_schema import problems
from otter_comparison import (
    OTTER_ROUNDING,
    SUBMISSIONS,
    exercise_scores,
    grader_document,
    page_differences,
    rehearsed,
)

from grader.packaging.package import ENVIRONMENT_LINE, OTTER_VENV, REQUIREMENTS
from tests.kit.conftest import KIT

SUBMISSION = KIT / "examples" / "submissions" / "ben_partial.py"  # otter grade's layout
AUTOGRADER_DIR = "/autograder"  # Gradescope's, and that of otter grade's containers
METADATA = {
    "id": 123456,
    "created_at": "2026-12-02T10:00:00.000000-08:00",
    "assignment": {"title": "Optimizing agents", "total_points": "100.0"},
    "users": [{"email": "ada@example.edu", "id": 1, "name": "Ada Lovelace", "sid": "A001"}],
    "previous_submissions": [],
}
OTTER_GRADE_COPIES = ("setup.sh", "environment.yml", REQUIREMENTS, "otter_config.json", "run_otter.py")


def interpreter(version: str) -> str:
    """The Python of Otter's environment if this machine has it (on PATH or pyenv's), else this one."""
    candidates = [f"python{version}", *sorted(Path("/root/.pyenv/versions").glob(f"{version}.*/bin/python"))]
    for candidate in candidates:
        found = shutil.which(str(candidate))
        if found and subprocess.run([found, "-c", "import sys"], capture_output=True).returncode == 0:
            return found
    return sys.executable


def moved(script: Path, places: dict[str, Path]) -> Path:
    """`script` with the zip's absolute paths (/autograder, the environment's folder, ...) at `places`."""
    text = script.read_text()
    for path, place in places.items():
        text = text.replace(path, str(place))
    script.write_text(text)
    return script


@pytest.fixture(scope="module")
def environment(autograder, tmp_path_factory) -> Path:
    """The zip's setup.sh run on its branch for a released Python (environment.yml's, where this machine
    has it, else this one): the virtual environment it makes; its Python."""
    tmp = tmp_path_factory.mktemp("otter-env")
    root = lay_out(tmp, autograder, "otter-grade")
    venv, places = tmp / "venv", {"/autograder": root, "/tmp/optlab-": tmp / "optlab-"}
    spec = yaml.safe_load(zipfile.ZipFile(autograder).read("environment.yml"))
    python = next(d for d in spec["dependencies"] if isinstance(d, str) and d.startswith("python="))
    setup = moved(root / "source" / "setup.sh", {OTTER_VENV: venv, **places})
    env = {**os.environ, "PYTHON": interpreter(python.removeprefix("python="))}
    run = subprocess.run(["bash", str(setup)], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    version = platform_version(env["PYTHON"])
    assert [line for line in run.stdout.splitlines() if line.startswith(ENVIRONMENT_LINE)] == [
        f"{ENVIRONMENT_LINE} {venv}, Python {version} ({env['PYTHON']}), packages from PyPI"
    ]
    assert "mamba" not in run.stdout + run.stderr and "setup-worker: ready" in run.stdout
    return venv / "bin" / "python"


def platform_version(python: str) -> str:
    command = [python, "-c", "import platform; print(platform.python_version())"]
    return subprocess.run(command, capture_output=True, text=True, check=True).stdout.strip()


def lay_out(tmp: Path, autograder: Path, layout: str, submission: Path = SUBMISSION) -> Path:
    """A root laid out as /autograder is, by Gradescope or by otter grade's image, before grading."""
    root = tmp / "autograder"
    for folder in ("source", "submission", "results"):
        (root / folder).mkdir(parents=True)
    with zipfile.ZipFile(autograder) as zf:
        if layout == "gradescope":  # the whole zip, and run_autograder where Gradescope runs it
            zf.extractall(root / "source")
            shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
        else:
            names = [
                n for n in zf.namelist() if n in OTTER_GRADE_COPIES or n.startswith(("files/", "tests/"))
            ]
            zf.extractall(root / "source", members=names)
            zf.extract("run_autograder", root)
    if layout == "gradescope":
        shutil.copy(submission, root / "submission" / "optimization_toolkit.py")
        (root / "submission_metadata.json").write_text(json.dumps(METADATA))
    else:  # otter grade copies the file under its own name and touches an empty metadata file
        shutil.copy(submission, root / "submission" / submission.name)
        (root / "submission_metadata.json").write_text("")
    return root


def run_autograder(root: Path, python: Path) -> subprocess.CompletedProcess:
    """The zip's run_autograder, with this root and the environment `python` is in."""
    script = moved(root / "run_autograder", {OTTER_VENV: python.parent.parent, "/autograder": root})
    run = subprocess.run(["bash", str(script)], cwd=root, capture_output=True, text=True, timeout=900)
    chosen = [line for line in run.stdout.splitlines() if line.startswith(ENVIRONMENT_LINE)]
    assert chosen == [f"{ENVIRONMENT_LINE} {python.parent.parent}, Python {platform_version(str(python))}, "
                      "packages from PyPI"], run.stdout[-2000:]  # fmt: skip
    return run


@pytest.mark.parametrize("which", SUBMISSIONS)
def test_gradescope_shows_students_grader_grades_page(autograder, environment, tmp_path, which):
    submission, marker = rehearsed(which, tmp_path)
    root = lay_out(tmp_path, autograder, "gradescope", submission)
    run = run_autograder(root, environment)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert not (root / "submission" / "optlab").exists(), "the kit's copy beside the submission was left"
    results = root / "results" / "results.json"
    assert problems(results) == []
    shown = json.loads(results.read_text())
    previewed = grader_document(
        submission, tmp_path / "grade.json", name="optimization_toolkit.py", python=environment
    )
    assert page_differences(shown, previewed) == []
    assert len(shown["tests"]) == 40 and sum(t["max_score"] for t in shown["tests"]) == 100
    assert "No log found" not in run.stdout
    if marker is not None:
        assert not marker.exists(), "Otter's kernel ran the submission"


def test_otter_grades_image_gives_grader_grades_scores(autograder, environment, tmp_path):
    root = lay_out(tmp_path, autograder, "otter-grade")
    run = run_autograder(root, environment)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert not (root / "submission" / "optlab").exists(), "the kit's copy beside the submission was left"
    expected = exercise_scores(grader_document(SUBMISSION, tmp_path / "grade.json"))
    assert 0 < sum(expected.values()) < 100
    # otter grade copies the file it put in back out (docker cp fails where it is gone): an empty one
    assert (root / "submission" / SUBMISSION.name).read_bytes() == b""
    row = otter_grade_row(root / "results" / "results.pkl")
    assert row == pytest.approx(expected, abs=OTTER_ROUNDING)


def otter_grade_row(pickled: Path) -> dict[str, float]:
    """The row otter grade's final_grades.csv gets from a container's results.pkl: score per test file."""
    import dill
    from otter.grade.utils import merge_scores_to_df

    with open(pickled, "rb") as handle:
        results = dill.load(handle)
    results.file = SUBMISSION.name
    table = merge_scores_to_df([results])
    row = table[table["file"] == SUBMISSION.name].iloc[0].to_dict()
    assert row["grading_status"] == "Completed"
    return {name: float(row[name]) for name in results.results}


FAKE_APT_GET = """#!/bin/bash
echo "apt-get $*" >> "$STANDINS_LOG"
case " $* " in *" install "*" python3.11 "*)  # Ubuntu 22.04's python3.11: a release candidate
  printf '%s\\n' '#!/bin/bash' 'case "$2" in' '  *releaselevel*) exit 1 ;;' \\
    '  *python_version*) echo 3.11.0rc1 ;;' 'esac' > "$(dirname "$0")/python3.11"
  chmod +x "$(dirname "$0")/python3.11" ;;
esac
"""
FAKE_WGET = """#!/bin/bash
echo "wget $*" >> "$STANDINS_LOG"
printf '#!/bin/bash\\necho "miniforge-installer $*" >> "$STANDINS_LOG"\\n' > "${@: -1}"
"""
FAKE_LOGGER = '#!/bin/bash\necho "$(basename "$0") $*" >> "$STANDINS_LOG"\n'
UNSUPPORTED = "#!/bin/bash\nexit 1\n"  # a Python outside 3.11 to 3.13 (Ubuntu 22.04's python3 is 3.10)


def test_setup_takes_otters_miniforge_where_no_released_python_is(autograder, tmp_path):
    """A base without a released Python 3.11 to 3.13 (Gradescope's Ubuntu 22.04: python3 is 3.10, apt's
    python3.11 is 3.11.0rc1): setup.sh refuses the pre-release, makes no virtual environment, says so
    in one line, and runs Otter's own steps (its apt packages, Miniforge, the conda environment from
    environment.yml), then the worker step in that environment; run_autograder grades in it."""
    root = lay_out(tmp_path, autograder, "otter-grade")
    standins, log, venv = tmp_path / "bin", tmp_path / "standins.log", tmp_path / "venv"
    standins.mkdir()
    fakes = {"apt-get": FAKE_APT_GET, "wget": FAKE_WGET, "mamba": FAKE_LOGGER, "python": FAKE_LOGGER}
    fakes.update({name: UNSUPPORTED for name in ("python3", "python3.12", "python3.13")})
    for name, text in fakes.items():
        (standins / name).write_text(text)
        (standins / name).chmod(0o755)
    for tool in ("bash", "cat", "chmod", "dirname", "basename", "uname", "rm", "id"):  # no Python on PATH
        (standins / tool).symlink_to(shutil.which(tool) or tool)
    places = {OTTER_VENV: venv, "/autograder": root, "/tmp/optlab-": tmp_path / "optlab-", "/root/": tmp_path}
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    env.update(PATH=str(standins), STANDINS_LOG=str(log))
    setup = moved(root / "source" / "setup.sh", places)
    run = subprocess.run(["bash", str(setup)], capture_output=True, text=True, env=env)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "is Python 3.11.0rc1, a pre-release" in run.stderr
    assert [line for line in run.stdout.splitlines() if line.startswith(ENVIRONMENT_LINE)] == [
        f"{ENVIRONMENT_LINE} Otter's conda environment otter-env (Miniforge, conda-forge)"
    ]
    assert not venv.exists()
    asked = log.read_text().splitlines()
    assert asked[0].startswith("apt-get") and "python3.11 python3.11-venv" in asked[1]
    otters = asked[asked.index("apt-get clean") :]
    assert [line.split()[:2] for line in otters] == [
        ["apt-get", "clean"], ["apt-get", "update"], ["apt-get", "install"], ["wget", "-nv"],
        ["miniforge-installer", "-b"], ["mamba", "env"], ["mamba", "install"], ["mamba", "shell"],
        ["mamba", "run"],
    ]  # fmt: skip
    assert "Miniforge3-Linux-" in otters[3]
    assert otters[5] == f"mamba env create -f {root}/source/environment.yml"
    assert otters[-1] == f"mamba run -n otter-env bash {tmp_path}/optlab-setup-worker.sh python"

    log.write_text("")
    script = moved(root / "run_autograder", places)
    run = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env)
    assert [line for line in run.stdout.splitlines() if line.startswith(ENVIRONMENT_LINE)] == [
        f"{ENVIRONMENT_LINE} Otter's conda environment otter-env (Miniforge)"
    ]
    ran = log.read_text().splitlines()[-2:]
    assert ran == ["mamba activate otter-env", f"python {root}/source/run_otter.py"]


def test_requirements_are_the_pip_packages_of_otters_environment(autograder):
    spec = yaml.safe_load(zipfile.ZipFile(autograder).read("environment.yml"))
    pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict))
    assert zipfile.ZipFile(autograder).read(REQUIREMENTS).decode().splitlines() == pip
