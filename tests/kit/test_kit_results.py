"""results.json's top-level output, which students see at once: hidden checks' counts, points and the
total that includes them appear there only where the manifest shows hidden entries at once too. And
points a person can read: two decimals at most, an exercise's entries adding up to its points exactly,
the manifest's visible/hidden split, one way of printing points. A grading that fails (its test run's
report lost) says so, with exit 3, never a score; what a submission prints reaches the terminal and
results.json with its control characters escaped."""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import types
import unicodedata
from collections.abc import Callable
from pathlib import Path

import pytest

import grader.grading.grade
from grader.assignment.inventory import load_inventory
from grader.assignment.manifest import Exercise, Manifest, ManifestError, parse_manifest
from grader.assignment.records import TestRecord
from grader.assignment.reference import read_reference
from grader.assignment.scoring import points_text, score_suites, split_points
from grader.cli import main
from grader.grading.grade import GRADING_FAILED, kit_manifest
from grader.grading.results import results_document
from grader.layout import REFERENCE
from grader.sandbox import isolation
from tests.kit.conftest import KIT
from tests.kit.gradescope_schema import problems

REFERENCE_TEXT = (KIT / REFERENCE).read_text(encoding="utf-8")


def document(visibility: str) -> dict:
    """One exercise worth 4 points: visible checks 2 of 2 passed, hidden checks 1 of 2."""
    exercise = Exercise(1, "double", "1. numbers", ("double",), 4, visibility, "property")
    outcomes = [("visible", True), ("visible", True), ("hidden", True), ("hidden", False)]
    records = [
        TestRecord(f"tests/{suite}/t.py::test_{i}", 1, suite, ok, "passed" if ok else "failed", "p", "")
        for i, (suite, ok) in enumerate(outcomes)
    ]
    return results_document(score_suites(Manifest("optimization_toolkit", (exercise,)), records))


@pytest.mark.parametrize(
    ("visibility", "when", "cell"),
    [
        ("after_published", "when grades are published", "later"),
        ("after_due_date", "after the due date", "later"),
        ("hidden", "to your instructors only", "not shown"),
    ],
)
def test_hidden_results_stay_out_of_the_summary_until_their_entries_show(visibility, when, cell):
    doc = document(visibility)
    assert doc["score"] == 3.0  # the grade itself counts every check
    output = doc["output"]
    assert "**Visible checks: 2 / 2**" in output and f"shown {when}" in output
    assert f"| 1 double | 2/2 | {cell} | 2 / 2 |" in output
    assert "1/2" not in output and "3 / 4" not in output and "Score" not in output
    hidden = next(t for t in doc["tests"] if t["name"].endswith("hidden checks"))
    assert hidden["visibility"] == visibility


def test_visible_hidden_results_are_summed_up_at_once():
    output = document("visible")["output"]
    assert "**Score: 3 / 4**" in output and "| 1 double | 2/2 | 1/2 | 3 / 4 |" in output


# -- points a person can read ------------------------------------------------------------------------


def kit_records(passed: Callable[[int], bool]) -> list[TestRecord]:
    """One record per test of the kit's inventory; the i-th passes where passed(i)."""
    tests = load_inventory(KIT)["tests"]
    return [
        TestRecord(
            t["nodeid"], t["exercise"], t["suite"], passed(i), "passed" if passed(i) else "failed", "p", ""
        )
        for i, t in enumerate(tests)
    ]


def two_decimals(x: float) -> bool:
    return round(x, 2) == x


@pytest.mark.parametrize(
    "passed", [lambda i: True, lambda i: False, lambda i: i % 3 == 0, lambda i: i % 7 != 2]
)
def test_every_score_has_two_decimals_and_entries_add_up_to_the_exercise(passed):
    manifest = kit_manifest(KIT)
    scores = score_suites(manifest, kit_records(passed))
    doc = results_document(scores)
    assert len(doc["tests"]) == 2 * len(manifest.exercises)
    for test in doc["tests"]:
        assert two_decimals(test["score"]) and two_decimals(test["max_score"]), test["name"]
        assert 0 <= test["score"] <= test["max_score"]
    for exercise in manifest.exercises:
        entries = [t for t in doc["tests"] if t["extra_data"]["exercise"] == exercise.id]
        assert sum(t["max_score"] for t in entries) == exercise.points  # exactly, not approximately
        item = next(i for i in doc["extra_data"]["exercises"] if i["id"] == exercise.id)
        assert item["score"] == round(sum(t["score"] for t in entries), 2)
    assert doc["extra_data"]["points_possible"] == manifest.total_points and two_decimals(doc["score"])
    assert not re.search(r"\d\.\d{3}", doc["output"])  # the summary prints points with two decimals at most


def test_the_default_split_follows_the_checks_with_the_remainder_on_hidden():
    exercise = Exercise(1, "double", "1. numbers", ("double",), 5, "visible", "property")
    assert split_points(exercise, [3, 4]) == [2.14, 2.86]  # 5 * 3/7 = 2.142857...
    assert split_points(exercise, [1, 2]) == [1.67, 3.33]
    assert split_points(exercise, [4]) == [5]


def test_the_manifest_may_set_the_visible_split(kit_tree):
    text = (kit_tree / "grader/exercises.toml").read_text() + "visible_points = 0.5\n"
    reference = read_reference(
        kit_tree / "solutions/optimization_toolkit.py", "solutions/optimization_toolkit.py"
    )
    exercise = parse_manifest(text, reference).exercises[0]
    assert exercise.visible_points == 0.5 and split_points(exercise, [9, 1]) == [0.5, 2.5]
    for bad, problem in (("3", "less than points"), ("0.125", "at most two decimals"), ("-1", "positive")):
        with pytest.raises(ManifestError, match=problem):
            parse_manifest(text.replace("visible_points = 0.5", f"visible_points = {bad}"), reference)


def test_a_partly_passed_entry_is_rounded_to_cents_and_a_whole_one_is_its_maximum():
    exercise = Exercise(1, "double", "1. numbers", ("double",), 6, "visible", "property")
    outcomes = (
        [("visible", True), ("visible", False), ("visible", False)]
        + [("hidden", True)] * 3
        + [("hidden", False)]
    )
    records = [
        TestRecord(f"tests/{suite}/t.py::test_{i}", 1, suite, ok, "passed" if ok else "failed", "p", "")
        for i, (suite, ok) in enumerate(outcomes)
    ]
    visible, hidden = score_suites(Manifest("optimization_toolkit", (exercise,)), records)
    assert (visible.max_score, hidden.max_score) == (2.57, 3.43)
    assert (visible.score, hidden.score) == (0.86, 2.57)  # 2.57 / 3 and 3.43 * 3/4, to the cent
    assert document("visible")["output"].count(" / ") == 2


@pytest.mark.parametrize(("points", "text"), [(2, "2"), (2.1, "2.1"), (2.10000001, "2.1"), (1.714286, "1.71"),
                                              (0, "0"), (-0.0, "0"), (99.999, "100")])  # fmt: skip
def test_points_print_one_way(points, text):
    assert points_text(points) == text


# -- a grading that fails says so: never a score of 0 as if the submission earned it -------------------

# A pytest plugin that, once pytest-json-report has saved its report (pytest_sessionfinish), spoils it as
# a full disk or a killed run would: FAULT is "missing", "empty", "truncated" or "not a report".
REPORT_FAULT_PLUGIN = """\
import os
from pathlib import Path


def pytest_unconfigure(config):
    path = Path(config.option.json_report_file)
    fault = os.environ["OPTLAB_TEST_REPORT_FAULT"]
    text = path.read_bytes()
    if fault == "missing":
        path.unlink()
    elif fault == "empty":
        path.write_bytes(b"")
    elif fault == "truncated":
        path.write_bytes(text[: len(text) // 2])
    else:
        path.write_bytes(b'{"created": 1, "tests": "none"}')
"""


def grade_cli(*args: str) -> tuple[int, str, str]:
    """`grader grade` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--root", str(KIT), "grade", *args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.parametrize(
    ("fault", "said"),
    [
        ("missing", "was missing"),
        ("empty", "was empty"),
        ("truncated", "was cut short or corrupt (not JSON)"),
        ("not a report", "was not a pytest-json-report report"),
    ],
)
def test_a_lost_report_is_a_failed_grading_never_a_zero(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fault: str, said: str
) -> None:
    (tmp_path / "optlab_report_fault.py").write_text(REPORT_FAULT_PLUGIN, encoding="utf-8")
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    monkeypatch.setenv("PYTHONPATH", path)  # the suites' pytest, a child, loads the plugin
    monkeypatch.setenv("PYTEST_PLUGINS", "optlab_report_fault")
    monkeypatch.setenv("OPTLAB_TEST_REPORT_FAULT", fault)
    out = tmp_path / "results.json"
    code, stdout, stderr = grade_cli(str(KIT / REFERENCE), "-o", str(out), "--exercise", "8")
    document = json.loads(out.read_text(encoding="utf-8"))
    print(f"{fault}: exit {code}, score {document['score']}, {document['extra_data']}")
    assert code == GRADING_FAILED, stdout + stderr
    reason = document["extra_data"]["grading_failed"]
    assert reason == f"the test run's report (pytest-json-report's) {said}"
    assert document["tests"] == [] and "points_possible" not in document["extra_data"]
    assert "The grading failed, not your submission" in document["output"]
    assert "The score here is not yours" in document["output"]
    assert "grader: error: the grading failed, no score was given: " + reason in stderr
    assert "grader: score" not in stdout
    assert problems(out) == []


def test_results_json_that_cannot_be_written_is_an_error_not_a_silent_zero(full_disk: Path) -> None:
    out = full_disk / "results.json"
    code, stdout, stderr = grade_cli(str(KIT / REFERENCE), "-o", str(out), "--exercise", "8")
    assert code == GRADING_FAILED and "grader: error: the grading failed: " in stderr
    assert "No space left on device" in stderr and not out.exists()
    assert "grader: wrote" not in stdout


# -- what a submission prints reaches the terminal and results.json escaped --------------------------

ESCAPES = (
    "\x1b[2J\x1b[H"  # clear the screen
    "\x1b]0;pwned\x07"  # the window's title
    "\x1b]52;c;cm0gLXJmIH4K\x07"  # write the clipboard (OSC 52)
    "\rgrader: score 100 / 100\r\n"  # a fake score line over the real one
    "\x9b31m\u202egnp.exe\u2028"  # a C1 CSI, a bidi override, a line separator
)


def escaping(text: str) -> str:
    """`text` with the escapes printed at import and raised from softmax."""
    raised = text.replace("    m = max(xs)\n", f"    raise ValueError({ESCAPES!r})\n    m = max(xs)\n", 1)
    return f"print({ESCAPES!r})\n" + raised


def controls(text: str) -> list[str]:
    """The control, format and separator characters of `text` but newlines and tabs."""
    return [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c not in "\n\t"]


def test_escapes_a_submission_prints_never_reach_the_terminal_or_results_json(tmp_path: Path) -> None:
    submission = tmp_path / "optimization_toolkit.py"
    submission.write_text(escaping(REFERENCE_TEXT), encoding="utf-8")
    out = tmp_path / "results.json"
    code, stdout, stderr = grade_cli(str(submission), "-o", str(out), "--exercise", "8")
    print(f"control characters that reached the terminal: {len(controls(stdout + stderr))}")
    assert code == 0, stderr
    assert controls(stdout + stderr) == []
    assert "\\x1b[2J\\x1b[H\\x1b]0;pwned\\x07" in stdout  # shown, not obeyed
    assert stdout.count("grader: note: control characters and escape sequences") == 1  # said once
    assert "grader: score 0 / 3, hidden checks included" in stdout
    document = json.loads(out.read_text(encoding="utf-8"))
    assert controls(json.dumps(document, ensure_ascii=False)) == []  # what Gradescope shows
    assert "ValueError" in json.dumps(document)  # the exception is still reported


FORGED = "grader: score 100 / 100, hidden checks included"


def test_what_a_submission_printed_is_marked_and_never_passes_for_the_graders_own_lines(
    tmp_path: Path,
) -> None:
    submission = tmp_path / "optimization_toolkit.py"
    forged = f"print({FORGED!r})\nprint('isolation: none')\nprint()\nprint('second line')\n"
    submission.write_text(forged + REFERENCE_TEXT, encoding="utf-8")
    code, stdout, stderr = grade_cli(str(submission), "-o", str(tmp_path / "results.json"), "--exercise", "8")
    assert code == 0, stderr
    lines = stdout.splitlines()
    block = lines[lines.index("--- what the submission printed (first 2000 characters) ---") + 1 :]
    print("\n".join(block[:6]))
    assert f"│ {FORGED}" in block and "│ isolation: none" in block and "│ second line" in block
    assert "│" in block  # its empty line is marked too
    assert [line for line in lines if line.startswith("grader: score")] == [
        "grader: score 3 / 3, hidden checks included"
    ]
    assert sum(line.startswith("isolation:") for line in lines) == 1  # the grader's own, above


def test_a_worker_log_on_a_full_disk_costs_no_check(
    tmp_path: Path, full_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # grading's own scratch folder (where the workers' output is logged for the instructor) on a full
    # disk, the test run's report on a disk with room: what the submission printed is lost, never a check
    monkeypatch.setattr(
        grader.grading.grade,
        "tempfile",
        types.SimpleNamespace(
            TemporaryDirectory=functools.partial(tempfile.TemporaryDirectory, dir=full_disk)
        ),
    )
    submission = tmp_path / "optimization_toolkit.py"
    submission.write_text(REFERENCE_TEXT + "\nprint('working on it')\n", encoding="utf-8")
    out = tmp_path / "results.json"
    code, stdout, stderr = grade_cli(str(submission), "-o", str(out), "--exercise", "8")
    document = json.loads(out.read_text(encoding="utf-8"))
    print(f"score with the worker log on a full disk: {document['score']}")
    assert code == 0 and document["score"] == 3.0, stdout + stderr


def test_a_sandbox_that_cannot_be_set_up_on_a_full_disk_is_a_failed_grading(
    tmp_path: Path, full_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the suites' pytest (a child) makes its workers' folders on the full disk: a plugin points its
    # tempfile there (TMPDIR alone would not do: Python passes over a temporary folder it cannot write)
    (tmp_path / "optlab_full_tmp.py").write_text(
        "import os, tempfile\n\n\ndef pytest_configure(config):\n"
        "    tempfile.tempdir = os.environ['OPTLAB_TEST_FULL_DISK']\n",
        encoding="utf-8",
    )
    path = os.pathsep.join(p for p in (str(tmp_path), os.environ.get("PYTHONPATH", "")) if p)
    monkeypatch.setenv("PYTHONPATH", path)
    monkeypatch.setenv("PYTEST_PLUGINS", "optlab_full_tmp")
    monkeypatch.setenv("OPTLAB_TEST_FULL_DISK", str(full_disk))
    # the mount layer keeps sandboxes under /run/optlab-kit (out of every world-writable folder), not in
    # the temporary folder: off here, so the workers' folders land on the full disk (the same failure as a
    # full /run, by the same path)
    off = os.environ.get(isolation.LAYERS_OFF, "")
    monkeypatch.setenv(isolation.LAYERS_OFF, ",".join(filter(None, (off, "mounts"))))
    out = tmp_path / "results.json"
    code, stdout, stderr = grade_cli(str(KIT / REFERENCE), "-o", str(out), "--exercise", "8")
    document = json.loads(out.read_text(encoding="utf-8"))
    print(f"reference with its workers on a full disk: exit {code}, {document['extra_data']}")
    assert code == GRADING_FAILED, stdout + stderr
    assert document["extra_data"]["grading_failed"].startswith("the test run stopped on an internal error")
    assert "No space left on device" in stderr  # the instructor's log says why


def test_the_worker_echo_shows_escapes_without_obeying_them(tmp_path: Path) -> None:
    # what a call printed is echoed to pytest's output (a terminal's with -s): a TA's or a student's run
    submission = tmp_path / "optimization_toolkit.py"
    printing = REFERENCE_TEXT.replace("    m = max(xs)\n", f"    print({ESCAPES!r})\n    m = max(xs)\n", 1)
    submission.write_text(printing, encoding="utf-8")
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/visible/test_ex08_softmax.py", f"--submission={submission}",
         "-s", "-q", "-p", "no:cacheprovider", "-p", "no:randomly"],
        cwd=KIT, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    print(f"control characters echoed: {len(controls(run.stdout + run.stderr))}")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert controls(run.stdout + run.stderr) == []
    assert "\\x1b]52;c;cm0gLXJmIH4K\\x07" in run.stdout  # seen
    assert run.stdout.count("control characters and escape sequences") <= 2  # said once per worker


def test_the_execution_time_students_see_ends_with_the_visible_run(tmp_path: Path, monkeypatch) -> None:
    """Issue 33, found by the blind attacks: `execution_time` counted the hidden run's wall time too (30 s
    against 5 s for two submissions with equal visible pages: a bit of the hidden outcome at once). It
    ends where the visible run ended: here an hour passes once both runs are over (the clock moved on by
    hand), and the field does not see it."""
    import time

    real_run, real_clock = grader.grading.grade.run_checks, time.monotonic

    def then_an_hour(*args, **kwargs):
        runs = real_run(*args, **kwargs)
        monkeypatch.setattr(time, "monotonic", lambda: real_clock() + 3600.0)
        return runs

    monkeypatch.setattr(grader.grading.grade, "run_checks", then_an_hour)
    graded = grader.grading.grade.grade(KIT, KIT / REFERENCE, tmp_path / "results.json", exercises=[8])
    assert graded.document["score"] == kit_manifest(KIT).by_id(8).points
    assert graded.document["execution_time"] < 3600
