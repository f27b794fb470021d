"""The record of one suite test, as a test run reports it and grading reads it.

The record of one suite test, as a test run reports it and grading reads it: its exercise and suite,
its outcome, the property and promise it checks, the failure message. Scoring, results, the inventory and
rescoring read records; grader.grading.suites makes them. A leaf: it imports nothing of the kit.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

# pytest's outcomes as pytest-json-report writes them, and "missing": a test the run did not report
TestOutcome = Literal["passed", "failed", "error", "skipped", "missing"]


@dataclass(frozen=True)
class TestRecord:
    """The outcome of one suite test."""

    __test__ = False  # not a pytest test class, though its name starts with Test

    nodeid: str
    exercise: int
    suite: str  # one of SUITES; "" if the test did not say
    passed: bool
    outcome: TestOutcome
    property: str  # first docstring line: what the test checks, without its inputs
    message: str  # the failure as pytest reported it ("" when passed)
    promise: str = ""  # the promise it checks, as the inventory says (never the run); "": it names none
    calls: tuple[str, ...] = ()  # the lab functions it called on the submission (with --record-calls)
    drawn: tuple[str, ...] = ()  # the declared domain features its calls' arguments had (--record-calls)
