"""`grader batch`: a folder and a Gradescope export graded in parallel into grades.csv, each submission's
results.json and the item-analysis report; resumed runs skip what is graded; a hanging or crashing
submission gets its status while the others complete. Exercises 8 and 12 only, to keep it quick.
"""

from __future__ import annotations

import base64
import contextlib
import csv
import dataclasses
import io
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import time
import unicodedata
import zipfile
from pathlib import Path

import pytest

import grader.batch.children
import grader.batch.folders
import grader.batch.keys
import grader.batch.outcomes
from grader import __version__
from grader.assignment.manifest import Exercise
from grader.batch.command import batch_title
from grader.batch.grades import change_text, grade_row, regrade_changes
from grader.batch.outcomes import Outcome
from grader.batch.report import histogram_bins, item_analysis, point_biserial, report_html
from grader.batch.roster import (
    BatchSourceError,
    Entry,
    Submitter,
    content_hash,
    parse_metadata,
    read_source,
    scan_source,
)
from grader.batch.similarity import exercise_code
from grader.cli import main
from grader.grading.grade import kit_manifest
from tests.kit.browser import layout, overflowing, screenshot
from tests.kit.conftest import KIT, entry_points
from tests.kit.gradescope_schema import problems

REFERENCE = (KIT / "solutions" / "optimization_toolkit.py").read_text(encoding="utf-8")
STUB = (KIT / "student" / "optimization_toolkit.py").read_text(encoding="utf-8")
SELECTION = ["--exercise", "8", "--exercise", "12"]
COLUMNS = [
    "file", "name", "email", "sid", "8 softmax", "12 group advantages",
    "total_points_earned", "total_points_possible", "percent_correct", "grading_status",
    "kit_version", "inventory_hash",
]  # fmt: skip
NOT_SUBMISSIONS = ("README.txt", "roster.csv", "rubric.pdf", ".hidden.py", "__MACOSX")
GRADED = ["ada.py", "broken", "crash.py", "spin.py", "stub.py", "two"]
HANG_BOUND = 30.0  # --timeout of the class batch: well past an honest grading of two exercises, even loaded

# A stand-in for `python -m grader` that dies of SIGABRT on a submission named crash*: grade itself never
# crashes on a submission, so the child's crash is simulated; every other submission is graded for real.
CRASHING_GRADER = """\
import os, sys
if any(os.path.basename(arg).startswith("crash") for arg in sys.argv[1:]):
    print("simulated crash of the grading process", flush=True)
    os.abort()
os.execv(sys.executable, [sys.executable, "-m", "grader", *sys.argv[1:]])
"""

METADATA = """\
submission_101:
  :submitters:
  - :name: Ada Lovelace
    :sid: '1815'
    :email: ada@example.edu
  :created_at: 2026-11-30 23:58:00.000000000 -08:00
  :score: 0.0
submission_102:
  :submitters:
  - :name: Ben Bit
    :sid: '200'
    :email: ben@example.edu
  - :name: "Cy D'Arc"
    :sid: 201
    :email: ~
"""


def batch(*args: str) -> tuple[int, str, str]:
    """Run `grader batch` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--root", str(KIT), "batch", *args])
    return code, out.getvalue(), err.getvalue()


def rows(grades: Path) -> dict[str, dict[str, str]]:
    with open(grades, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        assert reader.fieldnames == COLUMNS
        return {row["file"]: row for row in reader}


def members_of(grades: Path) -> list[dict[str, str]]:
    """Every row of grades.csv (a group has one per member)."""
    with open(grades, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def looping(text: str, marker: Path) -> str:
    """`text` with every exercise stub replaced by an endless loop, marked with a comment (to find it)."""
    loops = re.sub(r'raise NotImplementedError\("exercise [^"]*"\)', "while True:\n        pass", text)
    return f"# {marker}\n{loops}"


def left_running(marker: Path) -> list[str]:
    """Processes still running the submission marked `marker`: its grading, or its worker (which runs in
    a scratch folder holding a copy of the module)."""
    found = []
    for process in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            if str(marker).encode() in (process / "cmdline").read_bytes():
                found.append(process.name)
            elif str(marker) in (process / "cwd" / "optimization_toolkit.py").read_text(errors="replace"):
                found.append(process.name)
    return found


# -- a class folder: reference, stubs, broken, crashing, hanging --------------------------------------


@pytest.fixture(scope="module")
def class_batch(tmp_path_factory: pytest.TempPathFactory) -> dict:
    top = tmp_path_factory.mktemp("class")
    source = top / "submissions"
    source.mkdir()
    (source / "ada.py").write_text(REFERENCE, encoding="utf-8")
    (source / "stub.py").write_text(STUB, encoding="utf-8")
    (source / "broken").mkdir()  # softmax does not compile: salvage drops it, exercise 12 is still graded
    broken = REFERENCE.replace("def softmax(", "def softmax((", 1)
    (source / "broken" / "optimization_toolkit.py").write_text(broken, encoding="utf-8")
    (source / "crash.py").write_text(REFERENCE, encoding="utf-8")
    (source / "spin.py").write_text(looping(STUB, source / "spin.py"), encoding="utf-8")
    (source / "two").mkdir()  # a lab module under another name, beside a helper: the TA renames one
    (source / "two" / "lab.py").write_text(REFERENCE, encoding="utf-8")
    (source / "two" / "helpers.py").write_text("x = 1\n", encoding="utf-8")
    for name in NOT_SUBMISSIONS:  # what a TA's folder holds besides submissions: skipped, never graded
        (source / name).mkdir() if name == "__MACOSX" else (source / name).write_text("notes\n")
    wrapper = top / "fake_grader.py"
    wrapper.write_text(CRASHING_GRADER, encoding="utf-8")
    grades = top / "grades.csv"
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(grader.batch.children, "GRADER", (sys.executable, str(wrapper)))
        code, out, err = batch(
            str(source), "-o", str(grades), "-j", "2", *SELECTION,
            "--call-timeout", "120", "--timeout", str(HANG_BOUND),
        )  # fmt: skip
    return {
        "code": code, "out": out, "err": err, "grades": grades, "source": source,
        "results": top / "grades-results",
    }  # fmt: skip


def test_the_class_is_graded_into_grades_csv(class_batch: dict) -> None:
    assert class_batch["code"] == 0, class_batch["err"]
    graded = rows(class_batch["grades"])
    assert list(graded) == GRADED  # README.txt and the like are not students
    scores = {file: [row[c] for c in COLUMNS[4:10]] for file, row in graded.items()}
    assert {(row["kit_version"], len(row["inventory_hash"])) for row in graded.values()} == {
        (__version__, 64)
    }
    assert scores["ada.py"] == ["3", "4", "7", "7", "1", "completed"]  # percent_correct: Otter's 0 to 1
    assert scores["broken"] == ["0", "4", "4", "7", "0.5714", "completed"]
    assert scores["stub.py"] == ["0", "0", "0", "7", "0", "completed"]
    assert all(row["name"] == row["email"] == row["sid"] == "" for row in graded.values())


def test_a_crash_and_a_hang_get_their_status_and_the_rest_completes(class_batch: dict) -> None:
    graded = rows(class_batch["grades"])
    assert graded["crash.py"]["grading_status"].startswith("crashed: the grader was killed by SIGABRT")
    assert "simulated crash" in graded["crash.py"]["grading_status"]
    assert graded["spin.py"]["grading_status"] == (
        f"timed out: grading took longer than {HANG_BOUND:g} s and was stopped"
    )
    # a crash of the grading is no score (graded again once, then reported); a hang earns its zero
    assert graded["crash.py"]["grading_status"].endswith("(graded twice, crashed both times)")
    assert graded["crash.py"]["total_points_earned"] == graded["crash.py"]["8 softmax"] == ""
    assert graded["spin.py"]["total_points_earned"] == "0"
    record = json.loads((class_batch["results"] / "crash.py" / "batch.json").read_text())
    assert record["status"] == "crashed" and record["attempts"] == 2
    assert "spin.py: timed out" in class_batch["out"] and "crash.py: crashed" in class_batch["out"]


def test_what_cannot_be_a_submission_is_listed_once_and_the_summary_adds_up(class_batch: dict) -> None:
    out = class_batch["out"]
    assert out.count("skipped 5 entries that cannot be a submission: ") == 1
    for name in NOT_SUBMISSIONS:
        assert out.count(name) == 1, name
    assert (
        "grader: 6 submissions: 3 scored, 3 not scored (1 crashed, 1 timed out, 1 ungraded); "
        "6 graded now, 0 kept from an earlier run; 5 entries skipped (not submissions)"
    ) in out
    assert sorted(p.name for p in class_batch["results"].iterdir()) == GRADED


def test_a_folder_of_several_modules_is_explained_to_the_ta(class_batch: dict) -> None:
    status = rows(class_batch["grades"])["two"]["grading_status"]
    assert status == (
        "ungraded: two holds several .py files that could be the module (helpers.py, lab.py): "
        "rename the one to grade to optimization_toolkit.py (or remove the others), then run grader "
        "batch again"
    )
    student = json.loads((class_batch["results"] / "two" / "results.json").read_text())
    assert "submit one file named optimization_toolkit.py" in student["output"]  # the student's own words
    assert student["extra_data"]["ungraded_kind"] == "several modules"


def test_a_hang_costs_its_own_bound_and_leaves_no_process(class_batch: dict) -> None:
    records = {p.parent.name: json.loads(p.read_text()) for p in class_batch["results"].glob("*/batch.json")}
    spin = records["spin.py"]
    assert spin["status"] == "timed out" and f"longer than {HANG_BOUND:g} s" in spin["reason"]
    assert spin["seconds"] >= HANG_BOUND  # stopped at its bound, not before
    # the hang held one slot; every other submission was graded beside it, none cut by the bound
    assert all(r["status"] != "timed out" for name, r in records.items() if name != "spin.py")
    assert left_running(class_batch["source"] / "spin.py") == []


def test_each_grade_log_ends_on_where_its_results_json_is(class_batch: dict) -> None:
    """Issue 34: grade.log ended naming the grading's private copy of results.json, removed since."""
    for name in ("ada.py", "spin.py"):
        folder = class_batch["results"] / name
        last = (folder / "grade.log").read_text(encoding="utf-8").splitlines()[-1]
        status = "completed" if name == "ada.py" else "timed out"
        assert last == f"grader batch: results.json written to {folder / 'results.json'} ({status})"


def test_every_submission_keeps_a_valid_results_json(class_batch: dict) -> None:
    folders = sorted(p.name for p in class_batch["results"].iterdir())
    assert folders == GRADED
    for name in folders:
        assert problems(class_batch["results"] / name / "results.json") == [], name
        assert not (class_batch["results"] / name / "results.new.json").exists()
    spin = json.loads((class_batch["results"] / "spin.py" / "results.json").read_text())
    assert spin["score"] == 0 and "timed out" in spin["output"]


def test_the_report_shows_the_item_analysis_with_embedded_charts(class_batch: dict) -> None:
    folder = class_batch["grades"].parent
    assert (folder / "score-histogram.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (folder / "pass-rates.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (folder / "report.html").read_text(encoding="utf-8")
    images = re.findall(r"src='data:image/png;base64,([A-Za-z0-9+/=]+)'", page)
    assert [base64.b64decode(i)[:4] for i in images] == [b"\x89PNG"] * 2
    assert "http://" not in page and "https://" not in page  # readable offline
    assert "6 submissions, 3 scored, 3 not scored" in page
    # exercise 8: only ada.py of the three scored has full points; exercise 12: ada and broken
    assert re.search(
        r"<td>8 softmax</td><td class='n'>3</td><td class='n'>3</td><td class='n'>33%</td>", page
    )
    assert re.search(
        r"<td>12 group advantages</td><td class='n'>4</td><td class='n'>3</td><td class='n'>67%", page
    )
    assert page.index("<td>8 softmax</td>") < page.index("<td>12 group advantages</td>")  # weakest first
    assert "<tr class='weak'><td>8 softmax</td>" in page
    assert "<td>8 (visible)</td>" in page and "<td>12 (hidden)</td>" in page  # the checks, by pass rate
    assert "<title>optimization_toolkit.py: submissions, graded 20" in page
    assert "(not implemented)" in page  # the stub's failures, by kind


@pytest.mark.parametrize("width", [800, 1400])
def test_the_report_shows_the_grades_first_and_fits_the_window_in_a_browser(
    class_batch: dict, width: int, tmp_path: Path
) -> None:
    """Issue 34: the Students table was last, after about 6,000 px of item analysis, and 2,598 px wide
    (at 1400 px the page scrolled sideways; at 800 px the checks tables overflowed too)."""
    page = class_batch["grades"].parent / "report.html"
    laid_out = layout(page, width)
    assert overflowing(laid_out) == []
    headings = laid_out["headings"]
    assert headings[0] == "Students"  # before the charts and the item analysis
    assert headings.index("Students") < headings.index("Exercises, weakest first")
    assert laid_out["first_header"] == "sticky"  # the students' header stays while the box scrolls
    assert laid_out["tables"][0]["boxed"]
    # every colour says what it means: the highlighted rows and the chart's red bars
    assert "the weakest 2: the lowest share of submissions with full points" in laid_out["text"]
    screenshot(page, width, tmp_path / f"report-{width}.png")


def test_each_submission_has_the_page_its_student_sees_readable_in_a_browser(class_batch: dict) -> None:
    """Issue 34: the report linked each results.json as raw JSON (the student's page one escaped
    string); each has a page.html now, the markdown rendered and every entry with its score."""
    report = (class_batch["grades"].parent / "report.html").read_text(encoding="utf-8")
    for name in ("ada.py", "broken"):
        page = class_batch["results"] / name / "page.html"
        assert f"href='grades-results/{name}/page.html'" in report
        document = json.loads((class_batch["results"] / name / "results.json").read_text())
        laid_out = layout(page, 800)
        assert overflowing(laid_out) == []
        text = laid_out["text"]
        assert "**" not in text and "| exercise |" not in text  # markdown rendered, not shown as source
        for test in document["tests"]:
            assert test["name"] in text
        assert "seen once grades are published" in text and "seen at once" in text
    broken = (class_batch["results"] / "broken" / "page.html").read_text(encoding="utf-8")
    assert "<table>" in broken and "<strong>" in broken


def test_ctrl_c_stops_every_child_and_keeps_what_finished(tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "ada.py").write_text(REFERENCE, encoding="utf-8")
    (source / "spin.py").write_text(looping(STUB, source / "spin.py"), encoding="utf-8")
    command = [sys.executable, "-m", "grader", "--root", str(KIT), "batch", str(source), "-j", "2"]
    command += ["-o", str(tmp_path / "grades.csv"), *SELECTION, "--call-timeout", "120"]
    run = subprocess.Popen(  # with SIGINT ignored, as `grader batch ... &` starts: the batch takes it anyway
        command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(KIT)},  # this kit's grader, wherever the venv points
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )  # fmt: skip
    kept = tmp_path / "grades-results" / "ada.py" / "batch.json"
    deadline = time.monotonic() + 60
    while not kept.exists() and time.monotonic() < deadline and run.poll() is None:
        time.sleep(0.1)
    run.send_signal(signal.SIGINT)  # as a terminal's Ctrl-C would
    out, err = run.communicate(timeout=grader.batch.outcomes.GRACE_SECONDS + 30)
    assert run.returncode == 130 and "interrupted after 1 of 2 gradings" in err
    assert json.loads(kept.read_text())["status"] == "completed"
    spin = tmp_path / "grades-results" / "spin.py"
    assert not (spin / "batch.json").exists() and not (spin / "results.new.json").exists()
    assert left_running(source / "spin.py") == []
    graded = rows(tmp_path / "grades.csv")  # what finished, and what did not, marked
    assert graded["ada.py"]["percent_correct"] == "1" and graded["ada.py"]["grading_status"] == "completed"
    assert [graded["spin.py"][c] for c in COLUMNS[4:9]] == [""] * 5  # no grade yet, not a zero
    assert graded["spin.py"]["grading_status"].startswith("interrupted: ")
    assert "(incomplete: 1 of 2 graded)" in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "1 graded now, 0 kept from an earlier run, 1 not reached" in out

    again = ["-o", str(tmp_path / "grades.csv"), *SELECTION, "--call-timeout", "120", "--timeout", "3"]
    code, out, _ = batch(str(source), *again)
    assert code == 0 and "1 graded now, 1 kept from an earlier run" in out and "spin.py: timed out" in out
    assert "incomplete" not in (tmp_path / "report.html").read_text(encoding="utf-8")


# -- a Gradescope export, resumed ---------------------------------------------------------------------


def export_zip(path: Path, second: str = STUB) -> Path:
    with zipfile.ZipFile(path, "w") as zipped:
        zipped.writestr("assignment_42_export/submission_metadata.yml", METADATA)
        zipped.writestr("assignment_42_export/submission_101/optimization_toolkit.py", REFERENCE)
        zipped.writestr("assignment_42_export/submission_102/hw/optimization_toolkit (1).py", second)
    return path


def test_an_export_is_graded_with_its_names_and_resumed(tmp_path: Path) -> None:
    grades = tmp_path / "out" / "grades.csv"
    args = ["-o", str(grades), "-j", "2", *SELECTION]
    code, out, _ = batch(str(export_zip(tmp_path / "export.zip")), *args)
    assert code == 0 and "2 graded now, 0 kept from an earlier run" in out
    first = rows(grades)
    assert (first["submission_101"]["name"], first["submission_101"]["email"]) == (
        "Ada Lovelace",
        "ada@example.edu",
    )
    assert first["submission_101"]["sid"] == "1815"
    members = [r for r in members_of(grades) if r["file"] == "submission_102"]  # one row per member
    assert [(r["name"], r["email"], r["sid"]) for r in members] == [
        ("Ben Bit", "ben@example.edu", "200"),
        ("Cy D'Arc", "", "201"),
    ]
    assert (
        first["submission_101"]["percent_correct"] == "1"
        and first["submission_102"]["percent_correct"] == "0"
    )
    results = tmp_path / "out" / "grades-results" / "submission_101" / "results.json"
    written = results.stat().st_mtime_ns

    code, out, _ = batch(str(tmp_path / "export.zip"), *args)  # again: nothing to grade
    assert code == 0 and "0 graded now, 2 kept from an earlier run" in out
    assert rows(grades) == first and results.stat().st_mtime_ns == written

    code, out, _ = batch(str(export_zip(tmp_path / "export.zip", second=REFERENCE)), *args)  # a resubmission
    assert code == 0 and "1 graded now, 1 kept from an earlier run" in out
    assert rows(grades)["submission_102"]["percent_correct"] == "1"
    entries = "; ".join(
        f"{label}: {suite} checks 0 -> {points}"
        for label, exercise in (("8 softmax", 8), ("12 group advantages", 12))
        for suite, points in zip(("visible", "hidden"), entry_points(exercise), strict=True)
    )
    # who (issue 34: the preview named rows by file alone), and which entries (from the replaced results.json)
    preview = f"submission_102 (Ben Bit; Cy D'Arc): 0 -> 7 (+7): {entries}"
    assert f"1 grade change against {grades}:\n  {preview}\n" in out  # printed before it is replaced
    assert (
        "grades-results" not in preview
        and len(list((results.parent.parent / "submission_102" / "history").glob("results.*.json"))) == 1
    )
    kept = list((grades.parent / "grades-history").glob("grades.*.csv"))
    assert len(kept) == 1 and rows(kept[0]) == first  # the earlier one, kept in the history
    assert "Regrade: 1 grade changed" in (grades.parent / "report.html").read_text(encoding="utf-8")

    code, out, _ = batch(str(tmp_path / "export.zip"), *args, "--force")
    assert code == 0 and "2 graded now, 0 kept from an earlier run" in out
    assert results.stat().st_mtime_ns != written


# -- the parts ----------------------------------------------------------------------------------------


def test_metadata_names_every_submitter_and_skips_the_rest() -> None:
    text = METADATA + "submission_103:\n  :submitters: []\n  :history:\n  - :submitters:\n    - :name: Old\n"
    found = parse_metadata(text)
    assert found["submission_101"] == [Submitter("Ada Lovelace", "ada@example.edu", "1815")]
    assert found["submission_102"] == [
        Submitter("Ben Bit", "ben@example.edu", "200"),
        Submitter("Cy D'Arc", None, "201"),
    ]
    assert "submission_103" not in found  # no submitter of its own (a history entry's are not)
    assert parse_metadata(":submitters:\n- :name: 'O''Neil'\n  :sid: \"7\"\n") == {
        "": [Submitter("O'Neil", None, "7")]
    }


def test_a_folder_lists_each_entry_once_and_skips_outputs(tmp_path: Path) -> None:
    for folder in ("sub_10", "sub_9", ".hidden", "__MACOSX"):
        (tmp_path / folder).mkdir()
    for file in ("b.py", "a.zip", "grades.csv", ".DS_Store", "README", "notes.txt", "scan.PDF", "c.ipynb"):
        (tmp_path / file).write_text("x")
    roster = scan_source(tmp_path, tmp_path / "unused", exclude=[tmp_path / "grades.csv"])
    # a notebook is graded, so that its student gets a row saying what to submit
    assert [e.file for e in roster.entries] == ["a.zip", "b.py", "c.ipynb", "sub_9", "sub_10"]
    assert all(e.path.is_absolute() and e.submitters == () for e in roster.entries)
    skipped = [".DS_Store", ".hidden", "__MACOSX", "notes.txt", "README", "scan.PDF"]
    assert [name for name, _ in roster.skipped] == skipped  # the batch's own grades.csv is neither
    assert read_source(tmp_path, tmp_path / "unused") == list(roster.entries)


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        (None, "a Gradescope export without submission_metadata.yml: download it again"),
        ("{not: yaml at all", "names none of its 2 submission folders (missing or malformed): download"),
    ],
)
def test_an_export_without_readable_metadata_is_one_line(
    tmp_path: Path, metadata: str | None, message: str
) -> None:
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as zipped:
        if metadata is not None:
            zipped.writestr("assignment_42_export/submission_metadata.yml", metadata)
        zipped.writestr("assignment_42_export/submission_101/optimization_toolkit.py", REFERENCE)
        zipped.writestr("assignment_42_export/submission_102/optimization_toolkit.py", STUB)
    code, out, err = batch(str(tmp_path / "export.zip"), "-o", str(tmp_path / "grades.csv"))
    assert code == 2 and out == "" and err.count("\n") == 1
    assert err.startswith("grader: error: ") and message in err


def test_an_export_with_a_climbing_path_is_refused(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "bad.zip", "w") as zipped:
        zipped.writestr("export/../../escaped.py", "x = 1\n")
    with pytest.raises(BatchSourceError, match="unsafe path"):
        read_source(tmp_path / "bad.zip", tmp_path / "scratch")
    assert not (tmp_path.parent / "escaped.py").exists()


def test_the_content_hash_follows_the_bytes_not_the_metadata(tmp_path: Path) -> None:
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "optimization_toolkit.py").write_text("x = 1\n")
    before = content_hash(tmp_path / "s")
    (tmp_path / "s" / "submission_metadata.yml").write_text(":score: 3\n")
    assert content_hash(tmp_path / "s") == before
    (tmp_path / "s" / "optimization_toolkit.py").write_text("x = 2\n")
    assert content_hash(tmp_path / "s") != before


def test_sigterm_stops_a_batch_as_ctrl_c_does() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt, match="SIGTERM"), grader.batch.children.stoppable():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
    assert signal.getsignal(signal.SIGTERM) is before


def test_the_grading_key_follows_the_kit_the_selection_and_the_call_timeout(tmp_path: Path) -> None:
    (tmp_path / "ada.py").write_text(REFERENCE, encoding="utf-8")
    entry = Entry("ada.py", tmp_path / "ada.py")
    options = grader.batch.outcomes.BatchOptions(tmp_path / "results", exercises=(8,))
    key = grader.batch.keys.grading_key(entry, grader.batch.keys.kit_identity(KIT, options))
    assert key == grader.batch.keys.grading_key(entry, grader.batch.keys.kit_identity(KIT, options))
    for changed in ({"exercises": (8, 12)}, {"call_timeout": 2.0}):
        other = grader.batch.keys.kit_identity(KIT, dataclasses.replace(options, **changed))
        assert grader.batch.keys.grading_key(entry, other) != key
    kit = grader.batch.keys.kit_identity(KIT, options)
    assert grader.batch.keys.grading_key(entry, dict(kit, kit_version="0.0.0")) != key
    assert grader.batch.keys.grading_key(entry, dict(kit, inventory="0" * 64)) != key
    assert set(kit) >= {"kit_version", "inventory", "manifest", "reference"}


def scored(file: str, percent: float, checks: dict[str, bool], kind: str = "wrong result") -> Outcome:
    """A completed outcome of one exercise (8, 10 points) whose checks passed as `checks` says."""
    listed = [
        {"check": name, "property": f"{name} holds", "passed": ok, **({} if ok else {"kind": kind})}
        for name, ok in checks.items()
    ]
    status = "passed" if all(checks.values()) else "failed"
    extra = {"exercise": 8, "suite": "visible", "checks": listed}
    test = {
        "name": "8 softmax: visible checks",
        "status": status,
        "output": "(display text)",
        "extra_data": extra,
    }
    exercises = [{"id": 8, "score": percent / 10}]
    document = {
        "score": percent / 10,
        "tests": [test],
        "extra_data": {"points_possible": 10, "exercises": exercises},
    }
    return Outcome(Entry(file, Path(file)), "completed", "", document, 1.0)


def test_the_report_reads_failures_and_separation_from_the_checks_data() -> None:
    exercise = Exercise(8, "softmax", "p", ("softmax",), 10, "after_published", "property")
    outcomes = [  # "hard" separates (the strong pass it), "odd" is failed by the strong, "easy" by nobody
        scored("a.py", 100, {"easy": True, "hard": True, "odd": False}),
        scored("b.py", 90, {"easy": True, "hard": True, "odd": False}),
        scored("c.py", 30, {"easy": True, "hard": False, "odd": True}, kind="not implemented"),
        scored("d.py", 20, {"easy": True, "hard": False, "odd": True}, kind="ValueError"),
    ]
    analysis = item_analysis(outcomes, [exercise])
    checks = {c.check: c for c in analysis.checks}
    assert checks["hard"].separation == pytest.approx(0.99, abs=0.01) and checks["hard"].flag == ""
    assert checks["odd"].separation == pytest.approx(-0.99, abs=0.01)
    assert checks["easy"].separation is None
    # 4 submissions are too few for a flag to mean anything (issue 26): none, and the page says so
    assert [c.flag for c in analysis.checks] == ["", "", ""]
    failures = analysis.exercises[0].failures
    assert failures == (  # what went wrong in written code first, "not implemented" last
        ("odd holds (wrong result)", 2),
        ("hard holds (ValueError)", 1),
        ("hard holds (not implemented)", 1),
    )
    page = report_html(analysis, {}, "t")
    assert "display text" not in page and "4 submissions, 4 scored, 0 not scored" in page
    assert "Checks failed mostly by top scorers" not in page and "nobody fails" not in page
    assert "4 scored submissions are too few for it to mean something (flags need at least 20)" in page


def test_point_biserial_is_the_correlation_of_passing_with_the_total() -> None:
    passed, totals = [True, True, False, True, False], [90.0, 70.0, 40.0, 60.0, 50.0]
    ones = [1.0 if p else 0.0 for p in passed]
    assert point_biserial(passed, totals) == pytest.approx(statistics.correlation(ones, totals))
    assert (
        point_biserial([True, True], [1.0, 2.0]) is None and point_biserial([True, False], [5.0, 5.0]) is None
    )


@pytest.mark.parametrize("low", [0.0, 40.0, 93.0, 100.0])
def test_histogram_bins_separate_94_from_full_marks(low: float) -> None:
    edges = histogram_bins([low, 94.0, 100.0])
    bar = lambda x: max(i for i, edge in enumerate(edges) if edge <= x)  # noqa: E731
    assert edges[0] <= low and edges[-1] > 100 and bar(94.0) != bar(100.0) and bar(99.9) != bar(100.0)
    assert len(edges) <= 23 and edges == sorted(edges)


def test_exercises_are_sorted_weakest_first_and_the_weakest_highlighted() -> None:
    exercises = [Exercise(i, f"e{i}", "p", (f"f{i}",), 10, "visible", "property") for i in (1, 2, 3, 4, 5)]
    rates = {1: 1.0, 2: 0.2, 3: 0.6, 4: 0.0, 5: 0.9}  # each exercise's score share, one submission each

    def outcome(file: str, shares: dict[int, float]) -> Outcome:
        items = [{"id": i, "score": 10 * shares[i]} for i in shares]
        document = {"score": sum(i["score"] for i in items), "tests": [{"name": "x", "extra_data": {}}],
                    "extra_data": {"points_possible": 50, "exercises": items}}  # fmt: skip
        return Outcome(Entry(file, Path(file)), "completed", "", document, 1.0)

    analysis = item_analysis([outcome("a.py", rates)], exercises)
    assert [s.exercise.id for s in analysis.exercises] == [4, 2, 3, 5, 1]  # by pass rate, then share
    assert analysis.weakest == (4, 2, 3)
    page = report_html(analysis, {}, "t")
    assert page.count("<tr class='weak'>") == 3 and page.index("<td>4 e4</td>") < page.index("<td>1 e1</td>")
    assert "1 submission, 1 scored" in page


def test_the_title_names_the_assignment_the_folder_and_the_date(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert batch_title("optimization_toolkit", Path("."), "2026-12-04") == (
        f"optimization_toolkit.py: {tmp_path.name}, graded 2026-12-04"
    )


def test_a_regrade_lists_whose_grade_changes_and_which_entries() -> None:
    exercises = [
        Exercise(i, t, "p", (t,), 5, "visible", "property") for i, t in ((8, "softmax"), (12, "adv"))
    ]
    old = {
        "a.py": {"file": "a.py", "8 softmax": "5", "12 adv": "2.5", "total_points_earned": "7.5"},
        "b.py": {"file": "b.py", "8 softmax": "5", "12 adv": "5", "total_points_earned": "10"},
        "gone.py": {"file": "gone.py", "8 softmax": "0", "12 adv": "0", "total_points_earned": "0"},
    }
    new = [
        {"file": "a.py", "8 softmax": "3.75", "12 adv": "2.5", "total_points_earned": "6.25"},
        {"file": "b.py", "8 softmax": "5", "12 adv": "5", "total_points_earned": "10"},
        {"file": "new.py", "8 softmax": "5", "12 adv": "0", "total_points_earned": "5"},
    ]
    changes = regrade_changes(old, new, exercises)
    assert [change_text(c) for c in changes] == [
        "a.py: 7.5 -> 6.25 (-1.25): 8 softmax 5 -> 3.75",
        "new.py: new, 5",
        "gone.py: gone (was 0)",
    ]
    assert changes[0].delta == -1.25 and changes[0].exercises == (("8 softmax", "5", "3.75"),)
    before = {
        "a.py": {
            "8 softmax: visible checks": "2",
            "8 softmax: hidden checks": "3",
            "12 adv: hidden checks": "2.5",
        }
    }
    after = {
        "a.py": {
            "8 softmax: visible checks": "2",
            "8 softmax: hidden checks": "1.75",
            "12 adv: hidden checks": "2.5",
        }
    }
    with_entries = regrade_changes(old, new, exercises, before, after)
    assert change_text(with_entries[0]) == "a.py: 7.5 -> 6.25 (-1.25): 8 softmax: hidden checks 3 -> 1.75"
    assert with_entries[1:] == changes[1:]  # no earlier results.json for the others: as before


def test_a_csv_cell_never_starts_a_formula() -> None:
    outcome = grader.batch.outcomes.Outcome(
        Entry("=cmd.py", Path("/x"), (Submitter("@SUM(A1)", "-1", "+2"),)), "completed", "", {"score": 0}, 1.0
    )
    row = grade_row(outcome, [])
    assert (row["file"], row["name"], row["email"], row["sid"]) == ("'=cmd.py", "'@SUM(A1)", "-1", "+2")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nowhere"], "nowhere: no such folder or zip"),
        (["{file}"], "not a folder of submissions or a Gradescope export zip"),
        (["{folder}", "-j", "0"], "argument -j/--jobs: 0 is out of range (give a whole number from 1"),
        (["{empty}"], "empty: no submissions in it"),
        (["{notes}"], "notes: no submissions in it (skipped, not submissions: grades.pdf, README.md)"),
        (["{folder}", "--timeout", "0"], "argument --timeout: 0 is out of range (give a number above 0"),
        (["{folder}", "--call-timeout", "nan"], "argument --call-timeout: nan is out of range"),
        (["{folder}", "--exercise", "99"], "no exercise 99 in the manifest"),
        (
            ["{folder}", "--compare", "{file}"],
            "one.py: not a grades.csv of this kit (no file, total_points_earned,",
        ),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, args: list[str], message: str) -> None:
    (tmp_path / "one.py").write_text("x = 1\n")
    (tmp_path / "empty").mkdir()
    (tmp_path / "notes").mkdir()
    for name in ("README.md", "grades.pdf"):
        (tmp_path / "notes" / name).write_text("x")
    places = {"file": tmp_path / "one.py", "folder": tmp_path, "empty": tmp_path / "empty"}
    filled = [a.format(notes=tmp_path / "notes", **places) for a in args]
    code, out, err = batch(*filled, "-o", str(tmp_path / "grades.csv"))
    assert code == 2 and out == ""
    assert err.startswith("grader: error: ") and message in err and err.count("\n") == 1
    assert not (tmp_path / "grades.csv").exists()


# -- similarity -----------------------------------------------------------------------------------------


def test_similarity_finds_a_copy_but_not_the_stub_everyone_starts_from(tmp_path: Path) -> None:
    pytest.importorskip("copydetect")
    source = tmp_path / "in"
    source.mkdir()
    (source / "ada.py").write_text(REFERENCE, encoding="utf-8")
    renamed = re.sub(r"\bprobs\b", "pp", REFERENCE)  # a copy with a variable renamed
    (source / "copy.py").write_text(renamed, encoding="utf-8")
    (source / "stub1.py").write_text(STUB, encoding="utf-8")
    (source / "stub2.py").write_text(STUB, encoding="utf-8")  # identical, but all of it is the stub
    (source / "notes.txt").write_text("not a submission\n", encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--root", str(KIT), "similarity", str(source), "-o", str(tmp_path / "similarity.html")])
    assert code == 0
    assert "4 submissions compared" in out.getvalue() and "ada.py & copy.py: 100%" in out.getvalue()
    assert "stub1.py & stub2.py" not in out.getvalue()
    page = (tmp_path / "similarity.html").read_text(encoding="utf-8")
    assert page.count("<h2 id='pair-") == 1 and "<mark>" in page and "never part of a grade" in page


def test_similarity_folds_what_a_pair_does_not_share_and_never_marks_the_stubs_text(tmp_path: Path) -> None:
    """Issue 34: similarity.html was 16,000 px for 3 pairs, the stub's docstrings marked as shared code."""
    pytest.importorskip("copydetect")
    import ast as syntax

    tree = syntax.parse(REFERENCE)
    copied = ("reinforce_grad", "group_advantages", "ppo_grad", "grpo_grad")
    taken = [
        syntax.get_source_segment(REFERENCE, node)
        for node in tree.body
        if isinstance(node, syntax.FunctionDef) and node.name in copied
    ]
    source = tmp_path / "in"
    source.mkdir()
    (source / "ada.py").write_text(REFERENCE, encoding="utf-8")
    (source / "few.py").write_text(STUB + "\n\n" + "\n\n".join(map(str, taken)) + "\n", encoding="utf-8")
    with contextlib.redirect_stdout(io.StringIO()):
        code = main(["--root", str(KIT), "similarity", str(source), "-o", str(tmp_path / "similarity.html")])
    assert code == 0
    page = (tmp_path / "similarity.html").read_text(encoding="utf-8")
    assert page.count("<h2 id='pair-") == 1
    marked = " ".join(re.findall(r"<mark>(.*?)</mark>", page, re.S))
    assert "reinforce_grad(policy, batch" in marked and "grpo_grad(" in marked
    assert "&#34;&#34;&#34;" not in marked and '"""' not in marked  # no docstring: the stub's text
    ada = page[page.index("<h3>ada.py</h3>") : page.index("<h3>few.py</h3>")]
    assert re.search(r"<details><summary>\d+ lines not shared</summary><pre>", ada)  # the rest, folded
    assert "def softmax(" in ada and "def softmax(" not in marked


def test_similarity_compares_a_copy_wrapped_under_if_try_or_a_class(tmp_path: Path) -> None:
    """Issue 33: a copy with every line indented under `if True:` was "not compared (no exercise code
    read)" and never listed. Now exercise functions are read at any depth, dedented; and a copy whose
    functions are renamed and bound back to the exercise's names (found attacking this) is read too."""
    pytest.importorskip("copydetect")
    source = tmp_path / "in"
    source.mkdir()
    (source / "ada.py").write_text(REFERENCE, encoding="utf-8")
    future = "from __future__ import annotations\n"  # which must stay at the top
    lines = REFERENCE.replace(future, "").splitlines(True)
    indented = future + "".join("    " + line if line.strip() else line for line in lines)
    (source / "wrapped_if.py").write_text(indented.replace(future, future + "if True:\n"))
    (source / "wrapped_try.py").write_text(
        indented.replace(future, future + "try:\n") + "except Exception:\n    pass\n"
    )
    functions = kit_manifest(KIT).functions
    aliased = re.sub(rf"^def ({'|'.join(functions)})\(", r"def _mine_\1(", REFERENCE, flags=re.M)
    aliased += "".join(f"\n{name} = _mine_{name}\n" for name in functions)  # bound back at the end
    (source / "wrapped_alias.py").write_text(aliased, encoding="utf-8")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--root", str(KIT), "similarity", str(source), "-o", str(tmp_path / "similarity.html")])
    assert code == 0
    wrapped = ("wrapped_if.py: 100%", "wrapped_try.py: 100%", "wrapped_alias.py")
    for pair in (f"ada.py & {name}" for name in wrapped):
        assert pair in out.getvalue(), out.getvalue()
    assert "Not compared" not in (tmp_path / "similarity.html").read_text(encoding="utf-8")


def test_exercise_code_is_only_the_exercise_functions() -> None:
    code = exercise_code(
        "import os\n\n@dec\ndef softmax(x):\n    return x\n\n\ndef given():\n    pass\n", ["softmax"]
    )
    assert code == "@dec\ndef softmax(x):\n    return x\n"
    assert exercise_code("def softmax(:\n", ["softmax"]) == ""
    nested = "class Lab:\n    @staticmethod\n    def softmax(x):\n        def softmax(y):\n"
    assert exercise_code(nested + "            return y\n        return x\n", ["softmax"]) == (
        "@staticmethod\ndef softmax(x):\n    def softmax(y):\n        return y\n    return x\n"
    )  # the outer definition, once, with what it holds


# -- a neighbour's full disk: a crash of the grading, graded again, never a completed zero ------------

# A stand-in for `python -m grader` (run in the kit, as a child is) whose gradings of submissions named
# neighbour-* keep their scratch files (the test run's report among them) on a full disk, as a submission
# that filled a shared disk leaves it for its neighbours: neighbour-full* always, neighbour-once* only the
# first time (the disk freed meanwhile). The test run itself, and its workers, are untouched.
FULL_DISK_GRADER = """\
import os, sys, tempfile
from pathlib import Path
sys.path.insert(0, os.getcwd())
name = os.path.basename(sys.argv[sys.argv.index("grade") + 1])
tried = Path(os.environ["OPTLAB_TEST_TRIED"]) / name
if name.startswith("neighbour-full") or (name.startswith("neighbour-once") and not tried.exists()):
    tempfile.tempdir = os.environ["OPTLAB_TEST_FULL_DISK"]
tried.touch()
from grader.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_neighbours_full_disk_is_a_crash_graded_again_never_a_completed_zero(
    tmp_path: Path, full_disk: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    for name in ("ada.py", "neighbour-full.py", "neighbour-once.py"):  # the reference, three times
        (source / name).write_text(REFERENCE, encoding="utf-8")
    wrapper = tmp_path / "full_disk_grader.py"
    wrapper.write_text(FULL_DISK_GRADER, encoding="utf-8")
    (tmp_path / "tried").mkdir()
    monkeypatch.setattr(grader.batch.children, "GRADER", (sys.executable, str(wrapper)))
    monkeypatch.setenv("OPTLAB_TEST_FULL_DISK", str(full_disk))
    monkeypatch.setenv("OPTLAB_TEST_TRIED", str(tmp_path / "tried"))
    grades = tmp_path / "grades.csv"
    code, out, err = batch(str(source), "-o", str(grades), "-j", "2", "--exercise", "8")
    assert code == 0, err
    graded = rows_of(grades)
    full, once = graded["neighbour-full.py"], graded["neighbour-once.py"]
    print(f"neighbour on a full disk: {full['grading_status']!r}, points {full['total_points_earned']!r}")
    # every check passed, and the report could not be written: no score at all, and the TA told why
    assert full["grading_status"].startswith(
        "crashed: the grading failed: the test run's report (pytest-json-report's) was empty"
    ), full["grading_status"]
    assert full["grading_status"].endswith("(graded twice, crashed both times)")
    assert full["total_points_earned"] == full["8 softmax"] == full["percent_correct"] == ""
    # the disk freed before the second try: graded again, and scored as it deserves
    assert once["grading_status"] == "completed" and once["percent_correct"] == "1"
    assert graded["ada.py"]["percent_correct"] == "1"
    records = {name: json.loads((tmp_path / "grades-results" / name / "batch.json").read_text())
               for name in graded}  # fmt: skip
    assert (records["neighbour-full.py"]["status"], records["neighbour-full.py"]["attempts"]) == (
        "crashed",
        2,
    )
    assert (records["neighbour-once.py"]["status"], records["neighbour-once.py"]["attempts"]) == (
        "completed", 2,
    )  # fmt: skip
    assert "attempts" not in records["ada.py"]
    document = json.loads((tmp_path / "grades-results" / "neighbour-full.py" / "results.json").read_text())
    assert document["output"].startswith("**This submission could not be graded.**")
    assert "Grading crashed: the grading failed" in document["output"]
    assert "3 submissions: 2 scored, 1 not scored (1 crashed)" in out
    assert "neighbour-full.py: crashed: the grading failed" in out
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "3 submissions, 2 scored, 1 not scored." in page  # no zero in the class's statistics

    # the next run grades the crashed one again, and keeps the others
    code, out, _ = batch(str(source), "-o", str(grades), "-j", "2", "--exercise", "8")
    assert code == 0 and "1 graded now, 2 kept from an earlier run" in out


def rows_of(grades: Path) -> dict[str, dict[str, str]]:
    """grades.csv's rows by file, whatever its exercise columns."""
    with open(grades, newline="", encoding="utf-8") as handle:
        return {row["file"]: row for row in csv.DictReader(handle)}


def test_results_that_cannot_be_written_make_a_crash_with_the_reason_not_a_lost_row(full_disk: Path) -> None:
    entry = Entry("ada.py", full_disk / "ada.py")
    options = grader.batch.outcomes.BatchOptions(full_disk / "results")
    completed = {"score": 3.0, "tests": [], "output": "", "extra_data": {"points_possible": 3.0}}
    outcome = grader.batch.folders.record_grading(
        entry,
        "key",
        full_disk / "ada.py-results",
        grader.batch.outcomes.Graded(completed, 0, False, 1.0),
        options,
    )
    assert outcome.status == "crashed" and "No space left on device" in outcome.reason, outcome.reason
    assert "could not be written" in outcome.grading_status
    assert not (full_disk / "ada.py-results" / "batch.json").exists()  # no record: graded again next run
    row = grade_row(outcome, [Exercise(8, "softmax", "p", ("softmax",), 3, "after_published", "property")])
    assert row["total_points_earned"] == "" and row["grading_status"].startswith("crashed: ")


def test_a_grader_that_could_not_write_its_output_is_a_crash_that_says_so(tmp_path: Path) -> None:
    (tmp_path / "grade.log").write_bytes(b"")
    graded = grader.batch.outcomes.Graded(
        None, 120, False, 1.0
    )  # Python's exit when stdout cannot be flushed
    outcome = grader.batch.folders.record_grading(
        Entry("a.py", tmp_path / "a.py"), "k", tmp_path, graded, grader.batch.outcomes.BatchOptions(tmp_path)
    )
    assert outcome.status == "crashed" and "could not write its output (grade.log" in outcome.reason


# -- what a TA reads is clean: escapes from submissions, identity from the export alone ----------------

ESCAPES = "\x1b[2J\x1b[H\x1b]0;pwned\x07\x1b]52;c;cm0gLXJmIH4K\x07\rgrader: score 100\x9b31m\u202e\u2028"
EVIL_METADATA = f"""\
submission_101:
  :submitters:
  - :name: "Eve {ESCAPES[:20]}"
    :sid: '1815'
    :email: eve@example.edu
submission_102:
  :submitters:
  - :name: Ben Bit
    :sid: '200'
"""
OWN_METADATA = """\
:submitters:
- :name: Ada Lovelace
  :sid: '1815'
  :email: ada@example.edu
"""
# A stand-in for `python -m grader` whose grading of submission_103 prints raw escapes and dies: the
# reason the TA reads is the last line it printed.
RAW_CRASH_GRADER = f"""\
import os, sys
if any(arg.rstrip("/").endswith("submission_103") for arg in sys.argv[1:]):
    print("boom " + {ESCAPES[:20]!r}, flush=True)
    os.abort()
os.execv(sys.executable, [sys.executable, "-m", "grader", *sys.argv[1:]])
"""


def hostile_text(text: str) -> str:
    """`text` printing escapes at import, with escapes and a bidi override in a comment of softmax."""
    marked = text.replace("    m = max(xs)\n", "    m = max(xs)  # \u202e\x1b[31m\n", 1)
    return f"print({ESCAPES!r})\n{marked}"


def controls(text: str) -> list[str]:
    """The control, format and separator characters of `text`, newlines and tabs aside."""
    return [c for c in text if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp") and c not in "\n\t"]


def test_escapes_from_submissions_reach_no_terminal_and_no_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with zipfile.ZipFile(tmp_path / "export.zip", "w") as zipped:
        zipped.writestr("assignment_42_export/submission_metadata.yml", EVIL_METADATA)
        for n in (101, 102):
            zipped.writestr(
                f"assignment_42_export/submission_{n}/optimization_toolkit.py", hostile_text(REFERENCE)
            )
        zipped.writestr("assignment_42_export/submission_103/optimization_toolkit.py", REFERENCE)
        zipped.writestr("assignment_42_export/submission_103/submission_metadata.yml", OWN_METADATA)
    wrapper = tmp_path / "raw_crash_grader.py"
    wrapper.write_text(RAW_CRASH_GRADER, encoding="utf-8")
    monkeypatch.setattr(grader.batch.children, "GRADER", (sys.executable, str(wrapper)))
    grades = tmp_path / "out" / "grades.csv"
    code, out, err = batch(str(tmp_path / "export.zip"), "-o", str(grades), "-j", "2", "--exercise", "8")
    assert code == 0, err
    print(f"control characters that reached the terminal: {len(controls(out + err))}")
    assert controls(out + err) == [], (out + err)[-2000:]
    assert out.count("grader: note: control characters and escape sequences") == 1  # said once
    assert (
        "submission_103: crashed: the grader was killed by SIGABRT (boom \\x1b[2J\\x1b[H" in out
    )  # seen, escaped
    written = {
        name: (grades.parent / name).read_text(encoding="utf-8")
        for name in ("grades.csv", "report.html", "similarity.html")
    }
    folders = grades.parent / "grades-results"
    for folder in folders.iterdir():
        written[f"{folder.name}/results.json"] = (folder / "results.json").read_text(encoding="utf-8")
    written["submission_101/grade.log"] = (folders / "submission_101" / "grade.log").read_text(
        encoding="utf-8"
    )
    for name, text in written.items():
        assert controls(text) == [], name
    assert "\\u202e\\x1b[31m" in written["similarity.html"]  # the Trojan Source comment, shown
    assert "Note: control characters and escape sequences" in written["similarity.html"]
    assert "Note: control characters and escape sequences" in written["report.html"]
    graded = rows_of(grades)
    assert graded["submission_101"]["name"] == "Eve \\x1b[2J\\x1b[H\\x1b]0;pwned\\x07\\x1b]5"
    # identity only from the export's own metadata: submission_103's own file names nobody
    assert (graded["submission_103"]["name"], graded["submission_103"]["sid"]) == ("", "")


def test_a_students_own_metadata_file_never_names_a_row(tmp_path: Path) -> None:
    plain = tmp_path / "plain"  # a TA's folder of submissions: no metadata at its root
    for student in ("mallory", "zoe"):
        (plain / student).mkdir(parents=True)
        (plain / student / "optimization_toolkit.py").write_text("x = 1\n")
    (plain / "mallory" / "submission_metadata.yml").write_text(OWN_METADATA)  # claims to be Ada
    roster = scan_source(plain, tmp_path / "unused")
    assert [(e.file, e.submitters) for e in roster.entries] == [("mallory", ()), ("zoe", ())]

    alone = tmp_path / "alone"  # one student's folder alone, holding a metadata file: not an export
    (alone / "mallory").mkdir(parents=True)
    (alone / "mallory" / "optimization_toolkit.py").write_text("x = 1\n")
    claim = "optimization_toolkit.py:\n  :submitters:\n  - :name: Ada Lovelace\n    :sid: '1815'\n"
    (alone / "mallory" / "submission_metadata.yml").write_text(claim)  # as if it were an export's root
    assert [(e.file, e.submitters) for e in scan_source(alone, tmp_path / "unused").entries] == [
        ("mallory", ())
    ]

    with zipfile.ZipFile(tmp_path / "export.zip", "w") as zipped:  # an export: its root metadata alone
        zipped.writestr("assignment_42_export/submission_metadata.yml", METADATA)
        zipped.writestr("assignment_42_export/submission_101/optimization_toolkit.py", "x = 1\n")
        zipped.writestr("assignment_42_export/submission_103/optimization_toolkit.py", "x = 1\n")
        zipped.writestr("assignment_42_export/submission_103/submission_metadata.yml", OWN_METADATA)
    entries = {e.file: e.submitters for e in read_source(tmp_path / "export.zip", tmp_path / "scratch")}
    assert entries["submission_101"] == (Submitter("Ada Lovelace", "ada@example.edu", "1815"),)
    assert entries["submission_103"] == ()
