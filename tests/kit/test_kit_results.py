"""results.json's top-level output, which students see at once: hidden checks' counts, points and the
total that includes them appear there only where the manifest shows hidden entries at once too."""

from __future__ import annotations

import pytest

from grader.manifest import Exercise, Manifest
from grader.results import results_document
from grader.scoring import score_suites
from grader.suites import TestRecord


def document(visibility: str) -> dict:
    """One exercise worth 4 points: visible checks 2 of 2 passed, hidden checks 1 of 2."""
    exercise = Exercise(1, "double", "1. numbers", ("double",), 4, visibility, "property")
    outcomes = [("visible", True), ("visible", True), ("hidden", True), ("hidden", False)]
    records = [
        TestRecord(f"tests/{suite}/t.py::test_{i}", 1, suite, ok, "passed" if ok else "failed", "p", "")
        for i, (suite, ok) in enumerate(outcomes)
    ]
    return results_document(score_suites(Manifest("optimization_toolkit", (exercise,)), records))


@pytest.mark.parametrize(
    ("visibility", "when", "cell"),
    [
        ("after_published", "when grades are published", "later"),
        ("after_due_date", "after the due date", "later"),
        ("hidden", "to your instructors only", "not shown"),
    ],
)
def test_hidden_results_stay_out_of_the_summary_until_their_entries_show(visibility, when, cell):
    doc = document(visibility)
    assert doc["score"] == 3.0  # the grade itself counts every check
    output = doc["output"]
    assert "**Visible checks: 2 / 2**" in output and f"shown {when}" in output
    assert f"| 1 double | 2/2 | {cell} | 2 / 2 |" in output
    assert "1/2" not in output and "3 / 4" not in output and "Score" not in output
    hidden = next(t for t in doc["tests"] if t["name"].endswith("hidden checks"))
    assert hidden["visibility"] == visibility


def test_visible_hidden_results_are_summed_up_at_once():
    output = document("visible")["output"]
    assert "**Score: 3 / 4**" in output and "| 1 double | 2/2 | 1/2 | 3 / 4 |" in output
