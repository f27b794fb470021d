"""Each submission's folder in the results folder, written and read back.

results.json, batch.json (how the grading went, under its key), grade.log (capped) and history/ (the
results.json a regrade replaced); a grading's status and the reason told to the TA; a kept grading scored
again where only points changed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import signal
from pathlib import Path

from grader.assignment.inventory import load_inventory
from grader.assignment.scoring import points_text
from grader.batch.history import keep, newest
from grader.batch.outcomes import (
    BATCH_RECORD,
    COMPLETED,
    CRASHED,
    GRADE_LOG,
    HISTORY,
    KEPT,
    LOG_BYTES,
    RESULTS,
    TIMED_OUT,
    UNGRADED,
    BatchOptions,
    Graded,
    Outcome,
    Status,
)
from grader.batch.rescore import rescored
from grader.batch.roster import Entry
from grader.grading.grade import kit_manifest, only_exercises
from grader.grading.results import unscored_document, write_results
from grader.layout import MODULE_FILE

_TAGGED = re.compile(r"-[0-9a-f]{8}(?:[0-9a-f]{8})?$")  # how submission_folder tags a name it changed


FOLDER_NAME_CHARS = 100  # of a submission's name, in its folder's: with the tag, well within NAME_MAX


def submission_folder(results_dir: Path, entry: Entry) -> Path:
    """Where `entry`'s results.json, grade.log and batch.json go: its name, where that is a plain one
    (ASCII letters, digits and ._@+-), else its name made plain and cut, tagged with 16 hex digits of
    its hash; a plain name that ends as a tag does is tagged too, so that no two entries share a folder
    (issue 23: "a b.py" and a file named "a_b.py-5d4acf84" wrote the same folder, and the tag's 8
    digits could be found for any name by brute force)."""
    name = re.sub(r"[^A-Za-z0-9_.@+-]", "_", entry.file).lstrip(".")[:FOLDER_NAME_CHARS] or "submission"
    if name != entry.file or _TAGGED.search(name):
        name += "-" + hashlib.sha256(entry.file.encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return results_dir / name


def kept_outcome(entry: Entry, folder: Path, key: str) -> Outcome | None:
    """The outcome an earlier run kept for `entry` under `key`, or None."""
    try:
        record = json.loads((folder / BATCH_RECORD).read_text(encoding="utf-8"))
        document = json.loads((folder / RESULTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if record.get("key") != key or record.get("status") not in KEPT:
        return None
    reason, seconds = record.get("reason", ""), record.get("seconds", 0.0)
    return Outcome(entry, record["status"], reason, document, seconds, skipped=True)


class Scoring:
    """The manifest and inventory a re-scoring scores with (read once, when first needed)."""

    def __init__(self, root: Path, options: BatchOptions) -> None:
        self.root, self.options = root, options
        self._read: tuple | None = None

    def read(self) -> tuple:
        if self._read is None:
            manifest, inventory = kit_manifest(self.root), load_inventory(self.root)
            if self.options.exercises:
                manifest, inventory = only_exercises(manifest, inventory, self.options.exercises)
            self._read = (manifest, inventory)
        return self._read


def rescore_kept(
    entry: Entry, folder: Path, key: str, run_key: str, scoring: Scoring, options: BatchOptions
) -> Outcome | None:
    """The outcome of `entry` scored again from its kept results.json, where only points changed since
    it was graded (its batch.json's run key is `run_key`): written back (the replaced one kept in its
    history) unless a dry run; None where it must be graded again."""
    try:
        record = json.loads((folder / BATCH_RECORD).read_text(encoding="utf-8"))
        document = json.loads((folder / RESULTS).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("run_key") != run_key or record.get("status") not in KEPT:
        return None
    status, reason = record["status"], record.get("reason", "")
    if status == COMPLETED:
        manifest, inventory = scoring.read()
        again = rescored(document, manifest, inventory)
        if again is None:
            return None
        document = again
    outcome = Outcome(entry, status, reason, document, record.get("seconds", 0.0), rescored=True)
    if options.dry_run:
        return outcome
    try:
        if status == COMPLETED:  # an ungraded one's results.json says the same under any points
            keep(folder / RESULTS, folder / HISTORY, move=True)
            write_results(document, folder / RESULTS)
            now = f"{points_text(document.get('score', 0))} / {points_text(_possible(document))}"
            how = "scored again from its kept results.json (points changed, nothing ran)"
            _log(folder, f"{how}: score {now}, in {folder / RESULTS}")
        _write_json(folder / BATCH_RECORD, {**record, "key": key, "rescored": True})
    except OSError:
        return None  # graded again, and recorded as any grading is
    return outcome


def record_grading(entry: Entry, key: str, folder: Path, graded: Graded, options: BatchOptions) -> Outcome:
    """Write how grading `entry` went into its folder (results.json, batch.json; its grade.log is there
    already), as a later run reads it back (`kept_outcome`), and return its outcome. The results.json
    of a completed grading that it replaces is kept in the folder's history/, for the regrade preview.
    A folder that cannot be written makes the outcome crashed, with the reason (the row is kept)."""
    status, reason, document = _judged(entry, folder, graded, options)
    record = {"key": key, "status": status, "reason": reason, "seconds": round(graded.seconds, 3)}
    if graded.worker:
        record["worker"] = graded.worker
    try:
        _keep_previous(folder)
        write_results(document, folder / RESULTS)
        _write_json(folder / BATCH_RECORD, {**record, "file": entry.file})
        _log(folder, f"results.json written to {folder / RESULTS} ({status})")
    except OSError as error:
        with contextlib.suppress(OSError):  # no record: a later run grades it again
            (folder / BATCH_RECORD).unlink(missing_ok=True)
        status, reason = CRASHED, f"its results could not be written in {folder}: {error.strerror or error}"
        document = unscored_document(f"Grading {status}: {reason}.", execution_time=graded.seconds)
    return Outcome(entry, status, reason, document, graded.seconds)


def _judged(entry: Entry, folder: Path, graded: Graded, options: BatchOptions) -> tuple[Status, str, dict]:
    """The status of a grading, why (but for completed), and the results.json to keep."""
    document = graded.document
    failed = (document or {}).get("extra_data", {}).get("grading_failed")
    if document is not None and not failed:
        ungraded = document.get("extra_data", {}).get("ungraded")
        return (UNGRADED, ta_reason(entry, document), document) if ungraded else (COMPLETED, "", document)
    status: Status
    if graded.timed_out:
        status = TIMED_OUT
        reason = graded.failure or f"grading took longer than {options.timeout:g} s and was stopped"
    else:
        status = CRASHED
        reason = (
            f"the grading failed: {failed}"
            if failed
            else graded.failure or _crash_reason(graded.returncode, folder / GRADE_LOG)
        )
    return status, reason, unscored_document(f"Grading {status}: {reason}.", execution_time=graded.seconds)


def _keep_previous(folder: Path) -> None:
    """The results.json about to be replaced, kept in the folder's history where it holds a completed (or
    ungraded) grading; a failed one is simply replaced, keeping the last real one for the preview."""
    try:
        status = json.loads((folder / BATCH_RECORD).read_text(encoding="utf-8")).get("status")
    except (OSError, ValueError, AttributeError):
        status = None
    (folder / BATCH_RECORD).unlink(missing_ok=True)  # until the new one is written: no stale record
    if status in KEPT:
        keep(folder / RESULTS, folder / HISTORY, move=True)


def previous_results(folder: Path) -> Path | None:
    """The results.json a regrade in `folder` replaced last (the newest in its history), or None."""
    return newest(folder / HISTORY, Path(RESULTS).stem, Path(RESULTS).suffix)


def _possible(document: dict) -> float:
    return float(document.get("extra_data", {}).get("points_possible") or 0)


def _log(folder: Path, line: str) -> None:
    """A line of the batch's own at the end of grade.log, so the log ends on what is true now (the
    grading's last line names its private copy, removed since; a rescore changes the score)."""
    with contextlib.suppress(OSError), open(folder / GRADE_LOG, "a", encoding="utf-8") as log:
        log.write(f"grader batch: {line}\n")


def note_record(folder: Path, **notes: object) -> None:
    """Add `notes` to batch.json (best effort: a record without them is graded again, never misread)."""
    with contextlib.suppress(OSError, ValueError):
        record = json.loads((folder / BATCH_RECORD).read_text(encoding="utf-8"))
        _write_json(folder / BATCH_RECORD, {**record, **notes})


def ta_reason(entry: Entry, document: dict) -> str:
    """Why a submission could not be graded, told to the TA: which files it holds and what to rename,
    from the data its results.json carries (the student's own message otherwise)."""
    extra = document.get("extra_data", {})
    kind, files = extra.get("ungraded_kind"), extra.get("ungraded_files") or []
    listed = ", ".join(files[:6]) + (f" and {len(files) - 6} more" if len(files) > 6 else "")
    rerun = "then run grader batch again"
    if kind == "several modules":
        return (f"{entry.file} holds several .py files that could be the module ({listed}): rename the one "
                f"to grade to {MODULE_FILE} (or remove the others), {rerun}")  # fmt: skip
    if kind == "no module":
        return f"{entry.file} holds no .py file that could be the module ({listed}): {rerun} once it does"
    return str(extra.get("ungraded", ""))


def read_results(path: Path) -> dict | None:
    """A results.json document at `path`, or None where there is none (missing, not JSON, no score)."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return document if isinstance(document, dict) and "score" in document else None


def _crash_reason(code: int | None, log: Path) -> str:
    if code is not None and code < 0:
        how = f"the grader was killed by {signal.Signals(-code).name}"
    elif code == 0:
        how = "the grader wrote no readable results.json"
    elif code == 120:  # Python's exit when it cannot flush its output at exit
        how = "the grader could not write its output (grade.log: is the disk full?)"
    else:
        how = f"the grader exited with code {code}"
    last = _last_line(log)
    return f"{how} ({last})" if last else how


def _last_line(log: Path) -> str:
    try:
        with open(log, "rb") as handle:
            handle.seek(max(0, handle.seek(0, os.SEEK_END) - 4096))
            tail = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    return (
        lines[-1][:300] if lines else ""
    )  # shown escaped wherever it is shown (grader.grading.untrusted.printable)


def cap_log(log: Path) -> None:
    """Keep the first LOG_BYTES of a child's output."""
    try:
        if log.stat().st_size > LOG_BYTES:
            with open(log, "r+b") as handle:
                handle.truncate(LOG_BYTES)
                handle.seek(0, os.SEEK_END)
                handle.write(b"\n... (cut)\n")
    except OSError:
        pass


def _write_json(path: Path, data: dict) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
    os.replace(temporary, path)
