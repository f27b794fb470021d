"""`grader grade`: one submission from start to results.json. Intake reads it; the suites run against it
(visible, then hidden in a fresh worker) in a child pytest whose `student` fixture calls the sandbox; every
test of the inventory is accounted for; the manifest's points are shared out over the promises the
inventory says the tests check (grader.scoring); the grader alone writes results.json. A submission that
cannot be graded at all still gets a results.json that says why. A grading that fails (the test run's
report lost: a full disk, pytest's own error) gets a results.json that says the grading failed and why,
never a score of what its tests would have been had they all failed; `grader grade` then exits with
GRADING_FAILED, and `grader batch` records it as crashed and grades it again.
"""

from __future__ import annotations

import hashlib
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from grader import __version__
from grader.errors import KitError
from grader.intake import IntakeError, Submission, printable, read_submission
from grader.inventory import account_for, load_inventory
from grader.isolation import machine_layers
from grader.layout import MANIFEST, REFERENCE, SUITES
from grader.manifest import Manifest, load_manifest
from grader.promises import inventory_promises
from grader.reference import read_reference
from grader.results import results_document, unscored_document, write_results
from grader.scoring import SuiteScore, score_suites
from grader.suites import GradingCrashed, SuiteRunError, TestRecord, run_suites

RUN_SECONDS = 900.0  # the whole test run; Gradescope's default limit is 10 minutes, its maximum 40
SUBMISSION_SECONDS = RUN_SECONDS + 60.0  # grader batch, per submission: past grade's own bound
GRADING_FAILED = 3  # grader grade's exit code when the grading failed (its results.json says why)


@dataclass(frozen=True)
class Graded:
    """The outcome of grading one submission."""

    document: dict  # results.json
    scores: tuple[SuiteScore, ...]
    printed: str  # what the submission printed (for the instructor's log, never for results.json)
    failed: str = ""  # why the grading failed, for the instructor's log ("": it did not)


def grade(
    root: Path,
    submission: Path,
    out: Path,
    call_timeout: float | None = None,
    exercises: Sequence[int] | None = None,
    run_seconds: float = RUN_SECONDS,
) -> Graded:
    """Grade `submission` with the kit at `root` and write results.json to `out`; with `exercises`,
    only those (their tests alone run, and the score is out of their points). The test run is cut at
    `run_seconds`: checks it did not reach count as failed. A grading that fails writes results.json
    saying so (`failed_document`) and returns it with `failed` set; OSError if results.json cannot be
    written at all."""
    started = time.monotonic()
    manifest = kit_manifest(root)
    inventory = load_inventory(root)
    if exercises:
        manifest, inventory = only_exercises(manifest, inventory, exercises)
    try:
        intake = read_submission(submission)
    except IntakeError as error:
        why = {"ungraded_kind": error.kind, "ungraded_files": list(error.files)} if error.kind else None
        document = unscored_document(str(error), execution_time=time.monotonic() - started, extra=why)
        write_results(document, out)
        return Graded(document, (), "")
    except KitError as crash:  # intake's compiling process could not be started: the machine's fault
        return _failed(crash, out, time.monotonic() - started)
    try:
        run = _run(root, submission, inventory, exercises, call_timeout, run_seconds)
    except (GradingCrashed, OSError) as crash:
        return _failed(crash, out, time.monotonic() - started)
    records, reason, notes, printed = run
    notes = [*intake.notes, *notes]
    records = account_for(inventory, records, reason)
    scores = tuple(score_suites(manifest, records, promises=inventory_promises(inventory)))
    extra = {
        "kit_version": __version__,
        "submission": {"found_as": printable(intake.found_as, lines=False), "sha256": _digest(intake)},
        "isolation": machine_layers().as_data(),  # which layers confined the worker
        "notes": notes,  # what the summary says besides the scores (a re-scoring renders it again)
    }
    document = results_document(scores, notes, time.monotonic() - started, extra)
    write_results(document, out)
    return Graded(document, scores, printed)


def _run(
    root: Path,
    submission: Path,
    inventory: dict,
    exercises: Sequence[int] | None,
    call_timeout: float | None,
    run_seconds: float,
) -> tuple[list[TestRecord], str, list[str], str]:
    """The suites run against `submission`: the records, why a check not reported did not run, notes
    for the student, and what the submission printed. GradingCrashed (or OSError: a scratch file not
    written) where the run left nothing to score."""
    with tempfile.TemporaryDirectory(prefix="optlab-grade-") as scratch:
        log = Path(scratch) / "printed.txt"
        args = [f"--worker-log={log}"] + ([f"--call-timeout={call_timeout}"] if call_timeout else [])
        notes = []
        paths = suite_files_in_order(inventory) if exercises else None
        try:
            records = run_suites(root, submission, paths, pytest_args=args, timeout=run_seconds)
            reason = "this check did not run: the test run ended before it"
        except GradingCrashed:
            raise
        except SuiteRunError as error:  # what ran before the run was cut still counts
            records, reason = error.records, f"this check did not run: {error}"
            notes.append(f"Grading stopped early: {error}.")
        printed = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
    return records, reason, notes, printed


def _failed(crash: Exception, out: Path, seconds: float) -> Graded:
    """A failed grading: results.json says so (OSError if even that cannot be written)."""
    if isinstance(crash, OSError):
        reason = f"the grader could not set up or read back the test run ({crash.strerror or crash})"
        failed = f"{reason}: {crash.filename}" if crash.filename else reason
    else:
        reason = str(crash)
        detail = getattr(crash, "detail", "")
        failed = f"{reason} (pytest said: {detail})" if detail else reason
    document = failed_document(reason, seconds)
    write_results(document, out)
    return Graded(document, (), "", failed=failed)


def failed_document(reason: str, execution_time: float = 0.0) -> dict:
    """results.json for a grading that failed: why, as text and as data (`grading_failed`), and that it is
    no score. `reason` is the grader's own words, never what a test printed (it may quote hidden checks)."""
    message = (
        f"The grading failed, not your submission: {reason}. The score here is not yours: "
        "your instructors will grade it again (on Gradescope: rerun the autograder, or submit again)."
    )
    extra = {"grading_failed": reason, "kit_version": __version__}
    return unscored_document(message, execution_time=execution_time, extra=extra)


def only_exercises(manifest: Manifest, inventory: dict, ids: Sequence[int]) -> tuple[Manifest, dict]:
    """The manifest and inventory cut down to the exercises `ids`; an unknown id is a KitError."""
    known = {e.id for e in manifest.exercises}
    if unknown := sorted(set(ids) - known):
        raise KitError(f"no exercise {unknown[0]} in the manifest (exercises are 1 to {max(known)})")
    kept = tuple(e for e in manifest.exercises if e.id in ids)
    tests = [t for t in inventory["tests"] if t["exercise"] in ids]
    return replace(manifest, exercises=kept), dict(inventory, tests=tests)


def suite_files_in_order(inventory: dict) -> list[str]:
    """The test files of the inventory's tests: visible ones first, then hidden (a fresh worker)."""
    files = {(SUITES.index(t["suite"]), t["nodeid"].split("::")[0]) for t in inventory["tests"]}
    return [path for _, path in sorted(files)]


def kit_manifest(root: Path) -> Manifest:
    """The kit's manifest, checked against its reference."""
    return load_manifest(
        root / MANIFEST, read_reference(root / REFERENCE, REFERENCE.as_posix()), MANIFEST.as_posix()
    )


def _digest(intake: Submission) -> str:
    return hashlib.sha256(intake.source.encode("utf-8")).hexdigest()
