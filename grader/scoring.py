"""Scores: the manifest's points, shared out over each exercise's entries, in points a person can read.

An exercise's points are split between its visible and hidden entries: as the manifest's
`visible_points` says, else by number of checks (points * visible checks / all its checks, rounded to
0.01), the remainder on the hidden entry, so the entries add up to the exercise's points exactly.
Within an entry every check is worth the same; an entry's score is rounded to 0.01 (every passed: its
maximum exactly). A test that did not pass (failed, errored, skipped or missing from the run) earns
nothing. An exercise with no test at all is reported, never scored as a silent zero. Every output prints
points one way: `points_text`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from grader.errors import KitError
from grader.layout import SUITES
from grader.manifest import Exercise, Manifest
from grader.suites import TestRecord


@dataclass(frozen=True)
class SuiteScore:
    """One exercise's tests of one suite, and what they earned."""

    exercise: Exercise
    suite: str
    records: tuple[TestRecord, ...]
    score: float
    max_score: float

    @property
    def passed(self) -> int:
        return sum(r.passed for r in self.records)

    @property
    def name(self) -> str:
        """The entry's name as students see it: "12 group advantages: visible checks"."""
        return f"{self.exercise.label}: {self.suite} checks"


class UnscoredExercise(KitError):
    """An exercise of the manifest with no test in the suites: the kit is broken, not the submission."""


def score_suites(
    manifest: Manifest, records: Iterable[TestRecord], suites: Iterable[str] = SUITES
) -> list[SuiteScore]:
    """One SuiteScore per exercise and suite, in manifest order, visible before hidden."""
    records = list(records)
    suites = list(suites)
    out = []
    for exercise in manifest.exercises:
        mine = [r for r in records if r.exercise == exercise.id]
        if not mine:
            raise UnscoredExercise(f"exercise {exercise.label} has no tests")
        groups = [(suite, tuple(r for r in mine if r.suite == suite)) for suite in suites]
        groups = [(suite, in_suite) for suite, in_suite in groups if in_suite]
        maxima = split_points(exercise, [len(in_suite) for _, in_suite in groups])
        for (suite, in_suite), most in zip(groups, maxima, strict=True):
            earned = cents(most * sum(r.passed for r in in_suite) / len(in_suite))
            out.append(SuiteScore(exercise, suite, in_suite, earned, most))
    return out


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
