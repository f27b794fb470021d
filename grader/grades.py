"""grades.csv: one row per submission of a batch, in Otter's column names where Otter has one.

Columns: `file` (the submission's name in the source), `name`, `email`, `sid` (from Gradescope's
metadata; empty when unknown, several submitters joined by "; "), one column per exercise (its label,
"8 softmax": the points earned), then `total_points_earned`, `total_points_possible`, `percent_correct`
(0 to 100) and `grading_status` (completed, or ungraded / timed out / crashed with the reason). A
submission that was not graded earns 0 everywhere; its status says why. One that an interrupted batch
did not reach has empty points (no grade yet, not a zero) and the status "interrupted: ...".
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Sequence
from pathlib import Path

from grader.batch import INTERRUPTED, Outcome
from grader.manifest import Exercise
from grader.scoring import points_text

IDENTIFIERS = ("file", "name", "email", "sid")
TOTALS = ("total_points_earned", "total_points_possible", "percent_correct", "grading_status")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet would run these as formulas


def columns(exercises: Sequence[Exercise]) -> list[str]:
    """The header of grades.csv."""
    return [*IDENTIFIERS, *(e.label for e in exercises), *TOTALS]


def grade_row(outcome: Outcome, exercises: Sequence[Exercise]) -> dict[str, str]:
    """One submission's row."""
    extra = outcome.document.get("extra_data", {})
    earned = {item["id"]: float(item["score"]) for item in extra.get("exercises", [])}
    total = float(outcome.document.get("score", 0.0)) if earned else 0.0
    possible = float(extra.get("points_possible") or sum(e.points for e in exercises))
    people = outcome.entry.submitters
    row = {
        "file": outcome.entry.file,
        **{field: "; ".join(v for p in people if (v := getattr(p, field))) for field in IDENTIFIERS[1:]},
        **{e.label: _number(earned.get(e.id, 0.0)) for e in exercises},
        "total_points_earned": _number(total),
        "total_points_possible": _number(possible),
        "percent_correct": _number(round(100 * total / possible, 2) if possible else 0.0),
        "grading_status": outcome.grading_status,
    }
    if outcome.status == INTERRUPTED:
        row.update({key: "" for key in [*(e.label for e in exercises), *TOTALS[:3]]})
    return {key: _safe_cell(value) for key, value in row.items()}


def write_grades(path: Path, outcomes: Sequence[Outcome], exercises: Sequence[Exercise]) -> None:
    """Write grades.csv (atomically: a rename into place)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns(exercises), lineterminator="\n")
    writer.writeheader()
    for outcome in outcomes:
        writer.writerow(grade_row(outcome, exercises))
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text.getvalue(), encoding="utf-8")
    os.replace(temporary, path)


def _number(value: float) -> str:
    return points_text(value)


def _safe_cell(value: str) -> str:
    """Text a spreadsheet would take for a formula gets a leading apostrophe; numbers stay numbers."""
    if value.startswith(_FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True
