"""The student's local loop (issue 13), run as a student runs it: the handout unpacked into a folder and
`python -m pytest` there (or from outside it), with only the handout's own files.

- one command from anywhere: `--submission PATH`, `--submission=PATH`, a path outside the folder, inside
  another project with its own pytest.ini (its tests never run),
  and from another folder; a path that does not exist is one usage line and exit 4;
- the grader's verdict at the end of every run: one row per exercise, the same numbers as the visible
  entries of `grader grade`'s results.json for the same file;
- not-started exercises without a traceback per test;
- intake's notes (a syntax error, what it costs) at the top, as `grader grade` notes them;
- what the submission printed under its failing test (and with -s), and in grader grade's log;
- an endless loop costs one timeout per exercise, locally as in grading.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import pytest

from grader.assignment.scoring import Tally, entry_score
from grader.expect import call, expect_close
from grader.grading.grade import grade, kit_manifest
from grader.grading.intake import read_submission
from grader.grading.local import EXERCISES_FILE, SEPARATOR, Verdict, load_exercises
from grader.packaging.handout import FOLDER, HANDOUT_ZIP, write_handout
from tests.kit.conftest import KIT, visible_checks

REFERENCE = KIT / "solutions" / "optimization_toolkit.py"
STUBS = KIT / "student" / "optimization_toolkit.py"
BEN = KIT / "examples" / "submissions" / "ben_partial.py"
HEAD = "def group_advantages(rewards, std_norm=True, eps=1e-6):\n"


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    """The handout, unpacked where a student would put it."""
    tmp = tmp_path_factory.mktemp("local")
    zip_path = write_handout(KIT, tmp / HANDOUT_ZIP)
    with zipfile.ZipFile(zip_path) as zf:
        zf.extractall(tmp / "lab")
    return tmp / "lab" / FOLDER


def student_run(cwd: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`python -m pytest ARGS` in `cwd`, as a student types it (the kit's Python: pytest and hypothesis)."""
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", *args],
        cwd=cwd, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


EXERCISES = load_exercises(KIT)  # as the manifest has them: adding one changes no test here
# The visible checks of exercise 12, as the inventory lists them.
VISIBLE_12 = visible_checks(12)


def verdict(output: str) -> dict[int, list[str]]:
    """The verdict table's rows by exercise id: [title, visible checks, visible points, hidden, state]."""
    section = output.split("optlab: your verdict", 1)[1]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.split(SEPARATOR.strip())]
        if len(cells) == 5 and (m := re.fullmatch(r"(\d+) (.+)", cells[0])):
            rows[int(m.group(1))] = [m.group(2), *cells[1:]]
    return rows


def with_body(source: str, body: str) -> str:
    """`source` with `body` put first into group_advantages (exercise 12)."""
    assert HEAD in source
    return source.replace(HEAD, HEAD + body, 1)


# -- one command, from anywhere --------------------------------------------------------------------


def test_submission_with_a_space_an_equals_sign_outside_the_folder_and_from_another_folder(folder, tmp_path):
    """Every form of the command runs the handout's tests under its pytest.ini, also from a folder
    inside another project whose pytest.ini pytest would otherwise read (and whose tests would run)."""
    other = tmp_path / "mine" / "other.py"
    other.parent.mkdir()
    other.write_bytes(STUBS.read_bytes())
    project = tmp_path / "project"  # another project: its pytest.ini and a test of its own, above the lab
    inside = Path(shutil.copytree(folder, project / "lab" / FOLDER))
    (project / "pytest.ini").write_text("[pytest]\n")
    (project / "test_theirs.py").write_text("def test_theirs():\n    raise AssertionError('theirs ran')\n")
    (project / "mine.py").write_bytes(STUBS.read_bytes())
    runs = {
        "space": student_run(folder, "--submission", str(other)),
        "equals": student_run(folder, f"--submission={other}"),
        "relative, outside": student_run(folder, "--submission", os.path.relpath(other, folder)),
        "from another folder": student_run(tmp_path, str(folder), f"--submission={other}"),
        "from another folder, space": student_run(tmp_path, str(folder), "--submission", str(other)),
        "default": student_run(folder),
        "in a project, space": student_run(inside, "--submission", "../../mine.py"),
        "in a project, from above, space": student_run(project, f"lab/{FOLDER}", "--submission", "mine.py"),
        "in a project, from above, equals": student_run(project, f"lab/{FOLDER}", "--submission=mine.py"),
    }
    for how, run in runs.items():
        assert run.returncode == 1, (how, run.stdout[-2000:], run.stderr[-2000:])
        assert f"{visible_checks()} not started" in run.stdout, (how, run.stdout[-1000:])
        assert len(verdict(run.stdout)) == len(EXERCISES), how
        assert "theirs" not in run.stdout, (how, run.stdout[-1000:])
        handout = inside if how.startswith("in a project") else folder
        assert f"rootdir: {handout}\nconfigfile: pytest.ini" in run.stdout, (how, run.stdout[:1000])
    assert f"testing {other}" in runs["space"].stdout
    assert f"testing {project / 'mine.py'}" in runs["in a project, space"].stdout


def test_a_submission_that_does_not_exist_is_one_usage_line(folder):
    run = student_run(folder, "--submission", "nowhere/other.py")
    assert run.returncode == 4
    lines = (run.stdout + run.stderr).strip().splitlines()
    assert lines == ["ERROR: nowhere/other.py: no such file or folder (give a .py file, a folder or a .zip)"]


def test_a_submission_intake_cannot_read_is_one_usage_line_in_grader_grades_words(folder, tmp_path):
    notebook, empty = tmp_path / "lab.ipynb", tmp_path / "empty"
    notebook.write_text('{"cells": []}')
    empty.mkdir()
    for path in (notebook, empty):
        message = grade(KIT, path, tmp_path / "results.json").document["extra_data"]["ungraded"]
        run = student_run(folder, "--submission", str(path))
        assert run.returncode == 4
        assert (run.stdout + run.stderr).strip().splitlines() == [f"ERROR: {message}"]


# -- the verdict -----------------------------------------------------------------------------------


def test_the_stubs_end_with_one_line_per_exercise_and_no_traceback(folder):
    run = student_run(folder)
    rows = verdict(run.stdout)
    assert sorted(rows) == [e.id for e in EXERCISES]
    assert all(row[4].startswith("not started: implement ") for row in rows.values())
    assert rows[11][4] == "not started: implement clip_flows, ppo_grad"
    assert "Traceback" not in run.stdout and "NotImplementedError" not in run.stdout
    assert len(run.stdout.splitlines()) < 80  # was 2,647 lines
    visible = {e.id: e.visible for e in load_exercises(KIT)}
    assert {i: row[1] for i, row in rows.items()} == {i: f"0/{n}" for i, n in visible.items()}


def test_the_reference_passes_every_visible_check_and_earns_every_visible_point(folder):
    run = student_run(folder, f"--submission={REFERENCE}")
    assert run.returncode == 0, run.stdout[-3000:]
    rows = verdict(run.stdout)
    assert len(rows) == len(EXERCISES) and all(row[4] == "passing" for row in rows.values())
    assert all(row[1].split("/")[0] == row[1].split("/")[1] for row in rows.values())


def test_the_verdict_agrees_with_grader_grade(folder, tmp_path):
    """The rows of a partial submission: as the visible entries of grader grade's results.json, except
    where grading withholds the visible points of a function its hidden checks show not computing
    (issue 30: ben's group_advantages), which a local run cannot know: there it shows them as earned."""
    exercises = [5, 6, 8, 12]
    graded = grade(KIT, BEN, tmp_path / "results.json", exercises=exercises)
    entries = {
        t["extra_data"]["exercise"]: t
        for t in graded.document["tests"]
        if t["extra_data"]["suite"] == "visible"
    }
    withheld = {s.exercise.id: s.withheld for s in graded.scores if s.suite == "visible"}
    paths = sorted(
        str(p.relative_to(folder)) for e in exercises for p in folder.glob(f"tests/visible/test_ex{e:02d}_*")
    )
    rows = verdict(student_run(folder, *paths, f"--submission={BEN}").stdout)
    assert sorted(rows) == exercises
    states = set()
    for exercise, entry in entries.items():
        title, checks, points, hidden, state = rows[exercise]
        states.add(state.split(":")[0])
        data = entry["extra_data"]
        assert checks == f"{data['passed']}/{data['total']}", exercise
        earned, possible = (float(x) for x in points.split("/"))
        if withheld[exercise]:  # the hidden checks show a function not computing: a local run cannot know
            assert (earned >= entry["score"], possible) == (True, round(entry["max_score"], 2)), exercise
        else:
            assert (earned, possible) == (round(entry["score"], 2), round(entry["max_score"], 2)), exercise
        hidden_entry = next(
            t for t in graded.document["tests"]
            if t["extra_data"]["exercise"] == exercise and t["extra_data"]["suite"] == "hidden"
        )  # fmt: skip
        assert hidden == f"{hidden_entry['extra_data']['total']} when graded"
        assert title == kit_manifest(KIT).by_id(exercise).title
    assert {"passing", "not started"} <= states  # the sample covers both


def reference_function(name: str) -> str:
    """The reference's def of `name`, as source."""
    source = REFERENCE.read_text(encoding="utf-8")
    node = next(n for n in ast.parse(source).body if isinstance(n, ast.FunctionDef) and n.name == name)
    return ast.get_source_segment(source, node) or ""


def test_an_exercise_that_calls_an_unfinished_one_is_waiting_on_it_not_its_own_failure(folder, tmp_path):
    """Issue 34: add_score (9) written before softmax (8) was "not started" locally (and with a buggy
    softmax "failing", no word of softmax) where `grader grade` gives 9 its points: it answers the other
    exercise's calls with the reference."""
    stubs = STUBS.read_text(encoding="utf-8")
    mine = tmp_path / "optimization_toolkit.py"
    mine.write_text(stubs + "\n\n" + reference_function("add_score") + "\n", encoding="utf-8")
    paths = [
        str(p.relative_to(folder)) for e in (8, 9) for p in folder.glob(f"tests/visible/test_ex{e:02d}_*")
    ]
    run = student_run(folder, *paths, f"--submission={mine}", "-v")
    rows = verdict(run.stdout)
    assert rows[9][4] == "waiting on softmax() (exercise 8: not started)"
    assert rows[8][4] == "not started: implement softmax"
    assert "WAITING ON ANOTHER EXERCISE" in run.stdout and "finish or fix that exercise first" in run.stdout
    assert "Letters: N not started, W waiting on another exercise." in run.stdout
    graded = grade(KIT, mine, tmp_path / "results.json", exercises=[9])
    assert graded.document["score"] == kit_manifest(KIT).by_id(9).points  # what waiting promises

    buggy = reference_function("softmax").replace(
        "return [e / z for e in es]", "return [e / (z + 1) for e in es]"
    )
    mine.write_text(
        stubs + "\n\n" + buggy + "\n\n" + reference_function("add_score") + "\n", encoding="utf-8"
    )
    rows = verdict(student_run(folder, *paths, f"--submission={mine}").stdout)
    assert rows[8][4] == "failing"
    assert rows[9][4] == "waiting on softmax() (exercise 8: failing)", rows[9]  # never its own failure


def test_the_verdict_counts_a_test_once_and_a_failure_in_any_phase():
    exercises = load_exercises(KIT)
    eight = next(e for e in exercises if e.id == 8)
    # one visible check's promise (or none, before exercise 8's are named): what one passed check earns
    promise = next(iter(eight.promises), None)
    verdict_ = Verdict(exercises)
    verdict_.record("a", 8, "visible", "passed", "", promise.id if promise else "")
    verdict_.record("a", 8, "visible", "failed", "", promise.id if promise else "")  # its teardown failed
    verdict_.record("b", 8, "visible", "passed", "", promise.id if promise else "")
    verdict_.record("b", 8, "visible", "passed", "", promise.id if promise else "")
    [row] = verdict_.rows()
    assert (row["passed"], row["total"], row["state"]) == (1, 2, "failing")
    # the visible entry as grading tallies it: one check of `promise` passed, every other check failed
    entry = [Tally(p.function, p.kind, p.weight, p.checks, int(p == promise)) for p in eight.promises]
    entry += [Tally("", "value", 1, 1, int(promise is None and i == 0)) for i in range(eight.unmarked)]
    assert row["score"] == entry_score(eight.visible_points, entry) > 0


def test_the_handout_describes_the_exercises_as_the_kit_does(folder):
    assert (folder / EXERCISES_FILE).is_file()
    assert load_exercises(folder) == load_exercises(KIT)
    text = (folder / EXERCISES_FILE).read_text()
    assert "test_" not in text  # counts, never a hidden test's name


# -- intake's notes --------------------------------------------------------------------------------


def test_a_syntax_error_is_noted_at_the_top_as_grader_grade_notes_it(folder, tmp_path):
    broken = tmp_path / "optimization_toolkit.py"
    broken.write_text(REFERENCE.read_text().replace(HEAD, HEAD.rstrip(":\n") + "\n", 1))
    notes = read_submission(broken).notes
    assert any("group_advantages" in note and "syntax error" in note for note in notes)
    run = student_run(folder, f"--submission={broken}")
    head = run.stdout.split("collected", 1)[0]
    for note in notes:
        assert f"optlab: {note}" in head
    assert "AttributeError" not in run.stdout and "Traceback" not in run.stdout
    rows = verdict(run.stdout)  # its state says so (was "failing", with a traceback per check)
    assert re.fullmatch(r"syntax error: group_advantages\(\) \(line \d+\)", rows[12][4])
    assert rows[12][1] == f"0/{VISIBLE_12}"
    assert {row[4] for i, row in rows.items() if i != 12} == {"passing"}


# -- prints ----------------------------------------------------------------------------------------


def test_what_a_function_printed_shows_under_its_failing_test_and_in_the_graders_log(folder, tmp_path):
    printing = tmp_path / "optimization_toolkit.py"
    printing.write_text(
        with_body(
            REFERENCE.read_text(),
            "    print('rewards seen:', rewards)\n"
            "    print('grader: score 100 / 100, hidden checks included')\n"
            "    return [9.0]\n",
        )
    )
    test = "tests/visible/test_ex12_group_advantages.py"
    run = student_run(folder, test, f"--submission={printing}")
    assert "Captured stdout call" in run.stdout
    # every line it printed is marked, so none passes for the grader's own
    assert "│ rewards seen: [1.0, 0.0, 0.0, 0.0]" in run.stdout.splitlines()
    assert "│ grader: score 100 / 100, hidden checks included" in run.stdout.splitlines()
    assert not any(line.startswith("grader: score") for line in run.stdout.splitlines())
    shown = student_run(folder, test, "-s", f"--submission={printing}")
    assert "│ rewards seen: [1.0, 0.0, 0.0, 0.0]" in shown.stdout
    graded = grade(KIT, printing, tmp_path / "results.json", exercises=[12])
    assert "rewards seen: [1.0, 0.0, 0.0, 0.0]" in graded.printed
    assert "rewards seen" not in json.dumps(graded.document)


# -- an endless loop -------------------------------------------------------------------------------


def test_an_endless_loop_costs_one_timeout_per_exercise(folder, tmp_path):
    looping = tmp_path / "optimization_toolkit.py"
    looping.write_text(with_body(STUBS.read_text(), "    while True:\n        pass\n"))
    run = student_run(folder, "tests/visible/test_ex12_group_advantages.py", f"--submission={looping}",
                      "--call-timeout=1")  # fmt: skip
    # One call spent its timeout; the other tests were not called (the short summary may repeat the
    # message, as wide as the terminal allows, so count the tracebacks' own lines).
    lines = run.stdout.splitlines()
    timeouts = [line for line in lines if line.startswith("E ") and "did not return" in line]
    assert len(timeouts) == 1, run.stdout[-3000:]
    assert f"1 failed, {VISIBLE_12 - 1} not called" in run.stdout
    assert verdict(run.stdout)[12][4] == "timed out: group_advantages()"


# -- a module that never imports (issue 26, item 1) ------------------------------------------------

TOP = "import random\n"  # a statement of the stubs: the top-level lines are put after it
MODULE, NO_CALL = "optimization_toolkit.py", "No check could call it."


def at_top_level(lines: str) -> tuple[str, int]:
    """The stubs with `lines` run at import time, and the line number of their first line."""
    source = STUBS.read_text()
    assert TOP in source
    before = source.split(TOP, 1)[0] + TOP
    return before + lines + source[len(before) :], before.count("\n") + 1


def never_imported(run: subprocess.CompletedProcess, headline: str) -> None:
    """One headline above the verdict, every exercise "not imported", no traceback, a short output."""
    lines = run.stdout.splitlines()
    assert run.returncode == 1, run.stdout[-3000:]
    assert [line for line in lines if line.startswith("Your module")] == [headline]
    rows = verdict(run.stdout)
    assert sorted(rows) == [e.id for e in EXERCISES] and {row[4] for row in rows.values()} == {"not imported"}
    assert "Traceback" not in run.stdout and "\nE " not in run.stdout
    assert f"{visible_checks()} not imported" in lines[-1]
    assert len(lines) < 200  # was 5,153 lines for an error; a loop never ended (5,127 lines after Ctrl-C)


def test_a_top_level_error_is_one_headline_at_its_line_and_the_verdict(folder, tmp_path):
    broken = tmp_path / "optimization_toolkit.py"
    source, line = at_top_level("DEFAULT_LR = learning_rate * 2\n")
    broken.write_text(source)
    run = student_run(folder, f"--submission={broken}")
    why = "NameError: name 'learning_rate' is not defined"
    never_imported(run, f"Your module could not be imported at line {line} of {MODULE}: {why}. {NO_CALL}")


def test_a_top_level_endless_loop_ends_at_the_import_deadline_with_its_line(folder, tmp_path):
    """The module is imported only in its worker, under grading's import deadline (10 s of CPU time):
    pytest's own process never runs it, so the run ends (it hung for good before)."""
    looping = tmp_path / "optimization_toolkit.py"
    source, line = at_top_level("while True: pass\n")
    looping.write_text(source)
    run = student_run(folder, f"--submission={looping}", timeout=300)
    why = "it used 10 s of CPU time (an endless loop?)"  # the line the worker was at when it ran out
    never_imported(run, f"Your module did not finish importing at line {line} of {MODULE}: {why}. {NO_CALL}")


def test_a_package_that_is_not_there_says_only_the_standard_library_is(folder, tmp_path):
    numpy = tmp_path / "optimization_toolkit.py"
    numpy.write_text("import numpy as np\n" + STUBS.read_text())
    run = student_run(folder, "tests/visible/test_ex08_softmax.py", f"--submission={numpy}")
    assert "No module named 'numpy' (only Python's standard library is available when your module is " \
        "graded)" in run.stdout, run.stdout[-2000:]  # fmt: skip
    assert verdict(run.stdout)[8][4] == "not imported"


# -- the spec in the stubs -------------------------------------------------------------------------


def test_every_exercise_function_has_a_docstring_in_the_reference_and_the_stubs():
    functions = set(kit_manifest(KIT).functions)
    for path in (REFERENCE, STUBS):
        tree = ast.parse(path.read_text())
        missing = [
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef) and node.name in functions and not ast.get_docstring(node)
        ]
        assert missing == [], f"{path.relative_to(KIT)}: no docstring for {missing}"


def lab_names() -> set[str]:
    """Every name the reference defines or uses: what a sentence may start with in lower case."""
    names = set()
    for node in ast.walk(ast.parse(REFERENCE.read_text())):
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def test_every_suite_test_says_what_it_checks_in_a_sentence():
    """The first paragraph of a test's docstring is what a student reads beside a failed check: a
    sentence, upper case first unless it starts with code: a name of the lab (`softmax`, `eps`) or a
    formula (`exp(x_i)`, `rho = 1`)."""
    names, problems = lab_names(), []
    for path in sorted((KIT / "tests").glob("*/test_ex*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.FunctionDef) and node.name.startswith("test_")):
                continue
            doc = ast.get_docstring(node) or ""
            word = re.match(r"\w*", doc).group(0)
            code = word in names or "_" in word or re.match(r" ?[\[(.=]", doc[len(word) :])
            if not doc or not (word[:1].isupper() or not word[:1].isalpha() or code):
                problems.append(f"{path.relative_to(KIT)}::{node.name}: {doc[:40]!r}")
    assert problems == [], "\n".join(problems)


# -- messages --------------------------------------------------------------------------------------


def test_a_near_miss_names_the_tolerance_it_missed():
    with pytest.raises(AssertionError) as caught:
        expect_close(-0.9999990000010001, -1.0, "f()", abs=1e-9)
    assert "tolerance" in str(caught.value) and "1e-09" in str(caught.value)


def test_a_seeded_rng_reads_as_code_in_a_call():
    what = call("choose_parent", [1], "random.Random(1)", "greedy")
    assert what == "choose_parent([1], random.Random(1), 'greedy')"
    assert call("f", "random.Random(seed)") == "f(random.Random(seed))"
    assert call("f", "random") == "f('random')"


@pytest.mark.parametrize("worker", ["sandbox", "inprocess"])
def test_a_run_leaves_nothing_in_the_temporary_folder(folder, worker, request):
    """Neither the worker's scratch folder, nor the copy a run in this process imports, nor the module a
    student's own run decodes into outlives the run."""
    temporary = Path(tempfile.mkdtemp(prefix="optlab-test-tmp-"))
    os.chmod(temporary, 0o711)  # the worker user passes through it, as through /tmp
    request.addfinalizer(lambda: shutil.rmtree(temporary, ignore_errors=True))
    suite = "tests/visible/test_ex08_softmax.py"
    run = subprocess.run(
        [sys.executable, "-m", "pytest", f"--worker={worker}", f"--submission={REFERENCE}", suite],
        cwd=folder, capture_output=True, text=True, timeout=600, env=dict(os.environ, TMPDIR=str(temporary)),
    )  # fmt: skip
    assert run.returncode == 0 and "5 passed" in run.stdout, run.stdout[-2000:]
    assert sorted(p.name for p in temporary.iterdir()) == []


def test_a_session_stopped_early_closes_the_worker_started_for_the_next_suite(tmp_path, request):
    """Both suites of the kit; the first failure stops the session before the hidden suite runs: the
    worker started ahead for it is closed, and nothing of it is left in the temporary folder."""
    temporary = Path(tempfile.mkdtemp(prefix="optlab-test-tmp-"))
    os.chmod(temporary, 0o711)
    request.addfinalizer(lambda: shutil.rmtree(temporary, ignore_errors=True))
    wrong = tmp_path / "optimization_toolkit.py"
    wrong.write_text(REFERENCE.read_text() + "\n\ndef softmax(xs):\n    return [1.0] * len(xs)\n")
    suites = ["tests/visible/test_ex08_softmax.py", "tests/hidden/test_ex08_softmax.py"]
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:randomly", "-x", f"--submission={wrong}", *suites],
        cwd=KIT, capture_output=True, text=True, timeout=600, env=dict(os.environ, TMPDIR=str(temporary)),
    )  # fmt: skip
    assert run.returncode == 1 and "stopping after 1 failures" in run.stdout, run.stdout[-2000:]
    assert sorted(p.name for p in temporary.iterdir()) == []
