"""grades.csv: one row per student of a batch, in Otter's column names where Otter has one.

grades.csv: one row per student of a batch (per submission where no names are known), in Otter's column
names where Otter has one.

A group submission gets one row per member, each with the same points, as Otter's Gradescope export
parser lists every submitter (and Gradescope's own grade export does): a gradebook imports rows of one
student each. Columns: `file` (the submission's name in the source, the same for every member), `name`,
`email`, `sid` (from Gradescope's metadata; empty when unknown), one column per exercise (its label, "8
softmax": the points earned), then `total_points_earned`, `total_points_possible`, `percent_correct` (as
Otter writes it: a fraction from 0 to 1, to four places: 0.5814 for 58.14 of 100 points) and
`grading_status` (completed, or ungraded / timed out / crashed with the reason). A submission that was
not graded earns 0 everywhere; its status says why. One whose grading crashed (twice: the batch grades
it again once), or that an interrupted batch did not reach, has empty points (no grade yet, not a zero)
and the status "crashed: ..." or "interrupted: ...". Last, `kit_version` and `inventory_hash`: what the
row was graded with. Every cell is written through grader.grading.untrusted.printable (no control character or
escape sequence from a submission or an export) and never starts a formula.

A regrade preview compares new rows with an earlier grades.csv of this kit: whose total changes, by how
much, and which results entries changed ("8 softmax: hidden checks"), where the earlier results.json is
known, else which exercises' points, before the file is replaced, each named with its submitters. Only a
row whose total differs (as a number: "4" and "4.0" are the same) counts as a change; one whose total is
the same while points moved between exercises is listed apart; a row that has no grade yet (an
interrupted batch did not reach it, its grading crashed) is "not graded yet", and one that had none before
is "graded now": neither is a change.
"""

from __future__ import annotations

import csv
import io
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.assignment.manifest import Exercise
from grader.assignment.scoring import points_text
from grader.batch.outcomes import CRASHED, INTERRUPTED, Outcome
from grader.batch.roster import Submitter
from grader.errors import KitError
from grader.grading.untrusted import printable

IDENTIFIERS = ("file", "name", "email", "sid")
TOTALS = ("total_points_earned", "total_points_possible", "percent_correct", "grading_status")
KIT = ("kit_version", "inventory_hash")
_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # a spreadsheet would run these as formulas
NOT_GRADED, GRADED_NOW = "not graded yet", "graded now"
MOVED = "points moved"  # the same total, points moved between exercises: no grade changed


class GradesFileError(KitError):
    """A file given as an earlier grades.csv that is not one of this kit."""


@dataclass(frozen=True)
class Change:
    """One submission whose grade a regrade changes."""

    file: str
    before: str  # total_points_earned before ("" for a submission that was not there)
    after: str  # and after ("" for one that is gone)
    exercises: tuple[tuple[str, str, str], ...]  # (exercise column, before, after) of those that changed
    kind: str = "changed"  # or "new" (not in the earlier grades.csv), "gone" (not in the new one),
    # NOT_GRADED (no grade now: not reached, crashed), GRADED_NOW (no grade before) or MOVED (the same
    # total): none of these three a change of a grade
    entries: tuple[tuple[str, str, str], ...] = ()  # (results entry, before, after), where both are known
    names: str = ""  # its submitters, "; "-joined, where the export names them

    @property
    def counts(self) -> bool:
        """Whether it is a change of a grade (not a row with no grade on one side, nor the same total)."""
        return self.kind not in (NOT_GRADED, GRADED_NOW, MOVED)

    @property
    def moved(self) -> tuple[tuple[str, str, str], ...]:
        """What changed, as finely as known: the results entries, else the exercises."""
        return self.entries or self.exercises

    @property
    def delta(self) -> float | None:
        try:
            return float(self.after) - float(self.before)
        except ValueError:
            return None


def columns(exercises: Sequence[Exercise]) -> list[str]:
    """The header of grades.csv."""
    return [*IDENTIFIERS, *(e.label for e in exercises), *TOTALS, *KIT]


def grade_rows(
    outcome: Outcome, exercises: Sequence[Exercise], kit: Mapping[str, str] | None = None
) -> list[dict[str, str]]:
    """A submission's rows: one per submitter, each with the same points (one row where none is known)."""
    people = outcome.entry.submitters
    rows = [grade_row(outcome, exercises, kit, person) for person in people]
    return rows or [grade_row(outcome, exercises, kit)]


def grade_row(
    outcome: Outcome,
    exercises: Sequence[Exercise],
    kit: Mapping[str, str] | None = None,
    person: Submitter | None = None,
) -> dict[str, str]:
    """One submission's row for `person` (default: every submitter's, joined by "; "; `kit`: its
    kit_version and inventory_hash)."""
    extra = outcome.document.get("extra_data", {})
    earned = {item["id"]: float(item["score"]) for item in extra.get("exercises", [])}
    total = float(outcome.document.get("score", 0.0)) if earned else 0.0
    possible = float(extra.get("points_possible") or sum(e.points for e in exercises))
    people = (person,) if person is not None else outcome.entry.submitters
    row = {
        "file": outcome.entry.file,
        **{field: "; ".join(v for p in people if (v := getattr(p, field))) for field in IDENTIFIERS[1:]},
        **{e.label: _number(earned.get(e.id, 0.0)) for e in exercises},
        "total_points_earned": _number(total),
        "total_points_possible": _number(possible),
        "percent_correct": _fraction(total, possible),
        "grading_status": outcome.grading_status,
    }
    if outcome.status in (INTERRUPTED, CRASHED):  # no grade yet: never a zero it did not earn
        row.update({key: "" for key in [*(e.label for e in exercises), *TOTALS[:3]]})
    row.update({key: str((kit or {}).get(key, "")) for key in KIT})
    return {key: _safe_cell(value) for key, value in row.items()}


def write_grades(
    path: Path,
    outcomes: Sequence[Outcome],
    exercises: Sequence[Exercise],
    kit: Mapping[str, str] | None = None,
) -> None:
    """Write grades.csv (atomically: a rename into place)."""
    write_rows(path, [row for o in outcomes for row in grade_rows(o, exercises, kit)], exercises)


def write_rows(path: Path, rows: Sequence[dict[str, str]], exercises: Sequence[Exercise]) -> None:
    """Write grades.csv's `rows` (atomically: a rename into place)."""
    text = io.StringIO()
    writer = csv.DictWriter(text, fieldnames=columns(exercises), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(row)
    path.parent.mkdir(parents=True, exist_ok=True)
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(text.getvalue(), encoding="utf-8")
    os.replace(temporary, path)


def _number(value: float) -> str:
    return points_text(value)


def _fraction(total: float, possible: float) -> str:
    """`percent_correct` in Otter's meaning and scale: the share of the points, 0 to 1, to four places."""
    return f"{round(total / possible, 4) if possible else 0.0:g}"


def _safe_cell(value: str) -> str:
    """One line, its control characters escaped; text a spreadsheet would take for a formula gets a
    leading apostrophe; numbers stay numbers."""
    value = printable(value, lines=False)
    if value.startswith(_FORMULA_STARTS) and not _is_number(value):
        return "'" + value
    return value


def _is_number(value: str) -> bool:
    try:
        float(value)
    except ValueError:
        return False
    return True


def read_grades(path: Path) -> dict[str, dict[str, str]]:
    """file -> row of an earlier grades.csv of this kit; GradesFileError, saying what to give, if it is
    not one."""
    what = f"{path}: not a grades.csv of this kit"
    fix = "give a grades.csv that grader batch wrote"
    try:
        with open(path, newline="", encoding="utf-8") as handle:
            reader = csv.DictReader(handle)
            header = reader.fieldnames or []
            missing = [c for c in ("file", "total_points_earned", "grading_status") if c not in header]
            if missing:
                raise GradesFileError(f"{what} (no {', '.join(missing)} column): {fix}")
            found: dict[str, dict[str, str]] = {}
            for row in reader:  # a group's members share one file and its points: the first stands for all
                found.setdefault(row["file"], row)
            return found
    except UnicodeDecodeError:
        raise GradesFileError(f"{what} (not UTF-8 text): {fix}") from None
    except csv.Error as error:
        raise GradesFileError(f"{what} ({error}): {fix}") from None


Entries = Mapping[str, Mapping[str, str]]  # file -> results entry name -> its score (points_text)


def entry_scores(document: Mapping) -> dict[str, str]:
    """A results.json's entries by name, each with its score as grades.csv writes points."""
    return {str(t.get("name", "")): _number(float(t.get("score") or 0.0)) for t in document.get("tests", [])}


def regrade_changes(
    old: Mapping[str, Mapping[str, str]],
    rows: Sequence[Mapping[str, str]],
    exercises: Sequence[Exercise],
    entries_before: Entries | None = None,
    entries_after: Entries | None = None,
) -> list[Change]:
    """The submissions whose total or exercise points differ between `old` and the new `rows`, in the
    new rows' order (then those gone); with the entries of both results.json where known."""
    changes = []
    first: dict[str, Mapping[str, str]] = {}
    names: dict[str, list[str]] = {}
    for row in rows:  # a group's members share one file and its points: the first row stands for all
        first.setdefault(row["file"], row)
        names.setdefault(row["file"], []).extend([row["name"]] if row.get("name") else [])
    for row in first.values():
        named = "; ".join(names[row["file"]])
        before = old.get(row["file"])
        if before is None:
            changes.append(Change(row["file"], "", row["total_points_earned"], (), "new", names=named))
            continue
        was, now = before.get("total_points_earned", ""), row["total_points_earned"]
        if not now or not was:  # no grade on one side: not a change of a grade
            if now != was:
                kind = NOT_GRADED if not now else GRADED_NOW
                changes.append(Change(row["file"], was, now, (), kind, names=named))
            continue
        moved = tuple(
            (e.label, before.get(e.label, ""), row[e.label])
            for e in exercises
            if not _same(before.get(e.label, ""), row[e.label])
        )
        if moved or not _same(was, now):
            entries = _moved_entries(
                (entries_before or {}).get(row["file"]), (entries_after or {}).get(row["file"])
            )
            kind = "changed" if not _same(was, now) else MOVED
            changes.append(Change(row["file"], was, now, moved, kind, entries, named))
    new = set(first)
    changes += [
        Change(file, row.get("total_points_earned", ""), "", (), "gone", names=row.get("name", ""))
        for file, row in old.items()
        if file not in new
    ]
    return changes


def _same(before: str, after: str) -> bool:
    """Whether two cells hold the same points ("4" and "4.0" do)."""
    try:
        return before == after or float(before) == float(after)
    except ValueError:
        return False


def _moved_entries(
    before: Mapping[str, str] | None, after: Mapping[str, str] | None
) -> tuple[tuple[str, str, str], ...]:
    if before is None or after is None:
        return ()
    names = [*after, *(name for name in before if name not in after)]
    return tuple(
        (name, before.get(name, ""), after.get(name, ""))
        for name in names
        if not _same(before.get(name, ""), after.get(name, ""))
    )


def change_text(change: Change) -> str:
    """One line of the preview: "bob.py (Bob B): 57.5 -> 60 (+2.5): 8 softmax: hidden checks 0 -> 2.5"."""
    who = f"{change.file} ({change.names})" if change.names else change.file
    if change.kind == "new":
        return f"{who}: new, {change.after or 'no grade yet'}"
    if change.kind == "gone":
        return f"{who}: gone (was {change.before or 'no grade'})"
    if change.kind == NOT_GRADED:
        return f"{who}: not graded yet (its grade was {change.before}; run grader batch again)"
    if change.kind == GRADED_NOW:
        return f"{who}: graded now, {change.after} (not graded yet in the earlier grades.csv)"
    delta = change.delta
    moved = f" ({'+' if delta > 0 else ''}{points_text(delta)})" if delta else ""
    parts = "; ".join(f"{label} {b or '-'} -> {a or '-'}" for label, b, a in change.moved)
    totals = f"{change.before or '-'} -> {change.after or '-'}"
    totals = f"{change.after}, the same total" if change.kind == MOVED else totals
    return f"{who}: {totals}{moved}" + (f": {parts}" if parts else "")
