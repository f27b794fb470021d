"""Exercise 7: GEPA reflection (`reflect_update`), the mock reflection LM.

It reads the failing traces of one module. A failure whose feedback says "fail: kind X needs the rule 'w'"
asks for the word w; the word asked for most often (ties: alphabetical) that the instruction does not
already contain is appended, after stripping a trailing '.'.
"""

import pytest

from grader.expect import call, expect_equal

pytestmark = pytest.mark.exercise(7)

MODULE_OF = {"A": "parse", "B": "parse", "C": "parse", "D": "answer", "E": "answer", "F": "answer"}
RULES = {"A": "units", "B": "negatives", "C": "dates", "D": "abbrev", "E": "currency", "F": "ties"}


def trace(lab, kind, correct=False, noise=False, i=0):
    """A trace as rollout makes it: failing traces ask for the rule of their kind (or call the miss noise)."""
    module, word = MODULE_OF[kind], RULES[kind]
    if correct:
        feedback = f"ok: kind {kind} ({word}) was right"
    elif noise:
        feedback = f"fail: kind {kind}: the rule '{word}' is stated, so this miss looks like noise"
    else:
        feedback = (
            f"fail: kind {kind} needs the rule '{word}', and the {module} instruction does not mention it"
        )
    answer = 2
    return lab.Trace(
        lab.Example(i, kind, answer),
        module,
        answer if correct else 3,
        correct,
        feedback,
        f"think about kind {kind}, then answer {answer if correct else 3}",
        40,
    )


def kinds(traces):
    return [(t.example.kind, "ok" if t.correct else t.feedback.split(",")[0]) for t in traces]


@pytest.mark.promise("reflect_update.most_asked")
def test_adds_the_rule_asked_for_most_often(lab, student):
    """Two failures ask for 'units', one for 'dates': 'units' is added, after the trailing '.' goes. Two
    for 'dates' and one for 'units': 'dates' is added."""
    traces = [
        trace(lab, "C", i=0),
        trace(lab, "A", i=1),
        trace(lab, "A", i=2),
        trace(lab, "B", correct=True, i=3),
    ]
    got = student.reflect_update("Solve the task.", traces, "parse")
    expect_equal(
        got, "Solve the task units", call("reflect_update", "Solve the task.", kinds(traces), "parse")
    )
    traces = [trace(lab, "C", i=0), trace(lab, "A", i=1), trace(lab, "C", i=2)]
    got = student.reflect_update("Solve the task.", traces, "parse")
    expect_equal(
        got, "Solve the task dates", call("reflect_update", "Solve the task.", kinds(traces), "parse")
    )


@pytest.mark.promise("reflect_update.ties_alphabetical")
def test_ties_go_to_the_alphabetically_first_word(lab, student):
    """One failure each for 'units' and 'dates': 'dates' comes first in the alphabet."""
    traces = [trace(lab, "A", i=0), trace(lab, "C", i=1)]
    got = student.reflect_update("Solve", traces, "parse")
    expect_equal(got, "Solve dates", call("reflect_update", "Solve", kinds(traces), "parse"))


@pytest.mark.promise("reflect_update.skips_present_words")
def test_skips_words_the_instruction_already_has(lab, student):
    """'units' is asked for most, but the instruction has it already: the next word, 'negatives', is added."""
    traces = [trace(lab, k, i=i) for i, k in enumerate("AAAB")]
    got = student.reflect_update("Solve units carefully.", traces, "parse")
    expect_equal(
        got,
        "Solve units carefully negatives",
        call("reflect_update", "Solve units carefully.", kinds(traces), "parse"),
    )


@pytest.mark.promise("reflect_update.this_module_only")
def test_only_failures_of_this_module_count(lab, student):
    """Traces of the other module are ignored, however many there are."""
    traces = [trace(lab, k, i=i) for i, k in enumerate("AAAFCE")]
    got = student.reflect_update("Solve the task.", traces, "answer")
    # answer failures: F asks for 'ties', E for 'currency': a tie, and 'currency' comes first.
    expect_equal(
        got, "Solve the task currency", call("reflect_update", "Solve the task.", kinds(traces), "answer")
    )


@pytest.mark.promise("reflect_update.noise_asks_nothing")
def test_noise_asks_for_nothing(lab, student):
    """A noise failure asks for nothing, even where the instruction given does not name its rule."""
    traces = [trace(lab, "C", noise=True, i=0), trace(lab, "C", noise=True, i=1)]
    got = student.reflect_update("Solve units carefully.", traces, "parse")
    expect_equal(
        got,
        "Solve units carefully.",
        call("reflect_update", "Solve units carefully.", kinds(traces), "parse"),
    )


@pytest.mark.promise("reflect_update.unchanged_as_was")
def test_unchanged_when_no_failure_names_a_missing_rule(lab, student):
    """Noise failures, correct traces, no traces: the instruction comes back unchanged, '.' and all."""
    cases = [
        [trace(lab, "A", noise=True, i=0)],  # noise asks for nothing
        [trace(lab, "A", correct=True, i=0), trace(lab, "D", i=1)],  # D belongs to the answer module
        [trace(lab, "A", i=0)],  # asks for 'units', which is there already
        [],
    ]
    for traces in cases:
        got = student.reflect_update("Solve units carefully.", traces, "parse")
        expect_equal(
            got,
            "Solve units carefully.",
            call("reflect_update", "Solve units carefully.", kinds(traces), "parse"),
        )
    # against these: a failure that names a missing rule does change it
    traces = [trace(lab, "A", noise=True, i=0), trace(lab, "B", i=1)]
    got = student.reflect_update("Solve units carefully.", traces, "parse")
    expect_equal(
        got,
        "Solve units carefully negatives",
        call("reflect_update", "Solve units carefully.", kinds(traces), "parse"),
    )
