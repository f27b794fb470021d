"""What a student reads (issue 26, item 3): the Gradescope summary and entries of results.json, and the
local verdict's words. The summary says what the total counts and when it shows; checks that failed the
same way are one line; one entry's output is bounded and says what was cut; a hidden entry names each
property once; a module that never imported is one headline (with its line, and a hint where it
imported a package that is not there); points print one way everywhere."""

from __future__ import annotations

import pytest

from grader.assignment.manifest import Exercise, Manifest
from grader.assignment.records import TestRecord
from grader.assignment.scoring import score_suites
from grader.grading.results import MAX_ENTRY_CHARS, results_document
from grader.runtime.protocol import IMPORT_FAILED, IMPORT_TIMED_OUT, STANDARD_LIBRARY_ONLY, import_headline

NOT_STARTED = (
    "E   NotImplementedError: exercise 1 (double): implement double\n    raised by the submission (line 9)"
)


def graded(outcomes: list[tuple[str, bool, str, str]], visibility: str = "after_published") -> dict:
    """results.json of one exercise worth 4 points: (suite, passed, property, pytest's message) per check."""
    exercise = Exercise(1, "double", "1. numbers", ("double",), 4, visibility, "property")
    records = [
        TestRecord(f"tests/{suite}/t.py::test_{i}", 1, suite, ok, "passed" if ok else "failed", prop, message)
        for i, (suite, ok, prop, message) in enumerate(outcomes)
    ]
    return results_document(score_suites(Manifest("optimization_toolkit", (exercise,)), records))


def entry(doc: dict, suite: str) -> str:
    return next(t["output"] for t in doc["tests"] if t["extra_data"]["suite"] == suite)


def test_the_summary_says_the_total_counts_the_hidden_checks_and_when_it_shows():
    """Gradescope shows a student no total while an entry is hidden from them; once grades are published
    it shows the top-level score, which counts the hidden checks: the summary says both (it said only
    "Visible checks: 2 / 2" beside a score of 3 of 4)."""
    doc = graded([("visible", True, "a", ""), ("visible", True, "b", ""), ("hidden", True, "c", ""),
                  ("hidden", False, "d", "E   AssertionError: no")])  # fmt: skip
    assert doc["score"] == 3.0
    assert "**Visible checks: 2 / 2**" in doc["output"]
    assert "Your total score, out of 4 points, counts both" in doc["output"]
    assert "once grades are published" in doc["output"]


def test_checks_that_failed_with_the_same_text_are_one_line():
    doc = graded([("visible", False, f"property {i}", NOT_STARTED) for i in range(5)])
    text = entry(doc, "visible")
    assert text.count("NotImplementedError") == 1  # was five times, one per check
    assert "- 5 checks: NotImplementedError: exercise 1 (double): implement double" in text


def test_one_entrys_output_is_bounded_and_says_what_was_cut():
    dump = "double([1.0, 2.0, 3.0]) returned a long list " * 60
    doc = graded([("visible", False, f"property {i}", f"E   AssertionError: {i}: {dump}") for i in range(5)])
    text = entry(doc, "visible")
    assert len(text) <= MAX_ENTRY_CHARS  # was 7,391 characters in one entry
    assert "more characters not shown: an entry shows at most 2,000)" in text


def test_a_hidden_entry_names_each_property_once():
    checks = [("hidden", False, "The front is never empty.", NOT_STARTED)] * 2
    checks += [("hidden", False, f"Property {i}.", NOT_STARTED) for i in range(6)]
    text = entry(graded(checks), "hidden")
    assert text.count("The front is never empty.") == 1
    assert "- failed: The front is never empty. (not implemented) (2 checks)" in text
    assert "... and 2 more failed checks" in text  # 5 lines shown, the rest counted by check


def test_a_module_that_never_imported_is_one_headline_in_the_summary():
    why = "NameError: name 'lr' is not defined (line 26, in <module>)"
    message = f"E   grader.runtime.protocol.SubmissionError: {IMPORT_FAILED}{why}"
    doc = graded(
        [("visible", False, "a", message), ("visible", False, "b", message), ("hidden", False, "c", message)]
    )
    headline = (
        "Your module could not be imported at line 26 of optimization_toolkit.py: NameError: name 'lr' is"
    )
    assert doc["output"].count(headline) == 1, doc["output"]


@pytest.mark.parametrize(
    ("failure", "headline"),
    [
        (f"SubmissionError: {IMPORT_FAILED}ZeroDivisionError: division by zero (line 3, in <module>)",
         "Your module could not be imported at line 3 of optimization_toolkit.py: ZeroDivisionError: "
         "division by zero. No check could call it."),
        (f"CallTimedOut: {IMPORT_TIMED_OUT}it used 10 s of CPU time (an endless loop?) (line 7, in <module>)",
         "Your module did not finish importing at line 7 of optimization_toolkit.py: it used 10 s of CPU "
         "time (an endless loop?). No check could call it."),
        (f"CallTimedOut: {IMPORT_TIMED_OUT}it was still running after 40 s",
         "Your module did not finish importing: it was still running after 40 s. No check could call "
         "it."),
        (f"SubmissionError: {IMPORT_FAILED}ModuleNotFoundError: No module named 'numpy' (line 1, in <m>)",
         "Your module could not be imported at line 1 of optimization_toolkit.py: ModuleNotFoundError: No "
         f"module named 'numpy' ({STANDARD_LIBRARY_ONLY}). No check could call it."),
        ("AssertionError: softmax([1.0]) returned [2.0]", None),
    ],
)  # fmt: skip
def test_the_import_headline_says_what_happened_and_where(failure, headline):
    assert import_headline(failure) == headline
