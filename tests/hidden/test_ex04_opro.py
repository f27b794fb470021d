"""Exercise 4: opro_prompt and parse_opro_prompt (hidden checks: reference comparisons and properties)."""

import re

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_equal, expect_pinned, expect_true

pytestmark = pytest.mark.exercise(4)

# Instruction texts on one line: no line breaks (no \n, \r or other control character but \t, no line or
# paragraph separator).
EDGE_TEXTS = ("", " ", "  Solve units ", "Solve\tunits", "text: nested", "score: 0.50", "Solve: 1.00 units")
texts = st.one_of(
    st.sampled_from(EDGE_TEXTS),
    st.lists(
        st.sampled_from(("Solve", "the", "task.", "units", "dates", "carefully", "step")), max_size=5
    ).map(" ".join),
    st.text(st.characters(blacklist_categories=("Cc", "Cs", "Zl", "Zp")), max_size=20),
)
# Scores that round alike at 2 decimals (0.455 and 0.4549...) and exact ties often.
scores = st.one_of(
    st.sampled_from((0.0, 0.25, 0.5, 0.75, 1.0, 0.125, 0.455, 0.005, 0.995)), st.floats(0.0, 1.0)
)
# Empty and one-entry histories, and histories with many equal scores (ties at the cut of the top k).
histories = st.one_of(
    st.lists(st.tuples(texts, scores), max_size=1),
    st.lists(st.tuples(texts, st.sampled_from((0.25, 0.5))), min_size=2, max_size=10),
    st.lists(st.tuples(texts, scores), max_size=10),
)
ks = st.one_of(st.none(), st.integers(1, 12))


def _prompt(fn, history, k):
    return fn(history) if k is None else fn(history, k=k)


def _what(history, k):
    return call("opro_prompt", history) if k is None else call("opro_prompt", history, k=k)


def _top(history, k):
    """The pairs the prompt shows: a stable ascending sort by score, then the last k (default 6)."""
    return sorted(history, key=lambda h: h[1])[-(6 if k is None else k) :]


@pytest.mark.promise("opro_prompt.format")
@given(histories, ks)
def test_prompt_matches_reference(student, reference, history, k):
    """The meta-prompt is the reference's text, character for character"""
    expect_equal(
        _prompt(student.opro_prompt, history, k),
        _prompt(reference.opro_prompt, history, k),
        _what(history, k),
    )


@pytest.mark.promise("opro_prompt.top_k")
@given(histories, ks)
@example([("a", 0.1), ("b", 0.9), ("c", 0.3), ("d", 0.7)], 2)
def test_prompt_shape(student, reference, history, k):
    """The header line comes first, then text/score line pairs of the top k, scores with 2 decimals,
    ascending, best last"""
    what = _what(history, k)
    prompt = _prompt(student.opro_prompt, history, k)
    expect_true(isinstance(prompt, str), what, f"got {prompt!r}, not a str")
    lines = prompt.split("\n")
    header = reference.opro_prompt([])
    expect_equal(lines[0], header, what + ": the first line")
    top = _top(history, k)
    expect_equal(
        len(lines), 1 + 2 * len(top), what + f": number of lines (header + 2 per pair)\n  prompt: {prompt!r}"
    )
    shown = []
    for text_line, score_line in zip(lines[1::2], lines[2::2], strict=True):
        expect_true(text_line.startswith("text: "), what, f"{text_line!r} should start with 'text: '")
        expect_true(
            re.fullmatch(r"score: \d+\.\d\d", score_line) is not None,
            what,
            f"{score_line!r} should be 'score: ' and a number with 2 decimals",
        )
        shown.append(float(score_line[len("score: ") :]))
    expect_true(shown == sorted(shown), what, f"scores not ascending: {shown}")
    if top:
        expect_close(
            shown[-1], round(max(s for _, s in history), 2), what + ": the last (best) score", rel=0, abs=1e-9
        )


@pytest.mark.promise("parse_opro_prompt.pairs")
@given(histories, ks)
@example([("  Solve units ", 0.5), ("text: nested", 0.25), ("Solve: 1.00 units", 0.75)], None)
def test_round_trip(student, history, k):
    """Parsing the meta-prompt gives back the top-k (text, score rounded to 2 decimals) pairs, ascending"""
    prompt = _prompt(student.opro_prompt, history, k)
    want = [(text, round(score, 2)) for text, score in _top(history, k)]
    got = student.parse_opro_prompt(prompt)
    expect_close(
        got,
        want,
        f"parse_opro_prompt(opro_prompt(...)) for {_what(history, k)}\n  prompt: {prompt!r}",
        rel=0,
        abs=1e-9,
    )


@pytest.mark.promise("parse_opro_prompt.pairs")
@given(histories, ks)
def test_parse_matches_reference(student, reference, history, k):
    """parse_opro_prompt reads the reference's meta-prompts like the reference does"""
    prompt = _prompt(reference.opro_prompt, history, k)
    expect_close(
        student.parse_opro_prompt(prompt),
        reference.parse_opro_prompt(prompt),
        call("parse_opro_prompt", prompt),
        rel=0,
        abs=1e-12,
    )


@pytest.mark.promise("opro_prompt.stable_ties")
@given(st.lists(texts, max_size=10), scores, ks)
@example(["first", "second", "third", "fourth"], 0.5, 2)
def test_equal_scores_keep_history_order(student, names, score, k):
    """Instructions with equal scores keep their order in the history (a stable sort)"""
    history = [(text, score) for text in names]
    prompt = _prompt(student.opro_prompt, history, k)
    want = [text for text, _ in _top(history, k)]
    got = [line[len("text: ") :] for line in prompt.split("\n")[1::2]]
    expect_equal(got, want, _what(history, k) + f": the texts shown, in order\n  prompt: {prompt!r}")


def _pin(student, reference):
    """The check below also pins two prompts and their parses: a call that changes nothing satisfies it."""
    history = [("Solve units", 0.5), ("Solve", 0.25), ("Solve dates", 0.75)]
    expect_pinned(student, reference, "opro_prompt", (history,), (history, 2))
    prompt = reference.opro_prompt(history)
    expect_pinned(student, reference, "parse_opro_prompt", (prompt,), (reference.opro_prompt(history, 1),))


@pytest.mark.promise("opro_prompt.empty_history")
@given(ks)
@settings(max_examples=3)  # only k varies
def test_an_empty_history_gives_the_header_alone(student, reference, k):
    """An empty history gives the first line alone, with no newline (and one entry gives more)"""
    header = reference.opro_prompt([])
    expect_equal(_prompt(student.opro_prompt, [], k), header, _what([], k))
    one = [("Solve units", 0.5)]
    got = _prompt(student.opro_prompt, one, k)
    expect_true(got != header, _what(one, k), f"got the header alone: {got!r}")


PAIRLESS = (
    "",
    "Here are earlier instructions and their scores. Write a new instruction that scores higher.",
    "text: Solve units",
    "score: 0.50\ntext: Solve units",
    "text: Solve units\n\nscore: 0.50",
    "text: Solve units\nnote: 0.50",
)


@pytest.mark.promise("parse_opro_prompt.no_pairs")
@given(st.sampled_from(PAIRLESS))
@example(PAIRLESS[3])
def test_a_prompt_without_pairs_gives_nothing(student, prompt):
    """A prompt without a "text: " line followed by a "score: " line gives [] (and with one such pair
    after it, that pair alone)"""
    expect_equal(student.parse_opro_prompt(prompt), [], call("parse_opro_prompt", prompt))
    paired = prompt + "\ntext: Solve units\nscore: 0.50"
    got = student.parse_opro_prompt(paired)
    expect_close(got, [("Solve units", 0.5)], call("parse_opro_prompt", paired), rel=0, abs=1e-12)


@pytest.mark.promise("opro_prompt.unchanged")
@given(histories, ks)
@example([("b", 0.75), ("a", 0.25)], None)
@settings(max_examples=3)  # the @example walks the whole path; a change shows at once
def test_history_is_not_changed(student, reference, history, k):
    """history is not changed by the call"""
    _pin(student, reference)
    given_history = list(history)
    _prompt(student.opro_prompt, given_history, k)
    expect_true(
        given_history == history and not student.last_changed,
        _what(history, k),
        f"the call changed history (to {given_history!r})",
    )
