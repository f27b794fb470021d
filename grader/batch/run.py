"""`grader batch`: grade every submission of a roster in parallel, each by a `grader grade` child.

`grader batch`: grade every submission of a roster, in parallel, each by `grader grade` in a child
process of its own (its own sandbox: a crash or a hang costs that submission alone), resumably.

Each submission gets a folder in the results folder: `results.json` (as `grader grade` wrote it, or one
that says why grading failed), `grade.log` (what the child printed, capped) and `batch.json` (how it went,
and the grading key); a regrade keeps every results.json it replaces in the folder's `history/`, under
the time it was written (grader.batch.history: never rotated out), the newest one for the regrade preview. The
key is a hash of the submission's files, the kit's version, the inventory, manifest and reference, and
the options that change a grade (--exercise, --call-timeout): a run skips a submission whose folder holds
a completed grading under the same key, unless forced. A grading that timed out or crashed is tried
again on the next run.

A change of points alone (the manifest's scoring keys, grader.assignment.manifest.SCORING_KEYS: the suites,
the reference, the submission and everything else the same, which the run key says) runs nothing: the kept
results.json is scored again from the checks its entries carry (grader.batch.rescore). A dry run
(`BatchOptions.dry_run`) grades what must be graded in a scratch folder, re-scores in memory, and
leaves the results folder as it was.

A grading crashed when its child did not end with a results.json of a grading: killed, an error, or a
results.json that says the grading failed (the test run's report missing, empty or cut short: a full
disk; `grader grade` exits with GRADING_FAILED then). It is never a completed zero: the batch grades it
once more at the end of the run, and a second crash is reported as crashed, without points. A results
folder that cannot be written (results.json, batch.json) is a crash too, with the reason, and the row
is kept.

A child that runs past the wall-clock bound, and every child when the batch is interrupted (Ctrl-C, or
SIGTERM), is stopped: SIGINT to its pytest (which then closes the sandbox), then after a grace period
SIGKILL to its process group and to every process that was below it (a worker has a session of its own).

Where the children run is the batch's engine, a parameter of `run_batch`: this machine's pool
(`grade_here`), or a Dask cluster's workers with `--cluster` (grader.batch.cluster's `on_cluster`, which runs
one child per task with `grade_one` and hands back a `Graded`); deciding what to grade, and recording how each
grading went (`record_grading`), are the same for both. The dependency runs one way: grader.batch.cluster uses
this module, never the reverse.
"""

from __future__ import annotations

import contextlib
import dataclasses
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from grader.batch.children import grade_here
from grader.batch.folders import (
    Scoring,
    kept_outcome,
    note_record,
    rescore_kept,
    submission_folder,
)
from grader.batch.keys import grading_key, kit_identity, run_identity
from grader.batch.outcomes import (
    CRASHED,
    INTERRUPTED,
    KEPT,
    BatchInterrupted,
    BatchOptions,
    Engine,
    Outcome,
    Progress,
)
from grader.batch.roster import Entry

if TYPE_CHECKING:  # rich is imported only where a progress bar is drawn
    pass


def run_batch(
    root: Path,
    entries: Sequence[Entry],
    options: BatchOptions,
    progress: Progress | None = None,
    engine: Engine | None = None,
) -> list[Outcome]:
    """Grade `entries` with the kit at `root`, by `engine` (default: this machine's pool, `grade_here`);
    one outcome per entry, in their order. On
    KeyboardInterrupt every child is stopped, what finished is kept on disk, and BatchInterrupted (a
    KeyboardInterrupt) carries the outcomes so far."""
    kit, running = kit_identity(root, options), run_identity(root, options)
    kept: dict[str, Outcome] = {}
    todo: list[tuple[Entry, str]] = []
    run_keys: dict[str, str] = {}
    scoring = Scoring(root, options)
    for entry in entries:
        key, run_key = grading_key(entry, kit), grading_key(entry, running)
        run_keys[entry.file] = run_key
        folder = submission_folder(options.results_dir, entry)
        earlier = None if options.force else kept_outcome(entry, folder, key)
        if earlier is None and not options.force:
            earlier = rescore_kept(entry, folder, key, run_key, scoring, options)
        if earlier is not None:
            kept[entry.file] = earlier
        else:
            todo.append((entry, key))
    if progress is not None:
        progress.start(len(todo))
    graded: list[Outcome] = []
    keys = {entry.file: key for entry, key in todo}  # entries not yet graded again
    again: list[tuple[Entry, str]] = []  # crashed once: graded again once the rest is done

    def finished(outcome: Outcome) -> None:
        file = outcome.entry.file
        if outcome.status == CRASHED and file in keys:
            again.append((outcome.entry, keys.pop(file)))
            graded.append(outcome)  # kept as it is should the batch be stopped before the second try
            return
        if file not in keys:
            outcome = dataclasses.replace(outcome, attempts=2)
            if not options.dry_run:
                note_record(submission_folder(options.results_dir, outcome.entry), attempts=2)
        graded.append(outcome)
        if outcome.status in KEPT and not options.dry_run:  # points alone may change: re-scored from it
            note_record(submission_folder(options.results_dir, outcome.entry), run_key=run_keys[file])
        if progress is not None:
            progress.done(outcome)

    grade = engine if engine is not None else grade_here
    try:
        with _where_graded(options) as here:
            grade(root, todo, here, finished)
            if again:
                grade(root, list(again), here, finished)
    except KeyboardInterrupt as stop:
        done = {**kept, **{o.entry.file: o for o in graded}}
        reason = "the batch was interrupted before it was graded: run grader batch again"
        left = {e.file: Outcome(e, INTERRUPTED, reason, {}, 0.0) for e in entries if e.file not in done}
        raise BatchInterrupted([{**done, **left}[e.file] for e in entries], str(stop)) from None
    finally:
        if progress is not None:
            progress.stop()
    done = {**kept, **{o.entry.file: o for o in graded}}
    return [done[e.file] for e in entries]


@contextlib.contextmanager
def _where_graded(options: BatchOptions) -> Iterator[BatchOptions]:
    """The options the engine grades with: a dry run's gradings go to a scratch folder, removed after."""
    if not options.dry_run:
        yield options
        return
    with tempfile.TemporaryDirectory(prefix="optlab-dry-run-") as scratch:
        yield dataclasses.replace(options, results_dir=Path(scratch))


# -- the children -----------------------------------------------------------------------------------


# -- outcomes ---------------------------------------------------------------------------------------


# -- the progress bar -------------------------------------------------------------------------------
