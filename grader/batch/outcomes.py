"""What a batch is made of and how it ends: options, outcomes, statuses.

Each submission's outcome and status, how one child ended (`Graded`), the engine and progress a batch is
given, and the names of the files each submission's folder holds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, Protocol

from grader.batch.roster import Entry
from grader.grading.grade import SUBMISSION_SECONDS

GRACE_SECONDS = 3.0  # from SIGINT to SIGKILL


POLL_SECONDS = 0.05


# In each submission's folder:
RESULTS, HISTORY = "results.json", "history"  # history/results.<when written>.json: what a regrade replaced


GRADE_LOG, BATCH_RECORD = "grade.log", "batch.json"


LOG_BYTES = 256 * 1024


Status = Literal["completed", "ungraded", "timed out", "crashed", "interrupted"]


COMPLETED: Final = "completed"


UNGRADED: Final = "ungraded"  # no module to grade


TIMED_OUT: Final = "timed out"


CRASHED: Final = "crashed"


INTERRUPTED: Final = "interrupted"  # not graded: the batch was stopped first


KEPT: tuple[Status, ...] = (COMPLETED, UNGRADED)  # outcomes a later run keeps; the others are tried again


@dataclass(frozen=True)
class BatchOptions:
    """How a batch grades."""

    results_dir: Path
    jobs: int = 1
    force: bool = False
    call_timeout: float | None = None
    exercises: tuple[int, ...] = ()
    timeout: float = SUBMISSION_SECONDS
    dry_run: bool = False  # grade in a scratch folder, write nothing into results_dir


@dataclass(frozen=True)
class Outcome:
    """How grading one submission went."""

    entry: Entry
    status: Status
    reason: str  # why, for every status but completed
    document: dict  # its results.json
    seconds: float  # wall-clock time of its child
    skipped: bool = False  # graded by an earlier run
    attempts: int = 1  # gradings this run: 2 where the first crashed
    rescored: bool = False  # scored again from its kept results.json (points changed alone): nothing ran

    @property
    def grading_status(self) -> str:
        """The status as grades.csv writes it: "completed", "crashed: <reason>", ..."""
        if self.status == COMPLETED:
            return self.status
        again = " (graded twice, crashed both times)" if self.status == CRASHED and self.attempts > 1 else ""
        return f"{self.status}: {self.reason}{again}"

    @property
    def failed(self) -> bool:
        return self.status != COMPLETED


@dataclass(frozen=True)
class Graded:
    """How one `grader grade` child ended, wherever it ran: its results.json (None: none readable)."""

    document: dict | None
    returncode: int | None
    timed_out: bool
    seconds: float
    failure: str = ""  # why it failed, where the child's exit cannot tell (its worker was lost, ...)
    worker: str = ""  # the cluster worker that graded it ("": this machine)


class BatchInterrupted(KeyboardInterrupt):
    """A batch stopped by Ctrl-C or SIGTERM: `outcomes` holds one per entry, in order, those it did not
    finish with status "interrupted" (every child stopped, what finished kept on disk)."""

    def __init__(self, outcomes: list[Outcome], why: str = "") -> None:
        super().__init__(why)
        self.outcomes = outcomes

    @property
    def finished(self) -> int:
        return sum(o.status != INTERRUPTED for o in self.outcomes)


Engine = Callable[[Path, list[tuple[Entry, str]], BatchOptions, Callable[[Outcome], None]], None]
"""A way of grading: grade `todo` (entries with their grading keys) with the kit at `root` under
`options`, telling `done` each outcome as `record_grading` recorded it; Ctrl-C stops what runs."""


class Progress(Protocol):
    """Told about a batch as it goes."""

    def start(self, total: int) -> None: ...

    def done(self, outcome: Outcome) -> None: ...

    def stop(self) -> None: ...
