"""Scores: the manifest's points, shared out over each exercise's entries and promises, in points a person
can read.

An exercise's points are split between its visible and hidden entries: as the manifest's
`visible_points` says, else by number of checks (points * visible checks / all its checks, rounded to
0.01), the remainder on the hidden entry, so the entries add up to the exercise's points exactly.
Within an entry, its points split over the promises its checks name (grader.assignment.promises), by their
weights, and a promise's share splits equally over its checks in that entry. A check that names no
promise (a suite not yet annotated) is a promise of its own, of weight 1, of the value kind.

Points follow what breaks (issue 30). A promise's kind is its role: `value` promises are its function's
core result (a function without any: its `edge` and `rng` promises are), the others (edge, form,
unchanged, rng, error) each one more thing the function gets right. By default (grader.assignment.promises.
default_weights) a function's value promises together carry 3/5 of its weight and its other promises
2/5, each at most 3/10; a function's weights add up to its number of promises. A function *computes*
in an entry where more than half the checks of each of its core promises pass (`working`): one core
promise broken is a wrong core result. Then:

- in the hidden entry, a check of a promise that is not core earns only where its function computes:
  an answer of the right type that does no work ("every candidate survives", the input echoed) keeps
  invariants such as "the front is never empty", and earns nothing for them; and a function that does
  not compute keeps at most BROKEN_MOST (2/5) of its hidden points (what its passing core checks earn,
  capped);
- a visible check earns only where its function computes in the hidden entry (an unmarked check: where
  any hidden check of a value, edge or rng kind passes): the visible inputs and answers are in the
  handout, and a table of them, computing nothing, earned 21.96 of 100 points before;
- in every entry, a check of an `error`, `unchanged` or `form` promise earns only where a check of a
  value, edge or rng promise of its function passes in the same entry (the rule a student's own run,
  which has no hidden checks, can apply: grader.grading.local).

So breaking a function's core result (any of its value promises failing half its checks or more) keeps
at most 2/5 of its hidden points and none of its visible points; one slip of form or of an edge case
that leaves every core promise holding costs that promise's share alone, at most 3/10 of the function
(2/5 split over its other promises: with five, 8% each). An exercise of several functions keeps the
points of those that compute. Instructors write `weight` in a promise file where the defaults do not
suit; docs/points.md shows every split.
The gate on visible checks counts in the total; a page shows it where the hidden results are shown
(`own_score`: what the visible entry's checks earn on their own, all a page may show before).

An entry's score is rounded to 0.01 (every check earning: its maximum exactly). A test that did not pass
(failed, errored, skipped or missing from the run) earns nothing. An exercise with no test at all is
reported, never scored as a silent zero. Every output prints points one way: `points_text`.

The rule itself (`entry_score`) works on tallies per promise, so that the student's local verdict
(grader.grading.local, shipped in the handout without the manifest or the hidden checks) scores its visible
entry exactly as grading does where the hidden entry shows every function computing; `score_suites`
scores records, from a test run or rebuilt from a kept results.json.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from grader.assignment.promises import FALLBACK_CORE, GATED, VALUE
from grader.errors import KitError
from grader.layout import SUITES

if TYPE_CHECKING:  # only their attributes are read: this module ships in the handout without them
    from grader.assignment.manifest import Exercise, Manifest
    from grader.assignment.promises import Promise
    from grader.assignment.records import TestRecord


@dataclass(frozen=True)
class SuiteScore:
    """One exercise's tests of one suite, and what they earned."""

    exercise: Exercise
    suite: str
    records: tuple[TestRecord, ...]
    score: float
    max_score: float
    # the functions whose passing checks here earned nothing for want of a passing hidden check (`working`)
    withheld: tuple[str, ...] = ()
    # what its checks earn on their own, before that gate (None: no gate applies): what a page shows
    # before the hidden results are (a function of this suite alone); `score` is what counts in the total
    own_score: float | None = None

    @property
    def shown_score(self) -> float:
        """The entry's score as its own checks earn it: the visible entry's before the gate."""
        return self.score if self.own_score is None else self.own_score

    @property
    def gated(self) -> float:
        """The points the gate on visible checks took from this entry (0.0 where it took none)."""
        return cents(self.shown_score - self.score)

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.records)

    @property
    def name(self) -> str:
        """The entry's name as students see it: "12 group advantages: visible checks"."""
        return f"{self.exercise.label}: {self.suite} checks"


@dataclass(frozen=True)
class Tally:
    """One promise's checks in one entry: what the rule needs to score them."""

    function: str  # "" for a check that names no promise
    kind: str
    weight: int | float
    checks: int
    passed: int


class UnscoredExercise(KitError):
    """An exercise of the manifest with no test in the suites: the kit is broken, not the submission."""


def score_suites(
    manifest: Manifest,
    records: Iterable[TestRecord],
    suites: Iterable[str] = SUITES,
    promises: Mapping[str, Promise] | None = None,
) -> list[SuiteScore]:
    """One SuiteScore per exercise and suite, in manifest order, visible before hidden. `promises` (by
    id, as the inventory holds them) says what each record's promise is; a record naming none counts
    as a promise of its own; one naming a promise `promises` lacks is a KitError."""
    records = list(records)
    suites = list(suites)
    out = []
    for exercise in manifest.exercises:
        mine = [r for r in records if r.exercise == exercise.id]
        if not mine:
            raise UnscoredExercise(f"exercise {exercise.label} has no tests")
        out += score_exercise(exercise, mine, suites, promises or {})
    return out


BROKEN_MOST = Fraction(2, 5)  # the share of its hidden points a function that does not compute keeps, at most
HIDDEN = "hidden"  # the suite whose passing checks let the others' earn (its inputs are not handed out)


def score_exercise(
    exercise: Exercise, records: list[TestRecord], suites: Iterable[str], promises: Mapping[str, Promise]
) -> list[SuiteScore]:
    """The entries of one exercise, given its records (see score_suites)."""
    groups = [(suite, tuple(r for r in records if r.suite == suite)) for suite in suites]
    groups = [(suite, in_suite) for suite, in_suite in groups if in_suite]
    maxima = split_points(exercise, [len(in_suite) for _, in_suite in groups])
    hidden = [tallies(in_suite, promises) for suite, in_suite in groups if suite == HIDDEN]
    proven = working(hidden[0]) if hidden else None
    out = []
    for (suite, in_suite), most in zip(groups, maxima, strict=True):
        entry = tallies(in_suite, promises)
        withheld: tuple[str, ...] = ()
        own = None
        if suite == HIDDEN:
            score = entry_score(most, entry, computing=working(entry))
        else:
            score = entry_score(most, entry, proven)
            if proven is not None:
                withheld = tuple(sorted({t.function for t in entry if t.passed} - proven))
                own = entry_score(most, entry)
        out.append(SuiteScore(exercise, suite, in_suite, score, most, withheld, own))
    return out


def is_core(tally: Tally, entry: Iterable[Tally]) -> bool:
    """Whether `tally` checks its function's core result: a value promise, or an edge or rng promise of
    a function with no value promise in `entry`."""
    if tally.kind == VALUE:
        return True
    valued = any(t.function == tally.function and t.kind == VALUE for t in entry)
    return tally.kind in FALLBACK_CORE and not valued


def working(entry: Iterable[Tally]) -> frozenset[str]:
    """The functions that compute in `entry`: more than half the checks of each of their core promises
    (`is_core`) pass; "" (what an unmarked check names: a suite not yet annotated) where any check of a
    value, edge or rng kind passes, as before. One passing check was enough for every function: a table
    of the visible answers beside a softmax that only ranked the logits (equal ones: 1/n each) passed 2
    of its 4 hidden value checks and 3 of its edge checks, and earned 2.46 of 3 points, the visible 1.07
    included. Most of all the value checks of a function was not enough either: `cheapest` minimising
    the total without the cost of errors (its whole point) broke one value promise of five and kept 87%
    of its exercise."""
    entry = list(entry)
    core = [t for t in entry if t.function and is_core(t, entry)]
    broken = {t.function for t in core if 2 * t.passed <= t.checks}
    found = {t.function for t in core} - broken
    any_working = any(t.passed for t in entry if t.kind not in GATED)
    return frozenset(found | {""}) if any_working else frozenset(found)


def tallies(records: Iterable[TestRecord], promises: Mapping[str, Promise]) -> list[Tally]:
    """The records of one entry, tallied per promise (each record naming none a tally of its own)."""
    counts: dict[str, list[int]] = {}
    terms: dict[str, tuple[str, str, int | float]] = {}
    for record in records:
        key = record.promise or f"unmarked {record.nodeid}"
        if record.promise:
            if record.promise not in promises:
                raise KitError(f"{record.nodeid} names the promise {record.promise!r}, which the kit lacks")
            promise = promises[record.promise]
            terms[key] = (promise.function, promise.kind, promise.weight)
        else:
            terms[key] = ("", "value", 1)
        count = counts.setdefault(key, [0, 0])
        count[0] += 1
        count[1] += record.passed
    return [Tally(*terms[key], checks, passed) for key, (checks, passed) in counts.items()]


def entry_score(
    points: float,
    entry: Iterable[Tally],
    proven: frozenset[str] | None = None,
    computing: frozenset[str] | None = None,
) -> float:
    """What an entry worth `points` earns: each promise its weight's share of the points, earned in
    proportion to its checks that passed; an error, unchanged or form promise's only where a value, edge
    or rng promise of the same function has a check that passed; with `proven` (the functions the
    hidden checks show working: `working`), a promise's only where its function is there; with
    `computing` (the hidden entry's own `working`), a promise that is not core (`is_core`) only where its
    function is there, and a function not there at most BROKEN_MOST of its weight. Rounded to 0.01;
    every check earning: `points` exactly."""
    entry = list(entry)
    earning = {t.function for t in entry if t.kind not in GATED and t.passed}

    def earns(t: Tally) -> bool:
        if t.kind in GATED and t.function not in earning:
            return False
        if proven is not None and t.function not in proven:
            return False
        return computing is None or t.function in computing or is_core(t, entry)

    weight = sum(Fraction(t.weight) for t in entry)
    credits: dict[str, Fraction] = {}
    weights: dict[str, Fraction] = {}
    for t in entry:
        weights[t.function] = weights.get(t.function, Fraction(0)) + Fraction(t.weight)
        if earns(t):
            credits[t.function] = (
                credits.get(t.function, Fraction(0)) + Fraction(t.weight) * t.passed / t.checks
            )
    if computing is not None:  # a function that does not compute keeps at most BROKEN_MOST of its weight
        credits = {f: c if f in computing else min(c, BROKEN_MOST * weights[f]) for f, c in credits.items()}
    credit = sum(credits.values(), Fraction(0))
    if not weight or credit == weight:
        return cents(points) if weight else 0.0
    # In this order a suite of unmarked checks (each weight 1) scores as points * passed / checks did.
    return cents(points * float(credit) / float(weight))


def split_points(exercise: Exercise, counts: list[int]) -> list[float]:
    """The maximum of each of an exercise's entries (visible first, then hidden), given how many checks
    each has: they add up to the exercise's points exactly, each with at most two decimals."""
    if len(counts) == 1:
        return [cents(exercise.points)]
    if exercise.visible_points is not None:
        first = cents(exercise.visible_points)
    else:
        first = cents(exercise.points * counts[0] / sum(counts))
    return [first, cents(exercise.points - first)]


def total(scores: Iterable[SuiteScore]) -> tuple[float, float]:
    """(points earned, points possible)."""
    scores = list(scores)
    return cents(sum(s.score for s in scores)), cents(sum(s.max_score for s in scores))


def cents(points: float) -> float:
    """Points rounded to 0.01 (and -0.0 as 0.0)."""
    return round(points, 2) + 0.0


def points_text(points: float) -> str:
    """Points as every output prints them: at most two decimals, no trailing zeros ("2", "2.1", "1.71")."""
    return f"{cents(points):.2f}".rstrip("0").rstrip(".")
