"""The grader's verdict on a local run: what a student sees at the end of `python -m pytest`.

At the end of every run of the suites, a table with one row per exercise that ran: its visible checks
passed of total, the visible points they earn (scored by grader.assignment.scoring's rule, as `grader grade`
scores the visible entry: its points split over the promises its checks name, an error, unchanged or
form check earning beside a passing value, edge or rng check of its function; grading gives them only
where the hidden checks show the function computing, which a local run cannot know), how many hidden
checks it has (they run only when graded) and a state: not started, failing, passing or timed out. A
test that fails only because its function still raises the stub's NotImplementedError is reported as
"not started", without a traceback.

The exercises (ids, titles, functions, points, how many visible and hidden checks, the visible entry's
points and the promises its checks name) come from the manifest and inventory in the kit, and from
`tests/exercises.json` in the student handout (written by `grader package`: nothing about the hidden
checks but their number).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from grader.assignment.scoring import Tally, entry_score, points_text, split_points
from grader.runtime.protocol import import_headline

EXERCISES_FILE = Path("tests/exercises.json")  # in the handout: what the verdict table needs
NOT_STARTED, FAILING, PASSING, TIMED_OUT = "not started", "failing", "passing", "timed out"
NOT_CALLED = "not called"  # a test of an exercise that timed out earlier in the run: failed at once
NOT_IMPORTED = "not imported"  # the module never imported (a top-level error or endless loop)
WAITING = "waiting"  # failed on the stub of a function of another exercise, which this one calls
SYNTAX_ERROR = "syntax error"  # the exercise's function could not be graded: intake found a syntax error
SEPARATOR = " | "
_IMPLEMENT = re.compile(r"implement (\w+)")
_STUB = re.compile(r"exercise (\d+) \(.*?\): implement (\w+)")  # a stub's NotImplementedError message
_DID_NOT_RETURN = re.compile(r"(\w+)\(\) did not return")
# The most of a failure's text that is kept (here and in the results): an exception the test raised on a
# value the submission chose can quote it whole (list.index: 3.9 MB), and the patterns above, run on it
# uncut, took quadratic time (the suite hung until the grading's wall-clock bound cut it)
FAILURE_CHARS = 20_000
# grader.runtime.worker's words for a function intake dropped: "f() could not be graded: it has a syntax
# error"
_SYNTAX_ERROR = re.compile(r"(\w+)\(\) could not be graded: it has a syntax error \((line \d+)")


@dataclass(frozen=True)
class VisiblePromise:
    """A promise that visible checks name, and how many of the visible entry's checks name it."""

    id: str
    function: str
    kind: str
    weight: int | float
    checks: int


@dataclass(frozen=True)
class ExerciseInfo:
    """What the local verdict knows about an exercise: no hidden test's name, code, input or promise."""

    id: int
    title: str
    functions: tuple[str, ...]
    points: float
    visible: int  # checks in tests/visible
    hidden: int  # checks in tests/hidden (run only when graded)
    # the visible entry's points, as grader.assignment.scoring splits the exercise's
    visible_points: float = 0.0
    promises: tuple[VisiblePromise, ...] = ()  # the promises the visible checks name
    unmarked: int = 0  # visible checks that name no promise (each a promise of its own)
    # (function, its exercise) of other exercises that this one's reference calls: grading answers those
    # calls with the reference, so this exercise is graded as if they were right; a local run cannot
    needs: tuple[tuple[str, int], ...] = ()


def exercises_data(manifest, inventory: dict) -> list[dict]:
    """The content of tests/exercises.json for a manifest and inventory (also what the kit computes)."""
    counts: dict[tuple[int, str], int] = {}
    named: dict[int, dict[str, int]] = {}  # exercise -> promise ("": none) -> its visible checks
    for test in inventory["tests"]:
        key = (test["exercise"], test["suite"])
        counts[key] = counts.get(key, 0) + 1
        if test["suite"] == "visible":
            mine = named.setdefault(test["exercise"], {})
            mine[test.get("promise", "")] = mine.get(test.get("promise", ""), 0) + 1
    promises = inventory.get("promises", {})
    answers = inventory.get("contract", {}).get("answers", {})
    exercise_of = {name: e.id for e in manifest.exercises for name in e.functions}
    out = []
    for e in manifest.exercises:
        needs = {
            (callee, exercise_of[callee])
            for name in e.functions
            for callee in answers.get(name, ())
            if exercise_of.get(callee, e.id) != e.id
        }
        visible, hidden = counts.get((e.id, "visible"), 0), counts.get((e.id, "hidden"), 0)
        maxima = split_points(e, [n for n in (visible, hidden) if n])
        mine = named.get(e.id, {})
        out.append({
            "id": e.id,
            "title": e.title,
            "functions": list(e.functions),
            "points": e.points,
            "visible": visible,
            "hidden": hidden,
            "visible_points": maxima[0] if visible else 0.0,
            "promises": [
                {"id": name, **{k: promises[name][k] for k in ("function", "kind", "weight")}, "checks": n}
                for name, n in mine.items()
                if name
            ],
            "unmarked": mine.get("", 0),
            "needs": [list(need) for need in sorted(needs, key=lambda n: (n[1], n[0]))],
        })  # fmt: skip
    return out


def load_exercises(root: Path) -> list[ExerciseInfo]:
    """The exercises of the kit or handout at `root`; empty when neither describes them."""
    path = root / EXERCISES_FILE
    if path.is_file():
        data = json.loads(path.read_text(encoding="utf-8"))["exercises"]
    else:
        data = _kit_data(root)
    out = []
    for d in data:
        plain = {k: d[k] for k in ("id", "title", "points", "visible", "hidden", "visible_points")}
        promises = tuple(VisiblePromise(**p) for p in d["promises"])
        needs = tuple((name, int(exercise)) for name, exercise in d.get("needs", []))
        out.append(
            ExerciseInfo(
                **plain,
                functions=tuple(d["functions"]),
                promises=promises,
                unmarked=d["unmarked"],
                needs=needs,
            )
        )
    return out


def _kit_data(root: Path) -> list[dict]:
    from grader.layout import MANIFEST, REFERENCE

    if not ((root / MANIFEST).is_file() and (root / REFERENCE).is_file()):
        return []
    try:
        from grader.assignment.inventory import load_inventory
        from grader.assignment.manifest import load_manifest
        from grader.assignment.reference import read_reference

        manifest = load_manifest(root / MANIFEST, read_reference(root / REFERENCE, REFERENCE.as_posix()))
        return exercises_data(manifest, load_inventory(root))
    except Exception:  # noqa: BLE001 - a kit being edited: the run goes on without a verdict table
        return []


@dataclass
class Outcome:
    """One suite test's outcome in this run."""

    exercise: int
    suite: str
    state: str  # passed, failed, not started, timed out
    message: str = ""
    promise: str = ""  # the promise it checks ("": it names none)


@dataclass
class Verdict:
    """The outcomes of a run, by test; rendered as the table at the end of the run."""

    exercises: list[ExerciseInfo]
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    headline: str | None = None  # why the module never imported, said once above the table

    def record(
        self, nodeid: str, exercise: int, suite: str, state: str, message: str = "", promise: str = ""
    ) -> None:
        """Record a test's outcome; a failure in any phase (setup, call, teardown) wins over a pass."""
        if state == NOT_IMPORTED and self.headline is None:
            self.headline = import_headline(message)
        known = self.outcomes.get(nodeid)
        if known is None or known.state == "passed":
            self.outcomes[nodeid] = Outcome(exercise, suite, state, message, promise)

    def states(self) -> set[str]:
        """The states the run's tests ended in."""
        return {o.state for o in self.outcomes.values()}

    def rows(self) -> list[dict]:
        """One row per exercise that had a test in this run, in manifest order."""
        ran = {e.id: [o for o in self.outcomes.values() if o.exercise == e.id] for e in self.exercises}
        states = {n: _state(mine) for n, mine in ran.items() if mine}
        rows = []
        for exercise in self.exercises:
            mine = ran[exercise.id]
            if not mine:
                continue
            visible = [o for o in mine if o.suite == "visible"]
            passed = sum(o.state == "passed" for o in visible)
            hidden = [o for o in mine if o.suite == "hidden"]
            rows.append({
                "id": exercise.id,
                "title": exercise.title,
                "passed": passed,
                "total": len(visible),
                "score": entry_score(exercise.visible_points, _tallies(exercise, visible, only_passed=True)),
                "max_score": entry_score(exercise.visible_points, _tallies(exercise, visible, False)),
                "hidden": exercise.hidden,
                "hidden_passed": sum(o.state == "passed" for o in hidden) if hidden else None,
                "state": WAITING if (waiting := _waiting_on(exercise, mine, states)) else states[exercise.id],
                "waiting_on": waiting,
                "to_implement": _to_implement(mine, exercise),
                "timed_out": sorted({m.group(1) for o in mine for m in _DID_NOT_RETURN.finditer(o.message)}),
                "syntax_errors": sorted({f"{m[1]}() ({m[2]})" for o in mine for m in _SYNTAX_ERROR.finditer(o.message)}),  # noqa: E501
            })  # fmt: skip
        return rows

    def lines(self) -> list[str]:
        """The table, and what it means."""
        rows = self.rows()
        if not rows:
            return []
        head = [self.headline, ""] if self.headline else []
        table = [("exercise", "visible checks", "visible points", "hidden checks", "state")]
        for row in rows:
            hidden = (
                f"{row['hidden_passed']}/{row['hidden']}" if row["hidden_passed"] is not None
                else f"{row['hidden']} when graded"
            )  # fmt: skip
            state = row["state"]
            if state == NOT_STARTED and row["to_implement"]:
                state += ": implement " + ", ".join(row["to_implement"])
            elif state == SYNTAX_ERROR and row["syntax_errors"]:
                state += ": " + ", ".join(row["syntax_errors"])
            elif state == TIMED_OUT and row["timed_out"]:
                state += ": " + ", ".join(f"{name}()" for name in row["timed_out"])
            elif state == WAITING:
                state += " on " + ", ".join(row["waiting_on"])
            table.append((
                f"{row['id']:>2} {row['title']}", f"{row['passed']}/{row['total']}",
                f"{points_text(row['score'])}/{points_text(row['max_score'])}", hidden, state,
            ))  # fmt: skip
        earned = sum(r["score"] for r in rows)
        possible = sum(r["max_score"] for r in rows)
        hidden_total = sum(r["hidden"] for r in rows)
        table.append(("total", f"{sum(r['passed'] for r in rows)}/{sum(r['total'] for r in rows)}",
                      f"{points_text(earned)}/{points_text(possible)}", "", ""))  # fmt: skip
        widths = [max(len(cells[i]) for cells in table) for i in range(len(table[0]))]
        out = head + [
            SEPARATOR.join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip() for cells in table
        ]
        if hidden_total and all(r["hidden_passed"] is None for r in rows):
            out.append(
                f"Visible points only: the {hidden_total} hidden checks of these exercises run only when "
                "your submission is graded, and earn the rest of their points (a function's visible "
                "checks earn then only where most hidden checks of each of its value promises pass too)."
            )
        if any(r["state"] == WAITING for r in rows):
            out.append(
                "Waiting: the exercise's functions call another exercise's, which is not started or fails "
                "here. The grader checks each exercise with correct versions of the others' functions, so "
                "its points there do not depend on them: finish or fix that exercise first, then this row "
                "says how yours does."
            )
        if len(rows) < len(self.exercises):
            out.append(f"{len(self.exercises) - len(rows)} exercises had no test in this run.")
        return out


def _tallies(exercise: ExerciseInfo, visible: list[Outcome], only_passed: bool) -> list[Tally]:
    """The visible entry's tallies per promise, as grading makes them, with the checks of this run that
    passed (`only_passed`) or that ran (what they can earn) as passed; checks not run as failed."""
    counted = [o for o in visible if o.state == "passed" or not only_passed]
    out = [
        Tally(p.function, p.kind, p.weight, p.checks, sum(o.promise == p.id for o in counted))
        for p in exercise.promises
    ]
    unmarked = min(sum(not o.promise for o in counted), exercise.unmarked)
    out += [Tally("", "value", 1, 1, int(i < unmarked)) for i in range(exercise.unmarked)]
    return out


def failure_text(excinfo) -> str:
    """A failed test's exception text (its notes too), at most FAILURE_CHARS of it."""
    return excinfo.exconly().removeprefix("grader.runtime.protocol.")[:FAILURE_CHARS]


def classify(excinfo, exercise: int | None = None) -> tuple[str, str]:
    """(state, message) of a failed test's exception: not started, waiting (the stub of another exercise
    than the test's `exercise` raised), timed out or failed."""
    if excinfo is None:
        return "failed", ""
    text = failure_text(excinfo)
    name = excinfo.type.__name__
    if name == "NotImplementedError":
        others = {int(m[1]) for m in _STUB.finditer(text)} - {exercise}
        return (WAITING if exercise is not None and others else NOT_STARTED), text
    if name in ("SubmissionError", "CallTimedOut") and import_headline(text) is not None:
        return NOT_IMPORTED, text
    if name == "SubmissionError" and _SYNTAX_ERROR.search(text):
        return SYNTAX_ERROR, text
    if name == "CallTimedOut":
        return (NOT_CALLED if "timed out earlier" in text else TIMED_OUT), text
    return "failed", text


def _state(outcomes: list[Outcome]) -> str:
    states = {NOT_STARTED if o.state == WAITING else o.state for o in outcomes}
    if NOT_IMPORTED in states:
        return NOT_IMPORTED
    if SYNTAX_ERROR in states:
        return SYNTAX_ERROR
    if states & {TIMED_OUT, NOT_CALLED}:
        return TIMED_OUT
    if states == {NOT_STARTED}:
        return NOT_STARTED
    if states == {"passed"}:
        return PASSING
    return FAILING


def _waiting_on(exercise: ExerciseInfo, outcomes: list[Outcome], states: dict[int, str]) -> list[str]:
    """What of other exercises this one's failures here come from ("softmax() (exercise 8: not
    started)"): the stubs its checks ran into, and, where it fails, the functions it calls of exercises
    that do not pass here. Empty unless it is not started or failing (passing, timed out, not imported,
    a syntax error: its own state says more), and where its own stub is what it still lacks."""
    if states[exercise.id] not in (NOT_STARTED, FAILING):
        return []
    stubs = {
        (m[2], int(m[1]))
        for o in outcomes
        if o.state in (NOT_STARTED, WAITING)
        for m in _STUB.finditer(o.message)
    }
    if any(n == exercise.id for _, n in stubs):  # its own function is still the stub's
        return []
    failing = {(name, n) for name, n in exercise.needs if states.get(n, PASSING) != PASSING}
    found = sorted(stubs | failing, key=lambda need: (need[1], need[0]))
    return [f"{name}() (exercise {n}: {states.get(n, NOT_STARTED)})" for name, n in found]


def _to_implement(outcomes: list[Outcome], exercise: ExerciseInfo) -> list[str]:
    named = {m.group(1) for o in outcomes if o.state == NOT_STARTED for m in _IMPLEMENT.finditer(o.message)}
    return [f for f in exercise.functions if f in named]
