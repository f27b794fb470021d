"""Exercise 5: tg_step, one step of textual gradient descent (visible examples).

graph is a list of (module, TGVar). For each variable that may change (requires_grad) and has
gradients ("consider naming: w1, w2, ..."), count how often each word is asked for across all of its
gradients, take the most asked word that is not already a word of its value (ties: alphabetical),
strip a trailing "." from the value and append " " + word. Every variable's gradients are cleared.
The result lists the modules that changed, in graph order.
"""

import pytest

from grader.expect import expect_equal

pytestmark = pytest.mark.exercise(5)


def _state(graph):
    return [(module, var.value, var.grads) for module, var in graph]


def _step(student, graph):
    """Call tg_step(graph); returns (result, what) with `what` showing the graph before the call."""
    what = f"tg_step(graph)\n  graph = {graph!r}"
    return student.tg_step(graph), what


@pytest.mark.promise("tg_step.most_asked_word")
def test_adds_the_most_asked_word(student, lab):
    """'units' is asked for twice (across both gradients), 'dates' once: 'units' is added after one space;
    in the answer module 'abbrev' is asked twice, 'ties' once. Both modules changed (the result sorted
    here; its order is checked below)."""
    parse = lab.TGVar(
        "Solve the task", "parse", True, ["consider naming: dates, units", "consider naming: units"]
    )
    answer = lab.TGVar(
        "Solve the task", "answer", True, ["consider naming: ties, abbrev", "consider naming: abbrev"]
    )
    graph = [("parse", parse), ("answer", answer)]
    got, what = _step(student, graph)
    expect_equal(sorted(got), ["answer", "parse"], what + " (sorted)")
    # the caller's own TGVar objects change
    expect_equal(
        [parse.value, answer.value],
        ["Solve the task units", "Solve the task abbrev"],
        what + ": the values after the step",
    )
    expect_equal([parse.grads, answer.grads], [[], []], what + ": the gradients after the step")


@pytest.mark.promise("tg_step.most_asked_word")
def test_skips_words_already_in_the_value(student, lab):
    """'currency' is asked most but already named, so 'ties' is added; 'Solve' becomes 'Solve units'.
    Both modules changed (the result sorted here)."""
    answer = lab.TGVar(
        "Solve currency", "answer", True, ["consider naming: currency, ties", "consider naming: currency"]
    )
    parse = lab.TGVar("Solve", "parse", True, ["consider naming: units"])
    graph = [("answer", answer), ("parse", parse)]
    got, what = _step(student, graph)
    expect_equal(sorted(got), ["answer", "parse"], what + " (sorted)")
    expect_equal(
        _state(graph),
        [("answer", "Solve currency ties", []), ("parse", "Solve units", [])],
        what + ": (module, value, grads) after the step",
    )


@pytest.mark.promise("tg_step.ties_alphabetical")
def test_ties_go_alphabetically(student, lab):
    """'ties' and 'abbrev' are asked for equally often: 'abbrev', alphabetically first, is added."""
    answer = lab.TGVar("Solve the task", "answer", True, ["consider naming: ties, abbrev"])
    graph = [("answer", answer)]
    _, what = _step(student, graph)
    expect_equal(answer.value, "Solve the task abbrev", what + ": the value after the step")


@pytest.mark.promise("tg_step.changed_in_graph_order")
def test_the_result_follows_the_graph_order(student, lab):
    """Both modules change: the result lists them in the graph's order (answer first here)."""
    graph = [
        ("answer", lab.TGVar("Solve", "answer", True, ["consider naming: ties"])),
        ("parse", lab.TGVar("Solve", "parse", True, ["consider naming: units"])),
    ]
    got, what = _step(student, graph)
    expect_equal(got, ["answer", "parse"], what)


@pytest.mark.promise("tg_step.frozen_unchanged")
def test_frozen_variables_and_no_fresh_word(student, lab):
    """requires_grad=False: the value never changes (its gradients are still cleared). A variable whose
    asked words are all in its value does not change and is not listed."""
    graph = [
        ("parse", lab.TGVar("Solve units", "parse", False, ["consider naming: dates"])),
        (
            "answer",
            lab.TGVar(
                "Solve abbrev ties",
                "answer",
                True,
                ["consider naming: ties", "consider naming: abbrev, ties"],
            ),
        ),
    ]
    got, what = _step(student, graph)
    expect_equal(got, [], what)
    expect_equal(
        _state(graph),
        [("parse", "Solve units", []), ("answer", "Solve abbrev ties", [])],
        what + ": (module, value, grads) after the step",
    )


@pytest.mark.promise("tg_step.most_asked_word")
def test_counts_across_all_gradients(student, lab):
    """'abbrev' is asked in three gradients, 'currency' in two, 'ties' in one (the first word of the first
    gradient is not what counts). A variable with no gradients does not change."""
    graph = [
        ("parse", lab.TGVar("Solve units", "parse", True, [])),
        (
            "answer",
            lab.TGVar(
                "Solve the task",
                "answer",
                True,
                [
                    "consider naming: ties, currency, abbrev",
                    "consider naming: currency, abbrev",
                    "consider naming: abbrev",
                ],
            ),
        ),
    ]
    got, what = _step(student, graph)
    expect_equal(got, ["answer"], what)
    expect_equal(
        _state(graph),
        [("parse", "Solve units", []), ("answer", "Solve the task abbrev", [])],
        what + ": (module, value, grads) after the step",
    )


@pytest.mark.promise("tg_step.trailing_period")
def test_the_trailing_period_goes(student, lab):
    """Every trailing '.' of the value goes before the word is added ('Solve the task.' becomes 'Solve
    the task units', 'Solve...' becomes 'Solve dates'); a '.' inside the value stays."""
    graph = [
        ("parse", lab.TGVar("Solve the task.", "parse", True, ["consider naming: units"])),
        ("answer", lab.TGVar("Solve...", "answer", True, ["consider naming: dates"])),
        ("plan", lab.TGVar("Solve e.g. this", "plan", True, ["consider naming: ties"])),
    ]
    got, what = _step(student, graph)
    expect_equal(
        [var.value for _, var in graph],
        ["Solve the task units", "Solve dates", "Solve e.g. this ties"],
        what + ": the values after the step",
    )
