"""`grader grade`: one submission from start to results.json. Intake reads it; the suites run against it,
each in a child pytest of its own, at once (the hidden one's worker imports the module beside the visible
suite, and gets its first call once the visible run has ended: no hidden input is ever in a worker while
a visible check runs), whose `student` fixture calls the sandbox; every
test of the inventory is accounted for; the manifest's points are shared out over the promises the
inventory says the tests check (grader.assignment.scoring); the grader alone writes results.json. A submission
that cannot be graded at all still gets a results.json that says why. A grading that fails (the test run's
report lost: a full disk, pytest's own error) gets a results.json that says the grading failed and why,
never a score of what its tests would have been had they all failed; `grader grade` then exits with
GRADING_FAILED, and `grader batch` records it as crashed and grades it again.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from grader import __version__
from grader.assignment.inventory import account_for, load_inventory
from grader.assignment.manifest import Budget, Manifest, load_manifest
from grader.assignment.promises import inventory_promises
from grader.assignment.records import TestRecord
from grader.assignment.reference import read_reference
from grader.assignment.scoring import SuiteScore, score_suites
from grader.errors import KitError
from grader.grading.intake import IntakeError, Submission, read_submission
from grader.grading.results import results_document, unscored_document, write_results
from grader.grading.suites import GradingCrashed, SuiteRunError, run_suites
from grader.grading.untrusted import printable
from grader.layout import MANIFEST, REFERENCE, SUITES
from grader.sandbox.isolation import machine_layers

RUN_SECONDS = 900.0  # the most a manifest's [budget] wall_seconds may be: Gradescope's maximum is 40 minutes
SUBMISSION_SECONDS = RUN_SECONDS + 60.0  # grader batch, per submission: past grade's own bound
GRADING_FAILED = 3  # grader grade's exit code when the grading failed (its results.json says why)


@dataclass(frozen=True)
class Graded:
    """The outcome of grading one submission."""

    document: dict  # results.json
    scores: tuple[SuiteScore, ...]
    printed: str  # what the submission printed (for the instructor's log, never for results.json)
    failed: str = ""  # why the grading failed, for the instructor's log ("": it did not)
    cpu_seconds: float = 0.0  # what its workers cost (the reference's on their behalf too), all suites


def grade(
    root: Path,
    submission: Path,
    out: Path,
    call_timeout: float | None = None,
    exercises: Sequence[int] | None = None,
    run_seconds: float | None = None,
    budget: Budget | None = None,
) -> Graded:
    """Grade `submission` with the kit at `root` and write results.json to `out`; with `exercises`,
    only those (their tests alone run, and the score is out of their points). The test run is cut at
    `run_seconds` (default: the manifest's [budget] wall_seconds; `budget` replaces the manifest's):
    checks it did not reach count as failed. A grading that fails writes results.json
    saying so (`failed_document`) and returns it with `failed` set; OSError if results.json cannot be
    written at all."""
    started = time.monotonic()
    manifest = kit_manifest(root)
    budget = budget or manifest.budget
    run_seconds = run_seconds or min(budget.wall_seconds, RUN_SECONDS)
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
        run = run_checks(root, submission, inventory, exercises, call_timeout, run_seconds, budget)
    except (GradingCrashed, OSError) as crash:
        return _failed(crash, out, time.monotonic() - started)
    records, notes, printed = [], list(intake.notes), ""
    later: list[str] = []  # what the hidden run noted: for the instructors (its timing is the hidden suite's)
    for suite, ran in zip(SUITES, run, strict=True):
        in_suite = dict(inventory, tests=[t for t in inventory["tests"] if t["suite"] == suite])
        records += account_for(in_suite, ran.records, ran.reason)
        (notes if suite == SUITES[0] else later).extend(ran.notes)
        printed += ran.printed
    scores = tuple(score_suites(manifest, records, promises=inventory_promises(inventory)))
    extra = {
        "kit_version": __version__,
        "submission": {"found_as": printable(intake.found_as, lines=False), "sha256": _digest(intake)},
        "isolation": machine_layers().as_data(),  # which layers confined the worker
        "notes": notes,  # what the summary says besides the scores (a re-scoring renders it again)
        **({"hidden_notes": later} if later else {}),
    }
    document = results_document(scores, notes, shown_seconds(run, started), extra)
    write_results(document, out)
    return Graded(document, scores, printed, cpu_seconds=sum(ran.cpu_seconds for ran in run))


@dataclass(frozen=True)
class SuiteRun:
    """One suite's run: its records, why a check it did not report did not run, notes, what was printed."""

    records: list[TestRecord]
    reason: str
    notes: list[str]
    printed: str
    cpu_seconds: float = 0.0  # what its workers cost (--cost-out)
    ended: float | None = None  # time.monotonic() when its run ended


def run_checks(
    root: Path,
    submission: Path,
    inventory: dict,
    exercises: Sequence[int] | None,
    call_timeout: float | None,
    run_seconds: float,
    budget: Budget,
) -> list[SuiteRun]:
    """The suites run against `submission`, one SuiteRun each in SUITES order, each in a pytest of its
    own, all at once: a later suite's worker starts at once, and its first call waits until every earlier
    suite's run has ended (`--hold-calls-fd`), so that it costs no wall time beyond its own calls and no
    hidden input is in any worker while a visible check runs. GradingCrashed (or OSError: a scratch file
    not written) where a run left nothing to score."""
    args = [f"--call-timeout={call_timeout}"] if call_timeout else []
    args += [f"--suite-cpu-seconds={budget.suite_cpu_seconds(len(SUITES))}"]
    args += [f"--exercise-cpu-seconds={budget.exercise_cpu_seconds}"]
    deadline = time.monotonic() + run_seconds
    pipes = [os.pipe() for _ in SUITES[1:]]  # suite i + 1 waits on pipes[i][0], which run i closes
    with tempfile.TemporaryDirectory(prefix="optlab-grade-") as scratch:
        logs = [Path(scratch) / f"{suite}.txt" for suite in SUITES]
        with ThreadPoolExecutor(len(SUITES)) as pool:
            futures = []
            for index, suite in enumerate(SUITES):
                paths = _suite_files(inventory, suite) if exercises else [f"tests/{suite}"]
                hold = pipes[index - 1][0] if index else None
                release = pipes[index][1] if index < len(pipes) else None
                mine = [*args, f"--worker-log={logs[index]}", f"--cost-out={logs[index]}.cost"]
                mine += [f"--hold-calls-fd={hold}"] if hold is not None else []
                run = (root, submission, paths, mine, (deadline, run_seconds), hold, release)
                futures.append(pool.submit(_run_suite, *run))
            runs = [future.result() for future in futures]
        return [
            replace(run, printed=_read(log), cpu_seconds=_cost(log.with_suffix(".txt.cost")))
            for run, log in zip(runs, logs, strict=True)
        ]


def _run_suite(
    root: Path,
    submission: Path,
    paths: list[str],
    args: list[str],
    deadline: tuple[float, float],
    hold: int | None,
    release: int | None,
) -> SuiteRun:
    """One suite's run, within `deadline` (a monotonic time, and the grading's bound it ends, in seconds,
    as a cut run's note says it); `hold`: the descriptor its first call waits
    on (its pytest inherits it), `release`: the one the next suite waits on; both closed here once this
    run has ended, whatever way."""
    reason = "this check did not run: the test run ended before it"
    try:
        if not paths:  # none of the exercises graded has a check in this suite
            return SuiteRun([], reason, [], "")
        timeout = max(0.001, deadline[0] - time.monotonic())
        fds = (hold,) if hold is not None else ()
        records = run_suites(root, submission, paths, args, timeout, fds)
        return SuiteRun(records, reason, [], "", ended=time.monotonic())
    except GradingCrashed:
        raise
    except SuiteRunError as error:  # cut at the grading's bound: what ran before the cut still counts
        why = f"the suites did not finish within {deadline[1]:g} s"
        return SuiteRun(
            error.records, f"this check did not run: {why}", [f"Grading stopped early: {why}."], "",
            ended=time.monotonic(),
        )  # fmt: skip
    finally:
        for fd in (release, hold):
            if fd is not None:
                os.close(fd)


def shown_seconds(run: Sequence[SuiteRun], started: float) -> float:
    """The execution_time students see before publication: up to the end of the visible run, which the
    hidden one never delays (its calls wait for it), so that the field says nothing of the hidden suite
    (it said 30 s against 5 s for two submissions whose visible pages were equal)."""
    visible = run[0].ended if run else None
    return (visible if visible is not None else time.monotonic()) - started


def _cost(path: Path) -> float:
    """The CPU seconds a suite's workers cost, as its run wrote them (0.0 where it wrote none)."""
    try:
        return float(json.loads(path.read_text(encoding="utf-8"))["cpu_seconds"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _read(log: Path) -> str:
    return log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""


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
    return [path for suite in SUITES for path in _suite_files(inventory, suite)]


def _suite_files(inventory: dict, suite: str) -> list[str]:
    """The test files of the inventory's tests of `suite`."""
    return sorted({t["nodeid"].split("::")[0] for t in inventory["tests"] if t["suite"] == suite})


def kit_manifest(root: Path) -> Manifest:
    """The kit's manifest, checked against its reference."""
    return load_manifest(
        root / MANIFEST, read_reference(root / REFERENCE, REFERENCE.as_posix()), MANIFEST.as_posix()
    )


def _digest(intake: Submission) -> str:
    return hashlib.sha256(intake.source.encode("utf-8")).hexdigest()
