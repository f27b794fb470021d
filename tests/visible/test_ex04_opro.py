"""Exercise 4: opro_prompt and parse_opro_prompt, the OPRO meta-prompt (visible examples).

The meta-prompt is the header line, then for each of the k best (text, score) pairs, in ascending
order of score (so the best is last; equal scores keep their order in the history), the two lines
"text: <text>" and "score: <score with 2 decimals>", all joined with "\\n" (no trailing newline).
"""

import pytest

from grader.expect import call, expect_close, expect_equal

pytestmark = pytest.mark.exercise(4)

HEADER = "Here are earlier instructions and their scores. Write a new instruction that scores higher."


def _pairs(prompt):
    """The (text, score) pairs a prompt shows, read leniently: each "text: " line with the "score: " line
    right after it (blank lines skipped), whatever the layout around them."""
    lines = [line for line in str(prompt).split("\n") if line.strip()]
    return [
        (a[len("text: ") :], float(b[len("score: ") :]))
        for a, b in zip(lines, lines[1:], strict=False)
        if a.startswith("text: ") and b.startswith("score: ")
    ]


@pytest.mark.promise("opro_prompt.format")
def test_prompt_lists_instructions_ascending(student):
    """Three instructions, sorted by score; 0.456 is shown as 0.46, 0.5 as 0.50, 0.8125 as 0.81 (and two
    more)."""
    history = [("Solve the task.", 0.5), ("Solve units", 0.8125), ("Solve dates carefully", 0.456)]
    want = "\n".join(
        [
            HEADER,
            "text: Solve dates carefully",
            "score: 0.46",
            "text: Solve the task.",
            "score: 0.50",
            "text: Solve units",
            "score: 0.81",
        ]
    )
    expect_equal(student.opro_prompt(history), want, call("opro_prompt", history))
    history = [("Solve units", 0.7), ("Solve", 0.2)]
    want = "\n".join([HEADER, "text: Solve", "score: 0.20", "text: Solve units", "score: 0.70"])
    expect_equal(student.opro_prompt(history), want, call("opro_prompt", history))
    # k larger than the history: all of it
    expect_equal(student.opro_prompt(history, k=10), want, call("opro_prompt", history, k=10))


@pytest.mark.promise("opro_prompt.top_k")
def test_prompt_keeps_only_the_top_k(student):
    """k=3 of eight: the three best pairs are shown, ("d", 0.70), ("g", 0.80) and ("b", 0.90) (in any
    order and layout for this check)."""
    history = [("a", 0.1), ("b", 0.9), ("c", 0.3), ("d", 0.7), ("e", 0.5), ("f", 0.2), ("g", 0.8), ("h", 0.4)]
    prompt = student.opro_prompt(history, k=3)
    expect_close(
        sorted(_pairs(prompt)),
        [("b", 0.9), ("d", 0.7), ("g", 0.8)],
        call("opro_prompt", history, k=3) + f": the pairs shown\n  prompt: {prompt!r}",
        rel=0,
        abs=0.0051,
    )


@pytest.mark.promise("opro_prompt.ascending")
def test_prompt_lists_the_best_last(student):
    """Four pairs shown in ascending order of score: 0.10, 0.30, 0.70, 0.90 (the best last)."""
    history = [("a", 0.1), ("b", 0.9), ("c", 0.3), ("d", 0.7)]
    prompt = student.opro_prompt(history)
    expect_close(
        [score for _, score in _pairs(prompt)],
        [0.1, 0.3, 0.7, 0.9],
        call("opro_prompt", history) + f": the scores shown, in order\n  prompt: {prompt!r}",
        rel=0,
        abs=0.0051,
    )


@pytest.mark.promise("opro_prompt.stable_ties")
def test_prompt_equal_scores_keep_history_order(student):
    """A stable ascending sort, then the last k: of the three 0.5s, 'first' comes before 'third' and
    'fourth' (as in the history), and 'second' (0.25) is cut."""
    history = [("first", 0.5), ("second", 0.25), ("third", 0.5), ("fourth", 0.5)]
    prompt = student.opro_prompt(history, k=3)
    expect_equal(
        [text for text, _ in _pairs(prompt)],
        ["first", "third", "fourth"],
        call("opro_prompt", history, k=3) + f": the texts shown, in order\n  prompt: {prompt!r}",
    )


@pytest.mark.promise("opro_prompt.empty_history")
def test_prompt_of_an_empty_history_is_the_header(student):
    """No history: only the header line."""
    got = student.opro_prompt([])
    expect_equal(got.strip() if isinstance(got, str) else got, HEADER, call("opro_prompt", []))


@pytest.mark.promise("parse_opro_prompt.pairs")
def test_parse_reads_the_pairs_back(student):
    """parse_opro_prompt returns the (text, score) pairs in the order they appear, scores as floats;
    a prompt with no pairs gives an empty list."""
    prompt = "\n".join([HEADER, "text: Solve units", "score: 0.61", "text: Solve units dates", "score: 1.00"])
    expect_close(
        student.parse_opro_prompt(prompt),
        [("Solve units", 0.61), ("Solve units dates", 1.0)],
        call("parse_opro_prompt", prompt),
    )
    expect_close(student.parse_opro_prompt(HEADER), [], call("parse_opro_prompt", HEADER))


@pytest.mark.promise("parse_opro_prompt.pairs")
def test_round_trip(student):
    """parse_opro_prompt(opro_prompt(history)) gives the top-k pairs ascending, scores rounded to 2
    decimals."""
    history = [("Solve the task.", 0.5), ("Solve units", 0.8125), ("Solve dates carefully", 0.456)]
    prompt = student.opro_prompt(history, k=2)
    expect_close(
        student.parse_opro_prompt(prompt),
        [("Solve the task.", 0.5), ("Solve units", 0.81)],
        f"parse_opro_prompt(opro_prompt({history!r}, k=2))\n  the prompt was {prompt!r}",
    )
