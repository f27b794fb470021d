"""`grader batch` as a TA regrades with it (issue 26 items 4 and 8): an interrupted regrade loses no grade
and lists no row it did not reach as a change; every grades.csv and results.json it replaces is kept;
`--dry-run` writes nothing; a change of points alone re-scores the kept results.json without running a
submission; a group gets one row per member; results.json is 0644 and a grading as root leaves the
checkout's modes as they were; the batch takes its engine as a parameter. Exercises 8 and 12 only.
"""

from __future__ import annotations

import ast
import contextlib
import csv
import io
import json
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import grader.batch.children
import grader.batch.folders
import grader.batch.outcomes
import grader.batch.run
from grader.assignment.manifest import Exercise
from grader.batch.grades import change_text, grade_rows, regrade_changes
from grader.batch.keys import run_identity
from grader.batch.outcomes import Outcome
from grader.batch.report import item_analysis, report_html
from grader.batch.roster import Entry, Submitter
from grader.batch.similarity import Pair, write_similarity
from grader.batch.student_page import student_page_html
from grader.cli import main
from grader.sandbox import isolation
from tests.kit.conftest import KIT, entry_points
from tests.kit.gradescope_schema import problems

REFERENCE = (KIT / "solutions" / "optimization_toolkit.py").read_text(encoding="utf-8")
STUB = (KIT / "student" / "optimization_toolkit.py").read_text(encoding="utf-8")
SELECTION = ["--exercise", "8", "--exercise", "12"]
# A stand-in for `python -m grader` that runs nothing: where a batch must not grade, a child is a crash
NO_GRADING = "import sys\nprint('a submission was run', flush=True)\nsys.exit(1)\n"


def batch(root: Path, *args: str) -> tuple[int, str, str]:
    """Run `grader batch` with the kit at `root` in this process: (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["--root", str(root), "batch", *args])
    return code, out.getvalue(), err.getvalue()


def rows(grades: Path) -> list[dict[str, str]]:
    with open(grades, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def by_file(grades: Path) -> dict[str, dict[str, str]]:
    return {row["file"]: row for row in rows(grades)}


def snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    """Every file under `folder`: its bytes, mode and time written."""
    return {
        str(p.relative_to(folder)): (p.read_bytes(), p.stat().st_mode, p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def kit_copy(tmp_path: Path) -> Path:
    """A copy of this kit's tree (manifest, reference, stubs, suites), whose manifest a test may change."""
    copy = tmp_path / "kit"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "kit")  # tests/kit: not a suite
    for part in ("grader", "solutions", "student", "tests"):
        shutil.copytree(KIT / part, copy / part, ignore=ignore)
    shutil.copy2(KIT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def set_points(root: Path, exercise: int, points: str) -> None:
    manifest = root / "grader" / "exercises.toml"
    text = manifest.read_text(encoding="utf-8")
    start = text.index(f"\nid = {exercise}\n")
    changed = text[:start] + re.sub(r"\npoints = [0-9.]+\n", f"\npoints = {points}\n", text[start:], count=1)
    manifest.write_text(changed, encoding="utf-8")


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    previous = os.umask(mask)
    try:
        yield
    finally:
        os.umask(previous)


# -- an interrupted regrade, resumed --------------------------------------------------------------------


def stopping_after(first: int) -> Callable:
    """An engine that grades the first `first` entries here, then is stopped as Ctrl-C stops a batch."""
    grade_here = grader.batch.children.grade_here

    def engine(root, todo, options, done) -> None:
        grade_here(root, todo[:first], options, done)
        raise KeyboardInterrupt("SIGINT")

    return engine


def test_an_interrupted_regrade_loses_no_grade_and_lists_no_row_it_did_not_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "ada.py").write_text(REFERENCE, encoding="utf-8")
    (source / "bob.py").write_text(REFERENCE.replace("def softmax(", "def softmax_(", 1), encoding="utf-8")
    grades = tmp_path / "grades.csv"
    args = [str(source), "-o", str(grades), "-j", "2", *SELECTION]
    code, _, err = batch(KIT, *args)
    assert code == 0, err
    complete = rows(grades)
    assert [r["total_points_earned"] for r in complete] == ["7", "4"]

    monkeypatch.setattr(grader.batch.run, "grade_here", stopping_after(1))  # Ctrl-C once ada is regraded
    code, out, err = batch(KIT, *args, "--force")
    assert code == 130 and "interrupted after 1 of 2 gradings" in err
    assert "4 -> -" not in out and "grade change" not in out.replace("no grade change", "")
    assert f"no grade change against {grades}" in out
    assert "bob.py: not graded yet (its grade was 4; run grader batch again)" in out
    history = tmp_path / "grades-history"
    kept = sorted(history.glob("grades.*.csv"))
    assert len(kept) == 1 and rows(kept[0]) == complete  # the complete grades.csv, never rotated out
    assert by_file(grades)["bob.py"]["total_points_earned"] == ""  # no grade yet, not a zero
    ada = tmp_path / "grades-results" / "ada.py"
    assert len(list((ada / "history").glob("results.*.json"))) == 1  # the results.json the regrade replaced

    monkeypatch.undo()
    code, out, err = batch(KIT, *args)  # the resume: bob's grading is kept, compared with its last grade
    assert code == 0, err
    assert "- -> 4" not in out and f"no grade change against {grades}" in out
    assert rows(grades) == complete
    assert len(list(history.glob("grades.*.csv"))) == 2  # the incomplete one is kept too

    code, out, _ = batch(KIT, *args, "--force")  # each regrade keeps what it replaced: nothing is lost
    assert code == 0 and f"no grade change against {grades}" in out
    assert len(list((ada / "history").glob("results.*.json"))) == 2
    assert len(list(history.glob("grades.*.csv"))) == 2  # an unchanged grades.csv needs no backup


# -- a dry run, and a change of points alone ------------------------------------------------------------


def test_a_points_change_is_previewed_by_a_dry_run_then_rescored_without_running_code(
    kit_copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "ada.py").write_text(REFERENCE, encoding="utf-8")
    (source / "bob.py").write_text(REFERENCE.replace("def softmax(", "def softmax_(", 1), encoding="utf-8")
    (source / "cy.py").write_text(STUB, encoding="utf-8")
    (source / "two").mkdir()  # not gradable (two modules): ungraded, under any points
    (source / "two" / "lab.py").write_text(REFERENCE, encoding="utf-8")
    (source / "two" / "helpers.py").write_text("x = 1\n", encoding="utf-8")
    out_folder = tmp_path / "out"
    grades = out_folder / "grades.csv"
    args = [str(source), "-o", str(grades), "-j", "2", *SELECTION]
    with umask(0o022):
        code, _, err = batch(kit_copy, *args)
    assert code == 0, err
    results = out_folder / "grades-results" / "ada.py" / "results.json"
    assert stat.S_IMODE(results.stat().st_mode) == 0o644  # as grades.csv: a TA reads it
    assert stat.S_IMODE(grades.stat().st_mode) == 0o644
    before = snapshot(out_folder)

    set_points(kit_copy, 12, "8")  # twice the points of exercise 12: ada 11, bob 8, cy 0
    wrapper = tmp_path / "no_grading.py"
    wrapper.write_text(NO_GRADING, encoding="utf-8")
    monkeypatch.setattr(grader.batch.children, "GRADER", (sys.executable, str(wrapper)))  # nothing may run
    code, out, err = batch(kit_copy, *args, "--dry-run")
    assert code == 0, err
    assert f"2 grades would change against {grades}:" in out
    was, now = entry_points(12)[0], entry_points(12, 8)[0]
    assert f"  ada.py: 7 -> 11 (+4): 12 group advantages: visible checks {was} -> {now}" in out
    assert "  bob.py: 4 -> 8 (+4)" in out and "cy.py" not in out  # cy's 0 stays 0: not a change
    assert "a dry run: nothing written" in out
    assert snapshot(out_folder) == before

    code, out, err = batch(kit_copy, *args)
    assert code == 0, err
    assert "a submission was run" not in out + err and "crashed" not in out
    assert "0 graded now, 4 re-scored from their kept results.json (points alone changed), 0 kept" in out
    assert f"2 grades change against {grades}:" in out
    assert [r["total_points_earned"] for r in rows(grades)] == ["11", "8", "0", "0"]
    assert [r["total_points_possible"] for r in rows(grades)] == ["11"] * 4
    assert rows(grades)[3]["grading_status"].startswith("ungraded: two holds several .py files")
    document = json.loads(results.read_text(encoding="utf-8"))
    assert problems(results) == [] and document["score"] == 11
    entries = {t["name"]: t for t in document["tests"]}
    assert entries["12 group advantages: hidden checks"]["max_score"] == float(entry_points(12, 8)[1])
    assert all(c["passed"] for t in document["tests"] for c in t["extra_data"]["checks"])
    cy = json.loads((out_folder / "grades-results" / "cy.py" / "results.json").read_text(encoding="utf-8"))
    failed = [c for t in cy["tests"] for c in t["extra_data"]["checks"] if not c["passed"]]
    assert failed and {c["kind"] for c in failed} == {"not implemented"}  # the checks' data, as it was
    assert "NotImplementedError" in cy["tests"][0]["output"]  # and the failure text
    assert len(list((results.parent / "history").glob("results.*.json"))) == 1
    log = (results.parent / "grade.log").read_text(encoding="utf-8").splitlines()
    assert log[-1] == (  # the log ends on the score as it is now, not the grading's 7 (issue 34)
        "grader batch: scored again from its kept results.json (points changed, nothing ran): "
        f"score 11 / 11, in {results}"
    )

    code, out, _ = batch(kit_copy, *args)  # re-scored once: kept from then on
    assert code == 0 and "0 graded now, 4 kept from an earlier run" in out
    page = (out_folder / "report.html").read_text(encoding="utf-8")  # a row per student, linked
    hrefs = re.findall(r"href='([^']*results\.json)'", page)
    assert len(hrefs) == 4 and all((out_folder / href).is_file() for href in hrefs)
    assert "<td>ada.py</td><td></td><td>11 / 11</td>" in page


def test_only_points_leave_the_run_key_as_it_was(kit_copy: Path, tmp_path: Path) -> None:
    options = grader.batch.outcomes.BatchOptions(tmp_path / "results", exercises=(8,))
    first = run_identity(kit_copy, options)
    set_points(kit_copy, 8, "30")
    assert run_identity(kit_copy, options) == first  # the grading key changes, what runs does not
    manifest = kit_copy / "grader" / "exercises.toml"
    manifest.write_text(manifest.read_text().replace('title = "softmax"', 'title = "soft max"'))
    assert run_identity(kit_copy, options) != first
    (kit_copy / "solutions" / "optimization_toolkit.py").write_text(REFERENCE + "\n# changed\n")
    assert run_identity(kit_copy, options)["reference"] != first["reference"]


# -- groups -------------------------------------------------------------------------------------------


def test_a_group_submission_is_one_row_per_member_with_the_same_points() -> None:
    exercise = Exercise(8, "softmax", "p", ("softmax",), 3, "visible", "property")
    people = (Submitter("Ben Bit", "ben@example.edu", "200"), Submitter("Cy D'Arc", "", "201"))
    document = {
        "score": 2.5,
        "tests": [],
        "extra_data": {"points_possible": 3, "exercises": [{"id": 8, "score": 2.5}]},
    }
    outcome = Outcome(Entry("submission_102", Path("x"), people), "completed", "", document, 1.0)
    found = grade_rows(outcome, [exercise])
    assert [(r["name"], r["email"], r["sid"]) for r in found] == [
        ("Ben Bit", "ben@example.edu", "200"),
        ("Cy D'Arc", "", "201"),
    ]
    assert {(r["file"], r["8 softmax"], r["total_points_earned"]) for r in found} == {
        ("submission_102", "2.5", "2.5")
    }
    alone = Outcome(Entry("a.py", Path("a.py")), "completed", "", document, 1.0)
    assert [r["name"] for r in grade_rows(alone, [exercise])] == [""]  # no names known: one row
    old = {"submission_102": dict(found[0], total_points_earned="2", **{"8 softmax": "2"})}
    changes = regrade_changes(old, found, [exercise])  # one change per submission, not per member
    assert [change_text(c) for c in changes] == [
        "submission_102 (Ben Bit; Cy D'Arc): 2 -> 2.5 (+0.5): 8 softmax 2 -> 2.5"
    ]


def test_grade_examples_says_what_it_does_before_the_set_up(tmp_path: Path) -> None:
    """Issue 34: a first run was 102 s of silence (the set-up's output went to /dev/null)."""
    (tmp_path / "scripts").mkdir()
    shutil.copy2(KIT / "scripts" / "grade-examples.sh", tmp_path / "scripts")
    setup = tmp_path / "scripts" / "setup.sh"
    setup.write_text("#!/bin/sh\necho 'setup: installing'\nexit 7\n")  # stops the script here
    setup.chmod(0o755)
    done = subprocess.run(
        ["bash", str(tmp_path / "scripts" / "grade-examples.sh")], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 7
    assert done.stdout.splitlines() == [
        "grade-examples: setting up .venv (the first run installs the pinned packages: about 2 minutes)",
        "setup: installing",
    ]


def test_a_preview_counts_only_totals_that_change_as_numbers() -> None:
    """Issue 34: the preview listed `100 -> 100` rows among "9 grades change": points moved between
    exercises are listed apart, and "4" and "4.0" are the same points."""
    exercises = [
        Exercise(i, name, "p", (name,), 5, "visible", "property") for i, name in ((8, "a"), (9, "b"))
    ]
    row = {"file": "f.py", "name": "Ann", "8 a": "5", "9 b": "5", "total_points_earned": "10"}
    old = {"f.py": row, "g.py": {**row, "file": "g.py"}}
    new = [
        {**row, "8 a": "4", "9 b": "6"},
        {**row, "file": "g.py", "8 a": "5.0", "total_points_earned": "10.0"},
    ]
    changes = regrade_changes(old, new, exercises)
    assert [(c.kind, c.counts) for c in changes] == [("points moved", False)]  # g.py: no change at all
    assert change_text(changes[0]) == "f.py (Ann): 10, the same total: 8 a 5 -> 4; 9 b 5 -> 6"


# -- the checkout's modes -------------------------------------------------------------------------------


as_root = pytest.mark.skipif(os.geteuid() != 0, reason="protecting the kit is root's")


@as_root
def test_grading_as_root_leaves_the_checkout_as_readable_as_it_was(tmp_path: Path) -> None:
    kit = tmp_path / "kit"
    for entry in ("grader", "solutions", "tests"):
        (kit / entry).mkdir(parents=True)
    os.chmod(kit, 0o755)
    os.chmod(kit / "grader", 0o755)
    os.chmod(kit / "solutions", 0o750)  # an instructor's own choice: kept too
    package = tmp_path / "site" / "grader"
    package.mkdir(parents=True)
    os.chmod(package, 0o755)
    modes = {p: stat.S_IMODE(p.stat().st_mode) for p in (kit, kit / "grader", kit / "solutions", package)}
    first = isolation.protect_kit(kit, package)  # two gradings of one kit at once (a batch's children)
    second = isolation.protect_kit(kit, package)
    closed = {p: stat.S_IMODE(p.stat().st_mode) & 0o007 for p in modes}
    assert closed == {kit: 0o001, kit / "grader": 0, kit / "solutions": 0, package: 0}
    first()
    assert stat.S_IMODE((kit / "grader").stat().st_mode) & 0o007 == 0  # the other still grades
    second()
    assert {p: stat.S_IMODE(p.stat().st_mode) for p in modes} == modes


@as_root
def test_grade_as_root_leaves_the_kit_readable_by_a_later_user(kit_copy: Path, tmp_path: Path) -> None:
    for folder in (kit_copy, *kit_copy.iterdir()):
        os.chmod(folder, 0o755)
    package = Path(grader.batch.run.__file__).parents[1]
    package_mode = stat.S_IMODE(package.stat().st_mode)
    out = tmp_path / "results.json"
    submission = tmp_path / "ada.py"
    submission.write_text(REFERENCE, encoding="utf-8")
    with umask(0o022), contextlib.redirect_stdout(io.StringIO()):
        code = main(["--root", str(kit_copy), "grade", str(submission), "-o", str(out), "--exercise", "8"])
    assert code == 0 and json.loads(out.read_text())["score"] == 3
    assert stat.S_IMODE(out.stat().st_mode) == 0o644
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in (kit_copy, *kit_copy.iterdir()) if p.is_dir()
            and not p.name.startswith(".")} == {kit_copy.name: 0o755, "grader": 0o755, "solutions": 0o755,
                                                 "student": 0o755, "tests": 0o755}  # fmt: skip
    assert stat.S_IMODE(package.stat().st_mode) == package_mode


# -- the engine ----------------------------------------------------------------------------------------


def test_the_batch_takes_its_engine_as_a_parameter_and_imports_no_cluster(tmp_path: Path) -> None:
    tree = ast.parse(Path(grader.batch.run.__file__).read_text(encoding="utf-8"))
    imported = {node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}
    imported |= {a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names}
    assert "grader.batch.cluster" not in imported  # the dependency runs one way: the cluster uses the batch
    seen: list[list[str]] = []

    def engine(root, todo, options, done) -> None:  # a way of grading: here, a fake that records
        seen.append([entry.file for entry, _ in todo])
        for entry, key in todo:
            graded = grader.batch.outcomes.Graded(
                {"score": 1.0, "tests": [], "extra_data": {}}, 0, False, 0.1
            )
            folder = grader.batch.folders.submission_folder(options.results_dir, entry)
            done(grader.batch.folders.record_grading(entry, key, folder, graded, options))

    entries = [Entry("a.py", tmp_path / "a.py"), Entry("b.py", tmp_path / "b.py")]
    for entry in entries:
        entry.path.write_text("x = 1\n")
    outcomes = grader.batch.run.run_batch(
        KIT, entries, grader.batch.outcomes.BatchOptions(tmp_path / "r"), engine=engine
    )
    assert seen == [["a.py", "b.py"]] and [o.status for o in outcomes] == ["completed", "completed"]


# -- the report -----------------------------------------------------------------------------------------


def graded(file: str, score: float, failed: dict[str, str]) -> Outcome:
    """A completed outcome of exercise 8 (10 points): checks a, b, c, d, those in `failed` failed with
    the kind given."""
    checks = [
        {"check": name, "property": f"{name} holds", "passed": name not in failed}
        | ({"kind": failed[name]} if name in failed else {})
        for name in "abcd"
    ]
    test = {
        "name": "8 softmax: visible checks",
        "score": score,
        "extra_data": {"exercise": 8, "suite": "visible", "checks": checks},
    }
    extra = {"points_possible": 10, "exercises": [{"id": 8, "score": score}]}
    people = (Submitter(f"Student {file}", f"{file}@example.edu", file),)
    return Outcome(
        Entry(f"{file}.py", Path(f"{file}.py"), people),
        "completed",
        "",
        {"score": score, "tests": [test], "extra_data": extra},
        1.0,
    )


def a_class(size: int) -> list[Outcome]:
    """`size` submissions, the best first: the top three fail "c" (a wrong result); the top one alone
    fails "d"; the weakest half have not implemented "b"; nobody fails "a"."""
    outcomes = []
    for rank in range(size):
        failed = {"c": "wrong result"} if rank < 3 else {}
        if rank == 0:
            failed["d"] = "wrong result"
        if rank >= size // 2:
            failed["b"] = "not implemented"
        outcomes.append(graded(f"s{rank:02d}", 10.0 - 8.0 * rank / size, failed))
    return outcomes


def test_flags_need_a_class_and_failures_enough_to_mean_something() -> None:
    exercise = Exercise(8, "softmax", "p", ("softmax",), 10, "visible", "property")
    analysis = item_analysis(a_class(24), [exercise])
    flags = {c.check: c.flag for c in analysis.checks}
    assert flags == {
        "a": "nobody fails it",
        "b": "",
        "c": "failed mostly by top scorers",
        "d": "",
    }  # d: 1 failure
    page = report_html(analysis, {}, "t")
    assert "Checks failed mostly by top scorers" in page and "at least 3 submissions fail it" in page

    small = item_analysis(a_class(8), [exercise])  # the class of 8: nothing flagged, and why
    assert {c.flag for c in small.checks} == {""}
    page = report_html(small, {}, "t")
    assert "Checks failed mostly by top scorers" not in page
    assert "8 scored submissions are too few for it to mean something (flags need at least 20)" in page


def test_most_common_failures_rank_what_was_written_before_what_was_not() -> None:
    exercise = Exercise(8, "softmax", "p", ("softmax",), 10, "visible", "property")
    failures = item_analysis(a_class(24), [exercise]).exercises[0].failures
    assert failures == (
        ("c holds (wrong result)", 3),
        ("d holds (wrong result)", 1),
        ("b holds (not implemented)", 12),
    )


def test_the_report_has_a_row_per_student_with_a_link_to_each_results_json() -> None:
    exercise = Exercise(8, "softmax", "p", ("softmax",), 10, "visible", "property")
    outcomes = a_class(3)
    interrupted = Outcome(Entry("late.py", Path("late.py")), "interrupted", "not reached", {}, 0.0)
    analysis = item_analysis([*outcomes, interrupted], [exercise])
    links = {o.entry.file: f"grades-results/{o.entry.file}/results.json" for o in outcomes}
    page = report_html(analysis, {}, "t", links=links)
    table = page[page.index("<h2 id='students'>") :]
    head = "<th>file</th><th>name</th><th>total</th><th>grading status</th><th>results</th>"
    assert head + "<th title='8 softmax'>8</th>" in table  # the exercise's name in its tooltip and the key
    assert "Exercise columns: the points of 8 softmax." in table
    assert "<td>s01.py</td><td>Student s01</td><td>7.33 / 10</td><td>completed</td>" in table
    assert "<td class='n'>7.33</td></tr>" in table
    assert "<a href='grades-results/s01.py/page.html'>page</a>" in table
    assert "<a href='grades-results/s01.py/results.json'>results.json</a>" in table
    assert "<td>late.py</td><td></td><td>no grade yet</td><td>interrupted: not reached</td><td></td>" in table


def test_a_students_page_renders_markdown_but_no_html_link_or_image_a_submission_wrote() -> None:
    output = "**Visible checks: 1 / 2**\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    printed = "<script>alert(1)</script> ![x](http://example.com/x.png) [y](javascript:alert(1)) \x1b[2J"
    document = {
        "score": 1,
        "output": output + printed,
        "output_format": "md",
        "tests": [{"name": "<b>8</b>", "score": 1, "max_score": 2, "status": "failed", "output": printed}],
    }
    page = student_page_html(document, "a.py")
    assert "<strong>Visible checks: 1 / 2</strong>" in page and "<td>1</td>" in page
    assert "<script>alert" not in page and "<img" not in page and "<a " not in page
    assert "&lt;b&gt;8&lt;/b&gt;" in page and "\\x1b[2J" in page  # names escaped, escapes shown
    assert "1 / 2 <span class='seen'>(failed; seen at once)</span>" in page


def test_similarity_columns_share_the_width_whatever_the_longest_line(tmp_path: Path) -> None:
    long = "x = " + " + ".join(["value"] * 200)  # 1,600 characters on one line
    pair = Pair("a.py", "b.py", (0.9, 0.9), 100, (long, long))
    page = write_similarity(tmp_path / "similarity.html", [pair], [], "t").read_text(encoding="utf-8")
    style = page[page.index("<style>") : page.index("</style>")]
    tracks = re.search(r"\.pair \{[^}]*grid-template-columns: ([^;]+);", style)
    assert tracks is not None
    # a track of "1fr" grows to its longest line (the right column was cut at 1280 px); minmax(0, 1fr)
    # does not, and each column's code scrolls sideways within it
    assert tracks[1] == "minmax(0, 1fr) minmax(0, 1fr)"
    assert re.search(r"\.pair > div \{[^}]*min-width: 0", style)
    assert re.search(r"pre \{[^}]*overflow-x: auto", style)
