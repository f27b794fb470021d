"""Otter's way in: a plugin that hands a submission's grading to the kit's grader.

Otter would run a submission in an IPython kernel (as root on Gradescope) beside its own tests, after
loading any log file it finds with dill. This plugin stops all of it and grades as `grader grade` does:
- `before_grading` removes the copy of the kit that Otter put beside the submission (its support files
  go there), takes the submission out of Otter's sight (grader.grading.otter_submission: only the module is
  kept, where only root reads it; Otter's folder is left empty of submitted files, so there is no log
  to load), and stops Otter from starting its kernel at all: for this grading, the function Otter's
  Python runner calls to execute the notebook is one that only runs the plugins' `after_grading`;
- `before_execution` swaps the submission's code for a comment, should a kernel ever run;
- `after_grading` runs `grader grade` on the kept module in a child process, with the kit that `grader
  package` put in the autograder zip (`source/files/optlab`), and puts its results into Otter's: one
  test file per exercise, one test case per suite, the exercise's score as `grader grade` gave it (what
  `otter grade`'s CSV is made of), and `grader grade`'s results.json itself as the page Otter writes:
  Otter's own page (a "Public Tests" entry, one entry per exercise, one visibility for all) would differ
  from the one the instructor previews with `grader grade`. So students on Gradescope see exactly
  `grader grade`'s results.json: its entries, scores, visibility, messages and top-level output.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import nbformat
from otter.plugins import AbstractOtterPlugin
from otter.test_files import GradingResults, TestCase, TestCaseResult
from otter.test_files.ottr_test import OttrTestFile  # a test file Otter only reports, never runs

from grader.assignment.manifest import Exercise
from grader.grading.grade import kit_manifest
from grader.grading.otter_submission import take_submission
from grader.grading.results import unscored_document
from grader.layout import MANIFEST, ZIP_KIT
from grader.sandbox.isolation import remove_tree

OTTER_RUNNER = "otter.run.run_autograder.runners.python_runner"  # calls grade_notebook after before_grading
GRADE_SECONDS = 480.0  # the suites' own bound; within Gradescope's default 10 minutes with Otter's start
PLACEHOLDER = "# optlab-kit: this submission is graded in the kit's sandbox, not in this kernel\n"


class KitGrading(AbstractOtterPlugin):
    """Grade with the kit's sandbox and suites instead of Otter's kernel."""

    autograder_dir: Path | None = None
    graded: Path | None = None  # what grader grade grades: the kept module (grader.grading.otter_submission)

    def before_grading(self, config) -> None:
        self.autograder_dir = Path(config.autograder_dir).resolve()
        copy = self.autograder_dir / "submission" / Path(ZIP_KIT).name  # Otter copies files/* there
        if copy.is_dir() and not copy.is_symlink() and (copy / MANIFEST).is_file():
            remove_tree(copy)
        self.graded = take_submission(self.autograder_dir)
        skip_otters_kernel()

    def before_execution(self, submission):
        return nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(PLACEHOLDER)])

    def after_grading(self, results: GradingResults) -> None:
        kit = self.kit()
        document = run_grader(kit, self.graded or Path(self.submission_path))
        fill_results(results, document, kit_manifest(kit).exercises)
        show_kit_page(results, document)

    def kit(self) -> Path:
        """The kit in the autograder zip; else (the plugin run outside a zip) the installed kit."""
        if self.autograder_dir is not None:
            shipped = self.autograder_dir / "source" / ZIP_KIT
            if (shipped / MANIFEST).is_file():
                return shipped
        return Path(__file__).resolve().parents[1]


def skip_otters_kernel() -> None:
    """Make Otter's Python runner, for its next grading, run the plugins' `after_grading` on empty
    results instead of executing the submission's notebook in a kernel: no process of Otter's starts
    with the submission's folder as its working directory or on its import path, and no results are
    unpickled from one. Otter's own function is put back at that call."""
    runner: Any = importlib.import_module(OTTER_RUNNER)
    otters = runner.grade_notebook

    def grade_without_kernel(submission_path: str, *, plugin_collection=None, **_options) -> GradingResults:
        runner.grade_notebook = otters
        results = GradingResults([])
        if plugin_collection is not None:
            plugin_collection.run("after_grading", results)
        return results

    runner.grade_notebook = grade_without_kernel


def run_grader(kit: Path, submission: Path) -> dict:
    """`grader grade` of `submission` with the kit at `kit`, in a child process: its results.json.

    A grader that fails or overruns gives an unscored document (no tests, score 0) that says so.
    """
    env = {**os.environ, "PYTHONPATH": str(kit)}  # the zip's grader code, not whatever is installed
    with tempfile.TemporaryDirectory(prefix="optlab-otter-") as scratch:
        out = Path(scratch) / "results.json"
        command = [sys.executable, "-m", "grader", "--root", str(kit), "grade", str(submission)]
        command += ["-o", str(out), "--run-timeout", str(GRADE_SECONDS)]
        try:
            run = subprocess.run(
                command, cwd=kit, env=env, capture_output=True, text=True, timeout=GRADE_SECONDS + 60
            )
        except subprocess.TimeoutExpired:
            return unscored_document(f"The kit's grader did not finish within {GRADE_SECONDS + 60:.0f} s.")
        except OSError as error:
            return unscored_document(f"The kit's grader could not be started: {error}")
        if out.is_file():
            return json.loads(out.read_text(encoding="utf-8"))
        why = (run.stderr or run.stdout).strip()[-2000:]
        return unscored_document(f"The kit's grader failed (exit {run.returncode}): {why}")


def show_kit_page(results: GradingResults, document: dict) -> None:
    """Make `document` (grader grade's results.json) the page Otter writes for `results`.

    Otter writes results.json from `results.to_gradescope_dict(config)` right after the plugins have
    run, in this process. The document is kept on the results as plain data (it is pickled into
    results.pkl, which `otter grade` reads back where the kit is not installed), and Otter's method is
    wrapped, once per process, to return it where a results object carries one.
    """
    results.kit_document = document
    if not getattr(GradingResults.to_gradescope_dict, "kit_page", False):
        otters_page = GradingResults.to_gradescope_dict

        def kit_page(self: GradingResults, ag_config) -> dict:
            document = getattr(self, "kit_document", None)
            return copy.deepcopy(document) if document is not None else otters_page(self, ag_config)

        kit_page.kit_page = True  # type: ignore[attr-defined]  # a marker on the function, read back above
        GradingResults.to_gradescope_dict = kit_page


def fill_results(results: GradingResults, document: dict, exercises: tuple[Exercise, ...]) -> None:
    """Replace Otter's results with the kit's: per exercise, its suites' entries and its score."""
    results.clear_results()
    results.set_output(document.get("output", ""))
    tests = document.get("tests", [])
    # an exercise's score as the total counts it (the gate on visible points included: grader.grading.results)
    counted = {e.get("id"): e.get("score") for e in document.get("extra_data", {}).get("exercises", [])}
    for exercise in exercises:
        entries = [t for t in tests if t.get("extra_data", {}).get("exercise") == exercise.id]
        why = document.get("extra_data", {}).get("ungraded") or document.get("output", "")
        test_file = _test_file(exercise, entries, why, counted.get(exercise.id))
        results.results[test_file.name] = test_file


def _test_file(
    exercise: Exercise, entries: list[dict], why_ungraded: str, counted: float | None = None
) -> OttrTestFile:
    cases, outcomes = [], []
    for entry in entries:
        suite = entry["extra_data"]["suite"]
        case = TestCase(f"{suite} checks", None, suite == "hidden", entry["max_score"], None, None)
        cases.append(case)
        outcomes.append(TestCaseResult(case, entry["output"], entry["status"] == "passed"))
    if not entries:  # not graded at all: the exercise's points, lost for the reason given
        case = TestCase("checks", None, False, exercise.points, None, None)
        cases, outcomes = [case], [TestCaseResult(case, why_ungraded, False)]
    test_file = OttrTestFile(exercise.label, exercise.label, cases, all_or_nothing=False)
    test_file.test_case_results = outcomes
    score = counted if counted is not None else sum(entry["score"] for entry in entries)
    test_file.update_score(round(score, 2))
    return test_file
