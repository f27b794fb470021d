"""The Otter packaging: `grader package` makes an autograder zip whose results.json under `otter run` is
`grader grade`'s, entry by entry (no "Public Tests" entry, no word of Otter's), without Otter's kernel
ever running the submission; a bad kit is refused with what to run. Otter is shown nothing of a
submission: under `otter run` and in Gradescope's layout, every file a student who has read the kit could
put beside the module (tests/kit/otter_attacks.py) leaves the stub at 0 and the reference at 100, and
none of them runs."""

from __future__ import annotations

import json
import math
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from gradescope_schema import problems
from otter_attacks import (
    common_attacks,
    launcher_module,
    marks_left,
    module_attacks,
    notebook,
    payload,
    write_folder,
    write_zip,
)
from otter_comparison import exercise_scores, grader_document, gradescope_page, page_differences, rehearsed

from grader.grading.grade import kit_manifest
from grader.grading.otter_submission import KEPT, take_submission
from grader.layout import GRADING_MODULES, PROMISES, REFERENCE, shipped_modules
from grader.otter_plugin import PLACEHOLDER
from grader.packaging.package import PLACEHOLDER_NOTEBOOK, PackageError, check_packable, write_autograder
from tests.kit.conftest import KIT


def test_the_zip_holds_otter_files_and_the_grading_kit_only(autograder):
    names = set(zipfile.ZipFile(autograder).namelist())
    assert {"run_autograder", "run_otter.py", "setup.sh", "environment.yml", "otter_config.json"} <= names
    assert "tests/" in names and not any(n.startswith("tests/") and n != "tests/" for n in names)
    kit = {n.removeprefix("files/optlab/") for n in names if n.startswith("files/optlab/")}
    assert {n for n in names if n.startswith("files/") and not n.startswith("files/optlab/")} == {
        PLACEHOLDER_NOTEBOOK
    }
    assert "take_submission" in zipfile.ZipFile(autograder).read("run_otter.py").decode()
    assert "solutions/optimization_toolkit.py" in kit and "grader/exercises.toml" in kit
    modules = {n for n in kit if n.startswith("grader/") and n.endswith(".py")}
    assert modules == {f"grader/{m}.py" for m in shipped_modules(GRADING_MODULES)}
    assert not any(n.startswith(("student/", "examples/", "tests/kit/", "docs/")) for n in kit)
    # the promise files come along: grading reads the inventory, which hashes them
    assert {n for n in kit if n.startswith("tests/promises/")} == {
        p.relative_to(KIT).as_posix() for p in (KIT / PROMISES).glob("*.toml")
    }
    assert "grader/batch/run.py" not in kit and "grader/authoring/build.py" not in kit
    config = json.loads(zipfile.ZipFile(autograder).read("otter_config.json"))
    assert config["plugins"] == ["grader.otter_plugin.KitGrading"]
    environment = zipfile.ZipFile(autograder).read("environment.yml").decode()
    for pin in ("otter-grader[grading,plugins]==7.0.0", "pytest==9.2.0", "pytest-json-report==1.5.0"):
        assert pin in environment


def test_setup_installs_nothing_for_pdfs_and_makes_the_worker_user(autograder):
    """Otter's setup.sh installs TeX Live and pandoc where its jq test of the config holds, which with jq
    1.6 it does on the missing config of `otter grade` (7 minutes a build): the zip's has no such step."""
    setup = zipfile.ZipFile(autograder).read("setup.sh").decode()
    assert "texlive" not in setup and "pandoc.deb" not in setup and "playwright install" not in setup
    assert "no TeX Live or pandoc" in setup and "mamba env create" in setup
    assert "setup-worker" in setup


def test_the_zip_is_the_same_every_time(autograder, tmp_path):
    assert write_autograder(KIT, tmp_path).read_bytes() == autograder.read_bytes()


def otter_run(autograder: Path, submission: Path, out: Path) -> subprocess.CompletedProcess:
    """`otter run` (the plugin imported from this kit, as the zip's run_otter.py does)."""
    out.mkdir()
    env = {**os.environ, "PYTHONPATH": str(KIT)}
    return subprocess.run(
        [sys.executable, "-m", "otter", "run", "-a", str(autograder), "-o", str(out), str(submission)],
        capture_output=True, text=True, cwd=out, env=env,
    )  # fmt: skip


def otter_page(autograder: Path, submission: Path, out: Path) -> dict:
    """`otter run`'s results.json."""
    run = otter_run(autograder, submission, out)
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


LAB = {
    "stub": KIT / "student/optimization_toolkit.py",
    "reference": KIT / "solutions/optimization_toolkit.py",
}
SCORE = {"stub": 0.0, "reference": 100.0}


@pytest.mark.parametrize(
    ("which", "module"),
    [
        ("stub", "ipykernel_launcher.py"),
        ("stub", "optimization_toolkit.py"),
        ("reference", "optimization_toolkit.py"),
    ],
)
def test_otter_run_runs_and_reads_nothing_submitted_but_the_module(autograder, tmp_path, which, module):
    """A zip (`otter run` unpacks it into Otter's submission folder) holding, beside the module, every
    attack of common_attacks (Otter's log as a dill pickle that runs code, packages named otter, grader,
    nbformat, dill, IPython, ipykernel, jupyter_client, a .pth, site and user customization, Otter's own
    file names, a tests folder), and either more top-level modules (pytest, dill, json) or the module
    itself named ipykernel_launcher.py (what Jupyter runs, in the submission folder, to start Otter's
    kernel). On main, the log, the otter package and the launcher's name each gave the stub 100 on their
    own, and more top-level .py files made Otter refuse the reference (no results.json)."""
    marks = tmp_path / "marks"
    lab = LAB[which].read_text()
    files = common_attacks(marks)
    if module == "ipykernel_launcher.py":
        files[module] = launcher_module(lab, marks).encode()
    else:
        files |= module_attacks(marks) | {module: lab.encode()}
    page = otter_page(autograder, write_zip(tmp_path / "submission.zip", files), tmp_path / "otter")
    assert marks_left(marks) == [], "a submitted file ran"
    assert page["score"] == SCORE[which]
    assert page["extra_data"]["submission"]["found_as"] == module


def test_otter_run_refuses_a_top_level_notebook_before_any_kit_code_and_runs_nothing(autograder, tmp_path):
    """`otter run` starts Otter in its own process: Otter lists the submission folder before any kit
    code runs, and with a submitted notebook beside the kit's placeholder it refuses the submission by
    name (on Gradescope and in otter grade's image, run_otter.py takes the submission first: see the
    Gradescope test below). Nothing of the notebook runs."""
    marks = tmp_path / "marks"
    files = {"optimization_toolkit.py": LAB["reference"].read_bytes()}
    files["extra.ipynb"] = notebook(payload(marks, "notebook")).encode()
    run = otter_run(autograder, write_zip(tmp_path / "submission.zip", files), tmp_path / "otter")
    assert run.returncode != 0 and "More than one .ipynb file found in submission" in run.stderr
    assert marks_left(marks) == []


@pytest.mark.parametrize("attack", ["beside", "symlink", "zip"])
def test_gradescope_runs_and_reads_nothing_submitted_but_the_module(autograder, tmp_path, attack):
    """Gradescope's layout, run_otter.py run as root (otter grade's containers run the same):
    - beside: the reference with every attack of common_attacks and module_attacks, a notebook (Otter
      prefers one: on main it was graded instead of the module, and the reference scored 0) and
      symlinks into the autograder's source;
    - symlink: the module is a symlink to the kit's reference (on main: 100 for it);
    - zip: the stub and common_attacks in a zip, with Otter's `zips` on as otter grade --ext zip sets
      it (on main: the log and the otter package gave it 100).
    Otter's folder ends holding only what Otter put there; the kit kept the module alone, for root."""
    root, marks, folder = tmp_path / "autograder", tmp_path / "marks", tmp_path / "submitted"
    folder.mkdir()
    source = root / "source"
    if attack == "beside":
        files = (
            common_attacks(marks)
            | module_attacks(marks)
            | {"optimization_toolkit.py": LAB["reference"].read_bytes()}
        )
        files["extra.ipynb"] = notebook(payload(marks, "notebook")).encode()
        links = {"kit": str(source / "files/optlab"), "helper.py": str(source / "run_otter.py")}
        write_folder(folder, files, links)
        expected, kept = 100.0, ["module/optimization_toolkit.py"]
    elif attack == "symlink":
        write_folder(folder, {}, {"optimization_toolkit.py": str(source / "files/optlab" / REFERENCE)})
        expected, kept = 0.0, ["received/optimization_toolkit.py"]
    else:
        files = common_attacks(marks) | {"optimization_toolkit.py": LAB["stub"].read_bytes()}
        write_zip(folder / "submission.zip", files)
        expected, kept = 0.0, ["module/optimization_toolkit.py"]
    page = gradescope_page(autograder, folder, root, zips=attack == "zip")
    assert problems(root / "results" / "results.json") == []
    assert marks_left(marks) == [], "a submitted file ran"
    assert page["score"] == expected
    if attack == "symlink":
        assert page["extra_data"]["ungraded"].startswith("found no files in the submission")
    otters = ["__init__.py", Path(PLACEHOLDER_NOTEBOOK).name, "tests"]
    left = sorted(p for p in (root / "submission").iterdir() if p.name not in otters)
    assert sorted(p.name for p in (root / "submission").iterdir() if p.name in otters) == otters
    # what run_otter.py leaves once Otter is done, for otter grade's copy back: the submitted files'
    # names, each empty (nothing submitted is left)
    assert all(p.is_file() and not p.is_symlink() and p.stat().st_size == 0 for p in left), left
    assert list((root / "submission" / "tests").iterdir()) == []
    assert stat.S_IMODE((root / KEPT).stat().st_mode) == 0o700
    assert files_under(root / KEPT) == kept


def files_under(folder: Path) -> list[str]:
    """Every entry that is not a folder (links included, never followed), relative to `folder`."""
    found = []
    for parent, dirs, files in os.walk(folder):
        found += [Path(parent, name) for name in files]
        found += [Path(parent, name) for name in dirs if Path(parent, name).is_symlink()]
    return sorted(p.relative_to(folder).as_posix() for p in found)


def autograder_dir(tmp_path: Path, files: dict[str, bytes], links: dict[str, str] | None = None) -> Path:
    (tmp_path / "submission").mkdir()
    write_folder(tmp_path / "submission", files, links)
    return tmp_path


def test_taking_keeps_the_module_alone_where_only_root_reads_it(tmp_path):
    files = {"hw/optimization_toolkit.py": b"x = 1\n", "hw/helper.py": b"", ".OTTER_LOG": b"pickle"}
    files |= {"otter/__init__.py": b"", "notes.ipynb": b"{}", "json.py": b""}
    ag = autograder_dir(tmp_path, files, {"hw/optimization_toolkit (1).py": "/etc/passwd"})
    graded = take_submission(ag)
    assert graded == ag / KEPT / "module" and files_under(ag / KEPT) == ["module/hw/optimization_toolkit.py"]
    assert (graded / "hw/optimization_toolkit.py").read_bytes() == b"x = 1\n"
    assert os.listdir(ag / "submission") == [] and stat.S_IMODE((ag / KEPT).stat().st_mode) == 0o700
    (ag / "submission" / "placeholder.ipynb").write_text("{}")  # Otter's, after run_otter.py took it
    assert take_submission(ag) == graded and (ag / "submission" / "placeholder.ipynb").is_file()


def test_taking_a_clone_with_its_git_and_venv_keeps_the_module(tmp_path):
    """Issue 33: Otter's path chooses the module by intake's rule, so a GitHub Classroom clone (its .git)
    with a venv beside the module, past 2,000 entries with them, is graded, not refused."""
    files = {f"{folder}/{index}.py": b"" for folder in (".git", "venv") for index in range(2100)}
    ag = autograder_dir(tmp_path, files | {"optimization_toolkit.py": b"x = 1\n"})
    graded = take_submission(ag)
    assert graded == ag / KEPT / "module" and files_under(ag / KEPT) == ["module/optimization_toolkit.py"]


def test_what_intake_cannot_choose_is_kept_whole_for_grader_grades_own_message(tmp_path):
    from grader.grading.intake import IntakeError, read_submission

    ag = autograder_dir(tmp_path, {"a.py": b"", "b.py": b"", ".OTTER_LOG": b"pickle"})
    graded = take_submission(ag)
    assert graded == ag / KEPT / "received" and os.listdir(ag / "submission") == []
    with pytest.raises(IntakeError, match="found several .py files in the submission"):
        read_submission(graded)


@pytest.mark.parametrize("zips", [True, False])
def test_a_zip_is_read_in_memory_when_otter_would_have_unpacked_it(tmp_path, zips):
    ag = autograder_dir(tmp_path, {})
    write_zip(ag / "submission" / "sub.zip", {"hw/optimization_toolkit.py": b"x = 1\n", ".OTTER_LOG": b""})
    (ag / "source").mkdir()
    (ag / "source" / "otter_config.json").write_text(json.dumps({"zips": zips}))
    graded = take_submission(ag)
    if zips:
        assert files_under(ag / KEPT) == ["module/hw/optimization_toolkit.py"]
    else:  # Gradescope unpacks a submitted zip itself: one left in the folder is not the submission
        assert graded == ag / KEPT / "received" and files_under(graded) == ["sub.zip"]


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
    import grader.packaging.package as package

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
    import grader.packaging.package as package

    monkeypatch.setattr(package, "_installed_otter", lambda: installed)
    with pytest.raises(PackageError, match=rf"{message}, the kit is pinned to 7.0.0: run pip install"):
        check_packable(KIT)


def test_the_pin_is_pyprojects():
    import grader.packaging.package as package

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


def test_a_tree_deeper_than_python_recurses_is_kept_whole_for_grader_grades_own_message(tmp_path):
    """Attack: 1,500 folders one inside the other beside the module. Before: os.walk's RecursionError
    escaped take_submission (run_otter.py ended with a traceback before Otter started: no results)."""
    from grader.grading.intake import IntakeError, read_submission
    from grader.sandbox.isolation import remove_tree
    from tests.kit.test_kit_intake import nest

    ag = autograder_dir(tmp_path, {"optimization_toolkit.py": b"x = 1\n"})
    nest(ag / "submission", 1500)
    try:
        graded = take_submission(ag)
        assert graded == ag / KEPT / "received" and os.listdir(ag / "submission") == []
        with pytest.raises(IntakeError, match="nests folders more than 64 deep"):
            read_submission(graded)
    finally:
        remove_tree(ag)  # pytest's own clean-up of old runs recurses too


def test_a_deep_tree_in_a_hidden_folder_is_removed_with_the_rest(tmp_path):
    """Attack: a .git folder 1,500 deep beside the module (intake never walks a hidden folder). Before:
    removing what was received raised RecursionError in take_submission, before Otter started."""
    from grader.sandbox.isolation import remove_tree
    from tests.kit.test_kit_intake import nest

    ag = autograder_dir(tmp_path, {"optimization_toolkit.py": b"x = 1\n", ".git/HEAD": b""})
    nest(ag / "submission" / ".git", 1500)
    try:
        graded = take_submission(ag)
        assert files_under(ag / KEPT) == ["module/optimization_toolkit.py"] and graded == ag / KEPT / "module"
    finally:
        remove_tree(ag)  # pytest's own clean-up of old runs recurses too


def test_a_fifo_named_like_the_module_and_control_characters_in_names_are_not_read(tmp_path):
    """Held: a FIFO is never opened (reading it would wait for ever), names with newlines are only names."""
    ag = autograder_dir(tmp_path, {"hw/optimization_toolkit.py": b"x = 1\n", "a\nb\x1b[2J.py": b""})
    os.mkfifo(ag / "submission" / "optimization_toolkit.py")
    graded = take_submission(ag)
    assert files_under(ag / KEPT) == ["module/hw/optimization_toolkit.py"]
    assert (graded / "hw/optimization_toolkit.py").read_bytes() == b"x = 1\n"
