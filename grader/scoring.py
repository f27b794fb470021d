"""Scores: the manifest's points, shared out over each exercise's entries and promises, in points a person
can read.

An exercise's points are split between its visible and hidden entries: as the manifest's
`visible_points` says, else by number of checks (points * visible checks / all its checks, rounded to
0.01), the remainder on the hidden entry, so the entries add up to the exercise's points exactly.
Within an entry, its points split over the promises its checks name (grader.promises), by their
weights, and a promise's share splits equally over its checks in that entry. A check of an `error` or
`unchanged` promise earns only when a check of a value, edge or rng promise of the same function, in the
same entry, passes: code that raises on every input, or returns without touching its arguments, earns
nothing. Where an exercise's hidden checks ran too, a visible check earns only where more than half
the hidden checks of value promises of the same function pass (a function with none: of its edge and
rng promises; an unmarked check: where any hidden check of a working kind passes): the visible inputs
and answers are in the handout, so code that only recalls them (a table of the visible tests' answers:
21.96 of 100 points before, with every hidden check failed), and beside it answers only the cheap
cases (a single element, equal inputs), earns nothing. The gate counts in the total; a page shows it
where the hidden results are shown (`own_score`: what the visible entry's checks earn on their own,
all a page may show before). A check that names no promise (a suite not yet
annotated) is a promise of its own, of weight 1. An entry's score is rounded to 0.01 (every check earning: its
maximum exactly). A test that did not pass (failed, errored, skipped or missing from the run) earns
nothing. An exercise with no test at all is reported, never scored as a silent zero. Every output prints
points one way: `points_text`.

The rule itself (`entry_score`) works on tallies per promise, so that the student's local verdict
(grader.local, shipped in the handout without the manifest or the hidden checks) scores exactly as
grading does; `score_suites` scores records, from a test run or rebuilt from a kept results.json.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import TYPE_CHECKING

from grader.errors import KitError
from grader.layout import SUITES
from grader.promises import GATED

if TYPE_CHECKING:  # only their attributes are read: this module ships in the handout without them
    from grader.manifest import Exercise, Manifest
    from grader.promises import Promise
    from grader.suites import TestRecord


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
        gate = proven if suite != HIDDEN else None
        withheld = () if gate is None else tuple(sorted({t.function for t in entry if t.passed} - gate))
        own = None if gate is None else entry_score(most, entry)
        score = entry_score(most, entry, gate)
        out.append(SuiteScore(exercise, suite, in_suite, score, most, withheld, own))
    return out


VALUE = "value"  # the kind whose checks say a function computes what its docstring says


def working(entry: Iterable[Tally]) -> frozenset[str]:
    """The functions of which more than half the checks of value promises in `entry` pass (a function
    with none: of its edge and rng checks); "" (what an unmarked check names: a suite not yet
    annotated) where any check of a working kind passes, as before. One passing check was enough for
    every function: a table of the visible answers beside a softmax that only ranked the logits (equal
    ones: 1/n each) passed 2 of its 4 hidden value checks and 3 of its edge checks, and earned 2.46 of
    3 points, the visible 1.07 included."""
    entry = [t for t in entry if t.kind not in GATED]
    valued = {t.function for t in entry if t.kind == VALUE}
    counts: dict[str, list[int]] = {}
    for t in entry:
        if t.kind == VALUE or t.function not in valued:
            count = counts.setdefault(t.function, [0, 0])
            count[0] += t.checks
            count[1] += t.passed
    found = {function for function, (checks, passed) in counts.items() if function and 2 * passed > checks}
    return frozenset(found | {""}) if any(t.passed for t in entry) else frozenset(found)


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


def entry_score(points: float, entry: Iterable[Tally], proven: frozenset[str] | None = None) -> float:
    """What an entry worth `points` earns: each promise its weight's share of the points, earned in
    proportion to its checks that passed; an error or unchanged promise's only where a value, edge or rng
    promise of the same function has a check that passed; with `proven` (the functions the hidden
    checks show working: `working`), a promise's only where its function is there. Rounded to 0.01;
    every check earning: `points` exactly."""
    entry = list(entry)
    earning = {t.function for t in entry if t.kind not in GATED and t.passed}
    weight = sum(Fraction(t.weight) for t in entry)
    credit = sum(
        (
            Fraction(t.weight) * t.passed / t.checks
            for t in entry
            if (t.kind not in GATED or t.function in earning) and (proven is None or t.function in proven)
        ),
        Fraction(0),
    )
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
