"""The Otter packaging: `grader package` makes an autograder zip whose results.json under `otter run` is
`grader grade`'s, entry by entry (no "Public Tests" entry, no word of Otter's), without Otter's kernel
ever running the submission; and a bad kit is refused with what to run."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from gradescope_schema import problems
from otter_comparison import exercise_scores, grader_document, page_differences, rehearsed

from grader.grading import kit_manifest
from grader.layout import GRADING_MODULES
from grader.otter_plugin import PLACEHOLDER
from grader.package import PackageError, check_packable, write_autograder
from tests.kit.conftest import KIT


def test_the_zip_holds_otter_files_and_the_grading_kit_only(autograder):
    names = set(zipfile.ZipFile(autograder).namelist())
    assert {"run_autograder", "run_otter.py", "setup.sh", "environment.yml", "otter_config.json"} <= names
    assert "tests/" in names and not any(n.startswith("tests/") and n != "tests/" for n in names)
    kit = {n.removeprefix("files/optlab/") for n in names if n.startswith("files/optlab/")}
    assert not any(n.startswith("files/") and not n.startswith("files/optlab/") for n in names)
    assert "solutions/optimization_toolkit.py" in kit and "grader/exercises.toml" in kit
    modules = {n for n in kit if n.startswith("grader/") and n.endswith(".py")}
    assert modules == {f"grader/{m}.py" for m in GRADING_MODULES}
    assert not any(n.startswith(("student/", "examples/", "tests/kit/", "docs/")) for n in kit)
    assert "grader/batch.py" not in kit and "grader/build.py" not in kit
    config = json.loads(zipfile.ZipFile(autograder).read("otter_config.json"))
    assert config["plugins"] == ["grader.otter_plugin.KitGrading"]
    environment = zipfile.ZipFile(autograder).read("environment.yml").decode()
    for pin in ("otter-grader[grading,plugins]==7.0.0", "pytest==9.2.0", "pytest-json-report==1.5.0"):
        assert pin in environment


def test_the_zip_is_the_same_every_time(autograder, tmp_path):
    assert write_autograder(KIT, tmp_path).read_bytes() == autograder.read_bytes()


def otter_page(autograder: Path, submission: Path, out: Path) -> dict:
    """`otter run`'s results.json (the plugin imported from this kit, as the zip's run_otter.py does)."""
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(KIT)}
    run = subprocess.run(
        [sys.executable, "-m", "otter", "run", "-a", str(autograder), "-o", str(out), str(submission)],
        capture_output=True, text=True, cwd=out, env=env,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert problems(out / "results.json") == []
    assert "No log found" not in run.stdout
    return json.loads((out / "results.json").read_text())


@pytest.mark.parametrize("which", ["reference", "stubs", "partial", "hostile"])
def test_otter_run_gives_grader_grades_page(autograder, tmp_path, which):
    submission, marker = rehearsed(which, tmp_path)
    shown = otter_page(autograder, submission, tmp_path / "otter")
    previewed = grader_document(submission, tmp_path / "grade.json")
    assert page_differences(shown, previewed) == []
    assert len(shown["tests"]) == 40 and not any(t["name"] == "Public Tests" for t in shown["tests"])
    by_grader = exercise_scores(previewed)
    total = sum(by_grader.values())
    expected_total = {"reference": 100.0, "stubs": 0.0, "hostile": 0.0}.get(which)
    if expected_total is not None:
        assert math.isclose(total, expected_total)
    else:
        assert 0 < total < 100
    if marker is not None:
        assert not marker.exists(), "Otter's kernel ran the submission"


def test_the_plugin_gives_otters_kernel_nothing_of_the_submission():
    from grader.otter_plugin import KitGrading

    plugin = KitGrading("/nowhere/optimization_toolkit.py", {}, {})
    notebook = plugin.before_execution("import os\nos._exit(0)\n")
    assert [cell.source for cell in notebook.cells] == [PLACEHOLDER]


def test_a_stale_student_mirror_is_refused(tmp_path):
    kit = tmp_path / "kit"
    for path in ("grader", "tests", "solutions", "student"):
        shutil.copytree(KIT / path, kit / path, ignore=shutil.ignore_patterns("__pycache__"))
    stub = kit / "student/optimization_toolkit.py"
    stub.write_text(stub.read_text() + "\n# edited by hand\n")
    with pytest.raises(PackageError, match=r"student/optimization_toolkit.py is stale: run grader build"):
        check_packable(kit)


def test_a_manifest_exercise_without_hidden_tests_is_refused(monkeypatch):
    import grader.package as package

    inventory = package.load_inventory(KIT)
    kept = [t for t in inventory["tests"] if not (t["exercise"] == 3 and t["suite"] == "hidden")]
    monkeypatch.setattr(package, "load_inventory", lambda root: {**inventory, "tests": kept})
    with pytest.raises(PackageError, match=r"exercise 3 UCB choice has no hidden tests"):
        check_packable(KIT)


def test_a_missing_output_folder_is_named(tmp_path):
    with pytest.raises(PackageError, match="no such folder"):
        write_autograder(KIT, tmp_path / "missing" / "dist")


@pytest.mark.parametrize(
    ("installed", "message"),
    [("6.1.0", "otter-grader 6.1.0 is installed"), (None, "otter-grader is not installed")],
)
def test_an_otter_other_than_the_pinned_one_is_refused(monkeypatch, installed, message):
    import grader.package as package

    monkeypatch.setattr(package, "_installed_otter", lambda: installed)
    with pytest.raises(PackageError, match=rf"{message}, the kit is pinned to 7.0.0: run pip install"):
        check_packable(KIT)


def test_the_pin_is_pyprojects():
    import grader.package as package

    assert f"otter-grader[grading,plugins]=={package.OTTER_VERSION}" in (KIT / "pyproject.toml").read_text()


@pytest.mark.parametrize("kit", ["empty", "missing"])
def test_a_grader_that_cannot_run_still_gives_every_exercise_with_the_reason(tmp_path, kit):
    """No silent zero under Otter: every exercise is listed, failed, with why the kit's grader failed."""
    from otter.test_files import GradingResults

    from grader.otter_plugin import fill_results, run_grader, show_kit_page

    folder = tmp_path / "kit"
    if kit == "empty":
        folder.mkdir()
    document = run_grader(folder, KIT / "solutions" / "optimization_toolkit.py")
    why = document["extra_data"]["ungraded"]
    assert document["tests"] == [] and document["score"] == 0 and why.startswith("The kit's grader")
    results = GradingResults([])
    exercises = kit_manifest(KIT).exercises
    fill_results(results, document, exercises)
    assert [f.name for f in results.results.values()] == [e.label for e in exercises]
    assert results.total == 0 and results.possible == 100
    assert all(why in f.summary() for f in results.results.values())
    show_kit_page(results, document)  # the page students see: the unscored document, which says why
    assert results.to_gradescope_dict(None) == document
