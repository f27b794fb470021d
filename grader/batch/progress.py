"""The progress bar of `grader batch` on the TA's terminal.

Drawn with rich; where stderr is no terminal, one line a submission.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from grader.assignment.scoring import points_text
from grader.batch.outcomes import (
    CRASHED,
    Outcome,
)
from grader.grading.untrusted import printable

if TYPE_CHECKING:  # rich is imported only where a progress bar is drawn
    from rich.progress import Progress as RichProgress


class BarProgress:
    """A rich progress bar on stderr (done, failed, time left); on a non-terminal, one line each."""

    def __init__(self) -> None:
        from rich.console import Console

        self.console = Console(stderr=True)
        self.failed = 0
        self.count = 0
        self.total = 0
        self._bar: RichProgress | None = None

    def start(self, total: int) -> None:
        self.total = total
        if not self.console.is_terminal or total == 0:
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self._bar = Progress(
            TextColumn("grading"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("[red]{task.fields[failed]} failed"),
            TimeElapsedColumn(),
            TextColumn("left"),
            TimeRemainingColumn(),
            console=self.console,
        )
        self._task = self._bar.add_task("grading", total=total, failed=0)
        self._bar.start()

    def done(self, outcome: Outcome) -> None:
        self.count += 1
        self.failed += outcome.failed
        if self._bar is not None:
            self._bar.update(self._task, advance=1, failed=self.failed)
        else:
            score = points_text(outcome.document.get("score", 0)) if outcome.status != CRASHED else "no score"
            line = f"[{self.count}/{self.total}] {outcome.entry.file}: {score} ({outcome.grading_status})"
            print(printable(line, lines=False), file=sys.stderr, flush=True)

    def stop(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
