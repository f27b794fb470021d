"""Exercise 4: opro_prompt and parse_opro_prompt (hidden checks: reference comparisons and properties).

Each check of opro_prompt reads one thing: which pairs it shows (read leniently, whatever the layout),
their order, or the exact text (against the layout of the student's own pairs), so one slip of layout
or order costs its own promise, not every check of the function.
"""

import weakref

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_equal, expect_pinned, expect_true

pytestmark = pytest.mark.exercise(4)

HEADER = "Here are earlier instructions and their scores. Write a new instruction that scores higher."
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
# Distinct scores, two decimals apart at least (what is shown tells them apart), longer than k often:
# which pairs are the k best, and in which order, is then the one answer whatever a sort does with ties.
distinct_histories = st.lists(
    st.tuples(texts, st.integers(0, 100).map(lambda c: c / 100)),
    min_size=2,
    max_size=10,
    unique_by=lambda h: h[1],
)
ks = st.one_of(st.none(), st.integers(1, 12))
small_ks = st.one_of(st.none(), st.integers(1, 4))


def _prompt(fn, history, k):
    return fn(history) if k is None else fn(history, k=k)


def _what(history, k):
    return call("opro_prompt", history) if k is None else call("opro_prompt", history, k=k)


def _top(history, k):
    """The pairs the prompt shows: a stable ascending sort by score, then the last k (default 6)."""
    return sorted(history, key=lambda h: h[1])[-(6 if k is None else k) :]


def _shown(prompt):
    """The (text, score) pairs a prompt shows, read leniently: every "text:" line (one space after the
    colon dropped) with the next "score:" line after it, blank lines between them skipped, the score
    read whatever its decimals (nan where it is no number)."""
    pairs, text = [], None
    for line in prompt.split("\n") if isinstance(prompt, str) else ():
        if line.startswith("text:"):
            text = line[len("text: ") :] if line.startswith("text: ") else line[len("text:") :]
        elif line.startswith("score:") and text is not None:
            try:
                pairs.append((text, float(line[len("score:") :].strip())))
            except ValueError:
                pairs.append((text, float("nan")))
            text = None
        elif line.strip():
            text = None
    return pairs


def _layout(pairs):
    """The exact text the docstring lays these pairs out as, in this order."""
    return "\n".join([HEADER] + [f"text: {text}\nscore: {score:.2f}" for text, score in pairs])


def _ties(pairs):
    """The texts shown per score shown (to 2 decimals), each in the order shown."""
    out = {}
    for text, score in pairs:
        out.setdefault(f"{score:.2f}", []).append(text)
    return out


def _by_content(pairs):
    return sorted(pairs, key=lambda p: (p[0], p[1]))


PLAIN = [("Solve units", 0.5), ("Solve", 0.25), ("Solve dates", 0.75), ("Solve the task.", 0.125)]
_PINNED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _pin(student):
    """The checks of order and layout also pin the pairs of two plain prompts (any order, any layout):
    a constant prompt satisfies them. A pin that held is not asked again."""
    if _PINNED.get(student):
        return
    for k in (2, 3):
        prompt = student.opro_prompt(list(PLAIN), k)
        expect_close(
            _by_content(_shown(prompt)),
            _by_content(_top(PLAIN, k)),
            _what(PLAIN, k) + f": the pairs shown, in any order\n  prompt: {prompt!r}",
            rel=0,
            abs=0.0051,
        )
    _PINNED[student] = True


@pytest.mark.promise("opro_prompt.top_k")
@given(distinct_histories, small_ks)
@example([("a", 0.1), ("b", 0.9), ("c", 0.3), ("d", 0.7)], 2)
@example([("Solve units", 0.61), ("Solve", 0.2), ("  Solve dates ", 0.86), ("Solve: 1.00 units", 0.4)], 3)
@example([("x", 0.3), ("y", 0.1), ("z", 0.2), ("w", 0.05), ("v", 0.5), ("u", 0.45), ("t", 0.9)], None)
def test_shows_the_k_best(student, history, k):
    """The pairs shown are the k best of the history (each text as written, its score to 2 decimals)"""
    prompt = _prompt(student.opro_prompt, history, k)
    expect_close(
        _by_content(_shown(prompt)),
        _by_content(_top(history, k)),
        _what(history, k) + f": the (text, score) pairs shown, in any order\n  prompt: {prompt!r}",
        rel=0,
        abs=0.0051,
    )


@pytest.mark.promise("opro_prompt.top_k")
@given(distinct_histories.map(lambda h: h[:1]) | distinct_histories.map(lambda h: h[:3]), ks)
@example([("Solve units", 0.7), ("Solve", 0.2)], 10)
def test_a_short_history_is_shown_whole(student, history, k):
    """A history of at most k pairs is shown whole"""
    k = max(k or 6, len(history))
    prompt = _prompt(student.opro_prompt, history, k)
    expect_close(
        _by_content(_shown(prompt)),
        _by_content(history),
        _what(history, k) + f": the (text, score) pairs shown, in any order\n  prompt: {prompt!r}",
        rel=0,
        abs=0.0051,
    )


@pytest.mark.promise("opro_prompt.ascending")
@given(distinct_histories, st.one_of(st.none(), st.integers(2, 12)))
@example([("a", 0.1), ("b", 0.9), ("c", 0.3), ("d", 0.7)], None)
def test_pairs_are_listed_ascending(student, history, k):
    """The pairs are listed in ascending order of score, so the best is last"""
    _pin(student)
    prompt = _prompt(student.opro_prompt, history, k)
    shown = [score for _, score in _shown(prompt)]
    expect_true(
        len(shown) > 1 and shown == sorted(shown),
        _what(history, k),
        f"the scores shown, in order: {shown} (not ascending)\n  prompt: {prompt!r}",
    )


@pytest.mark.promise("opro_prompt.format")
@given(histories, ks)
@example([("  Solve units ", 0.455), ("text: nested", 0.005), ("Solve: 1.00 units", 0.995)], None)
@example([], None)
def test_layout_is_exact(student, history, k):
    """The meta-prompt is laid out exactly: the header line, then "text: <text>" and "score: <score with
    2 decimals>" per pair, joined by newlines, with no newline at the end"""
    _pin(student)
    prompt = _prompt(student.opro_prompt, history, k)
    expect_equal(prompt, _layout(_shown(prompt)), _what(history, k) + ": the text, as laid out for its pairs")


@pytest.mark.promise("opro_prompt.stable_ties")
@given(st.lists(texts, max_size=10), scores, ks)
@example(["first", "second", "third", "fourth"], 0.5, 2)
@example(["a", "b", "c", "d", "e", "f", "g", "h"], 0.25, None)
def test_equal_scores_keep_history_order(student, names, score, k):
    """Instructions with equal scores keep their order in the history (a stable sort), also at the cut
    of the top k"""
    history = [(text, score) for text in names]
    prompt = _prompt(student.opro_prompt, history, k)
    want = [text for text, _ in _top(history, k)]
    got = [text for text, _ in _shown(prompt)]
    expect_equal(got, want, _what(history, k) + f": the texts shown, in order\n  prompt: {prompt!r}")


@pytest.mark.promise("opro_prompt.stable_ties")
@given(histories, ks)
def test_ties_at_the_cut_match_reference(student, reference, history, k):
    """Among equal scores, the pairs kept at the cut of the top k and their order are the stable sort's"""
    prompt = _prompt(student.opro_prompt, history, k)
    want = _ties(_shown(_prompt(reference.opro_prompt, history, k)))
    expect_equal(
        _ties(_shown(prompt)), want, _what(history, k) + f": the texts shown per score\n  prompt: {prompt!r}"
    )


@pytest.mark.promise("opro_prompt.empty_history")
@given(ks)
@settings(max_examples=3)  # only k varies
def test_an_empty_history_gives_the_header_alone(student, k):
    """An empty history gives the first line alone (and one entry gives more)"""
    got = _prompt(student.opro_prompt, [], k)
    expect_true(isinstance(got, str) and got.strip() == HEADER, _what([], k), f"got {got!r}")
    one = [("Solve units", 0.5)]
    got = _prompt(student.opro_prompt, one, k)
    expect_true(
        isinstance(got, str) and got.strip() != HEADER, _what(one, k), f"got the header alone: {got!r}"
    )


# Score lines as a prompt may write them: any number of decimals, none, a leading or trailing point.
numbers = st.one_of(
    st.sampled_from(("1", "0", "0.5", "0.50", "1.00", "0.125", "12.5", ".5", "2.", "0.05", "100")),
    st.tuples(st.floats(0, 100), st.integers(0, 4)).map(lambda p: f"{p[0]:.{p[1]}f}"),
)
# Lines around the pairs: the header, blank lines, a text line with no score after it, other lines.
noise = st.sampled_from((HEADER, "", "text: a lone text", "note: 0.5", "score: 0.75", "Write more."))


@st.composite
def prompts(draw):
    """A meta-prompt as any writer may lay it out: pairs of a text line and a score line among other
    lines."""
    blocks = draw(
        st.lists(
            st.one_of(noise, st.tuples(texts, numbers).map(lambda p: f"text: {p[0]}\nscore: {p[1]}")),
            max_size=8,
        )
    )
    return "\n".join(blocks)


@pytest.mark.promise("parse_opro_prompt.pairs")
@given(prompts())
@example("text: Solve units\nscore: 1\ntext: Solve\nscore: 0.5\ntext: Solve dates\nscore: 0.125")
@example(f"{HEADER}\ntext:  Solve: 1.00 units \nscore: 12.5\ntext: a lone text\ntext: score: 0.50\nscore: .5")
def test_parse_reads_any_prompt(student, reference, prompt):
    """Every "text: " line followed by a "score: " line gives its pair, in order, whatever the score's
    decimals, the text as written"""
    expect_close(
        student.parse_opro_prompt(prompt),
        reference.parse_opro_prompt(prompt),
        call("parse_opro_prompt", prompt),
        rel=0,
        abs=1e-12,
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


PAIRLESS = (
    "",
    HEADER,
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
    # Also pinned: the pairs of plain prompts and two parses (a call that changes nothing satisfies it).
    _pin(student)
    prompt = reference.opro_prompt(PLAIN)
    expect_pinned(student, reference, "parse_opro_prompt", (prompt,), (reference.opro_prompt(PLAIN, 1),))
    given_history = list(history)
    _prompt(student.opro_prompt, given_history, k)
    expect_true(
        given_history == history and not student.last_changed,
        _what(history, k),
        f"the call changed history (to {given_history!r})",
    )
