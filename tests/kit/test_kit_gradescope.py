"""Rehearsals of dist/autograder.zip where it runs: Gradescope, and the image `otter grade` builds.

Each lays out a temporary root as /autograder: Gradescope unpacks the whole zip into source/; Otter's
own Dockerfile (otter/grade/Dockerfile) copies only setup.sh, environment.yml, requirements.*,
otter_config.json, run_otter.py, files/ and tests/, and leaves an empty submission_metadata.json.
setup.sh cannot run here (it downloads Miniforge), so its environment is built as a fresh virtual
environment from environment.yml (its Python, its pip packages), and setup.sh's own kit step (the worker
user) runs with that environment's Python. Then run_autograder's command runs with the rehearsal's root.
Gradescope's results.json must be `grader grade`'s, entry by entry (execution time aside), for the
reference, the stubs, a partial and a hostile submission: what students see is what the instructor
previewed. otter grade's results.pkl is read back as otter grade reads it, into its grades table, which
must agree with `grader grade` per exercise.
"""

from __future__ import annotations

import json
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

from grader.package import ENV_NAME, PLAYWRIGHT_STEP
from tests.kit.conftest import KIT

SUBMISSION = KIT / "examples" / "submissions" / "ben_partial.py"  # otter grade's layout
AUTOGRADER_DIR = "/autograder"  # Gradescope's, and that of otter grade's containers
WORKER_STEP = "# optlab-kit: the unprivileged user"
METADATA = {
    "id": 123456,
    "created_at": "2026-12-02T10:00:00.000000-08:00",
    "assignment": {"title": "Optimizing agents", "total_points": "100.0"},
    "users": [{"email": "ada@example.edu", "id": 1, "name": "Ada Lovelace", "sid": "A001"}],
    "previous_submissions": [],
}
OTTER_GRADE_COPIES = ("setup.sh", "environment.yml", "requirements.txt", "otter_config.json", "run_otter.py")


def interpreter(version: str) -> str:
    """The Python of Otter's environment if this machine has it (on PATH or pyenv's), else this one."""
    candidates = [f"python{version}", *sorted(Path("/root/.pyenv/versions").glob(f"{version}.*/bin/python"))]
    for candidate in candidates:
        found = shutil.which(str(candidate))
        if found and subprocess.run([found, "-c", "import sys"], capture_output=True).returncode == 0:
            return found
    return sys.executable


@pytest.fixture(scope="module")
def environment(autograder, tmp_path_factory) -> Path:
    """Otter's environment.yml, as a fresh virtual environment; its Python."""
    spec = yaml.safe_load(zipfile.ZipFile(autograder).read("environment.yml"))
    python = next(d for d in spec["dependencies"] if isinstance(d, str) and d.startswith("python="))
    pip = next(d["pip"] for d in spec["dependencies"] if isinstance(d, dict))
    venv = tmp_path_factory.mktemp("otter-env") / "venv"
    subprocess.run([interpreter(python.removeprefix("python=")), "-m", "venv", str(venv)], check=True)
    install = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    run = subprocess.run(install + pip, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-3000:]
    return venv / "bin" / "python"


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


def run_setup_kit_step(root: Path, python: Path) -> None:
    """setup.sh's kit step, with the rehearsal's environment in place of Otter's conda one."""
    setup = (root / "source" / "setup.sh").read_text()
    assert "mamba env create" in setup and PLAYWRIGHT_STEP not in setup
    step = setup[setup.index(WORKER_STEP) :].replace(
        f"mamba run -n {ENV_NAME} ", f"PATH={python.parent}:$PATH "
    )
    run = subprocess.run(["bash", "-c", step], capture_output=True, text=True)
    assert run.returncode == 0, run.stderr


def run_autograder(root: Path, python: Path) -> subprocess.CompletedProcess:
    """run_autograder's command (python run_otter.py in Otter's environment), with this root."""
    assert "run_otter.py" in (root / "run_autograder").read_text()
    run_otter = root / "source" / "run_otter.py"
    run_otter.write_text(run_otter.read_text().replace(f'"{AUTOGRADER_DIR}"', repr(str(root))))
    return subprocess.run(
        [str(python), str(run_otter)], cwd=root, capture_output=True, text=True, timeout=900
    )


@pytest.mark.parametrize("which", SUBMISSIONS)
def test_gradescope_shows_students_grader_grades_page(autograder, environment, tmp_path, which):
    submission, marker = rehearsed(which, tmp_path)
    root = lay_out(tmp_path, autograder, "gradescope", submission)
    run_setup_kit_step(root, environment)
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
    run_setup_kit_step(root, environment)
    run = run_autograder(root, environment)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert not (root / "submission" / "optlab").exists(), "the kit's copy beside the submission was left"
    expected = exercise_scores(grader_document(SUBMISSION, tmp_path / "grade.json"))
    assert 0 < sum(expected.values()) < 100
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
