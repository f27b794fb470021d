"""Scores: the manifest's points, shared out over each exercise's tests.

Every test of an exercise is worth the same share of its points, visible and hidden alike, so an
exercise's visible entry is worth points * visible tests / all its tests. A test that did not pass
(failed, errored, skipped or missing from the run) earns nothing. An exercise with no test at all is
reported, never scored as a silent zero.
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
        share = exercise.points / len(mine)
        for suite in suites:
            in_suite = tuple(r for r in mine if r.suite == suite)
            if in_suite:
                earned = share * sum(r.passed for r in in_suite)
                out.append(
                    SuiteScore(exercise, suite, in_suite, round(earned, 6), round(share * len(in_suite), 6))
                )
    return out


def total(scores: Iterable[SuiteScore]) -> tuple[float, float]:
    """(points earned, points possible)."""
    scores = list(scores)
    return round(sum(s.score for s in scores), 6), round(sum(s.max_score for s in scores), 6)
