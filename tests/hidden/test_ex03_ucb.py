"""Exercise 3: ucb_choice (hidden checks: reference comparisons and properties)."""

import math
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.expect import expect_equal, expect_pinned, expect_true

pytestmark = pytest.mark.exercise(3)

seeds = st.integers(0, 2**32 - 1)
MEANS = (0.0, 0.1, 0.2, 0.25, 0.3, 0.5, 0.6, 0.7, 0.75, 0.9, 1.0)


def _add_up(means):
    tot = 0.0
    for m in means:
        tot += m
    return tot


@st.composite
def option_stats(draw, max_pulls=6):
    """[sum of scores, pulls] as the search builds it: the sum of `pulls` minibatch means, added up in
    order (so equal means in another order give ties within rounding, like 0.1 + 0.2 and 0.3)."""
    pulls = draw(st.integers(0, max_pulls))
    return [_add_up(draw(st.lists(st.sampled_from(MEANS), min_size=pulls, max_size=pulls))), pulls]


# One option, a few, and more than a small set holds; untried options often.
stats_lists = st.one_of(
    st.lists(option_stats(), min_size=1, max_size=2),
    st.lists(option_stats(max_pulls=2), min_size=3, max_size=7),
    st.lists(option_stats(), min_size=8, max_size=12),
)
explores = st.one_of(st.sampled_from((0.0, 0.1, 0.25, 0.5, 0.9, 1.0)), st.floats(0.0, 1.0))


def _what(stats, seed, **kw):
    extra = "".join(f", {k}={v!r}" for k, v in kw.items())
    return f"ucb_choice({stats!r}, random.Random({seed}){extra})"


def _call(student, stats, seed, **kw):
    rng = random.Random(seed)
    return student.ucb_choice([list(s) for s in stats], rng, **kw), rng


def _tied_best(stats):
    """The indices whose mean + bonus is within 1e-12 of the best (untried: mean 0.5)."""
    scores = [(tot / n if n else 0.5) + 0.5 / math.sqrt(n + 1) for tot, n in stats]
    best = max(scores)
    return [i for i, u in enumerate(scores) if best - u <= 1e-12]


def _pin(student, reference):
    """The properties below also pin two plain picks (and rng states), exact ties among tried options:
    always 0, or a call that changes nothing, satisfies them."""
    cases = [
        ([[1.5, 2], [0.3, 1], [1.5, 2]], random.Random(5), True, 0.0),
        ([[0.5, 1], [0.5, 1], [0.1, 2]], random.Random(6)),
    ]
    expect_pinned(student, reference, "ucb_choice", *cases)


@pytest.mark.promise("ucb_choice.score")
@given(stats_lists, seeds, st.booleans(), explores)
@example([[2.25, 3], [0.67, 1], [0.6, 1]], 0, True, 0.0)
@example([[1.0, 2], [0.0, 0], [0.9, 1], [0.0, 3]], 7, True, 0.0)
@example([[4.8, 8], [0.4, 1]], 0, True, 0.0)  # 0.6 + 0.5/3 beats 0.4 + 0.5/sqrt(2); with 0.5**sqrt(n+1) not
def test_matches_reference(student, reference, stats, seed, surrogate, explore):
    """The pick and the rng state after it match the reference"""
    what = _what(stats, seed, surrogate=surrogate, explore=explore)
    got, rng = _call(student, stats, seed, surrogate=surrogate, explore=explore)
    ref_rng = random.Random(seed)
    want = reference.ucb_choice([list(s) for s in stats], ref_rng, surrogate=surrogate, explore=explore)
    expect_equal(got, want, what)
    expect_true(
        rng.getstate() == ref_rng.getstate(),
        what,
        "the rng state after the call differs from the reference's (other random draws)",
    )


@pytest.mark.promise("ucb_choice.valid_index")
@given(stats_lists, seeds, st.booleans(), explores)
def test_result_is_a_valid_index(student, reference, stats, seed, surrogate, explore):
    """The pick is always an index into stats"""
    _pin(student, reference)
    what = _what(stats, seed, surrogate=surrogate, explore=explore)
    got, _ = _call(student, stats, seed, surrogate=surrogate, explore=explore)
    expect_true(
        type(got) is int and 0 <= got < len(stats), what, f"got {got!r}, not an index below {len(stats)}"
    )


@pytest.mark.promise("ucb_choice.surrogate_off")
@given(stats_lists, seeds, explores)
def test_surrogate_off_is_one_uniform_draw(student, stats, seed, explore):
    """With the surrogate off the pick is rng.randrange(len(stats)), and nothing else is drawn"""
    what = _what(stats, seed, surrogate=False, explore=explore)
    got, rng = _call(student, stats, seed, surrogate=False, explore=explore)
    replay = random.Random(seed)
    expect_equal(got, replay.randrange(len(stats)), what)
    expect_true(
        rng.getstate() == replay.getstate(), what, "other random draws than one randrange(len(stats))"
    )


@pytest.mark.promise("ucb_choice.rng_calls")
@given(stats_lists, seeds)
@example([[2.0, 4]], 5)
@example([[0.5, 1], [3.0, 3]], 2)
def test_explore_zero_picks_among_the_best(student, stats, seed):
    """With explore=0 the pick is rng.choice among the options tied for the best score, in index order,
    after one rng.random()"""
    what = _what(stats, seed, explore=0.0)
    got, rng = _call(student, stats, seed, explore=0.0)
    tied = _tied_best(stats)
    replay = random.Random(seed)
    replay.random()
    expect_equal(got, replay.choice(tied), what + f"\n  (options tied for the best score: {tied})")
    expect_true(
        rng.getstate() == replay.getstate(), what, "other random draws than random() then choice(tied)"
    )


@pytest.mark.promise("ucb_choice.explore")
@given(stats_lists, seeds)
def test_explore_one_is_always_uniform(student, stats, seed):
    """With explore=1 every pick is uniform: rng.random(), then rng.randrange(len(stats))"""
    what = _what(stats, seed, explore=1.0)
    got, rng = _call(student, stats, seed, explore=1.0)
    replay = random.Random(seed)
    replay.random()
    expect_equal(got, replay.randrange(len(stats)), what)
    expect_true(
        rng.getstate() == replay.getstate(), what, "other random draws than random() then randrange(n)"
    )


@pytest.mark.promise("ucb_choice.untried_option")
@given(st.lists(option_stats(), min_size=1, max_size=6), st.integers(0, 6), seeds)
def test_an_untried_option_beats_weak_tried_ones(student, stats, where, seed):
    """An untried option (mean 0.5, score 1.0) beats every tried option whose mean is at most 0.5"""
    tried = [[min(tot, n / 2), n] for tot, n in stats if n > 0]
    if not tried:
        tried = [[0.0, 1]]
    where = min(where, len(tried))
    stats = tried[:where] + [[0.0, 0]] + tried[where:]
    what = _what(stats, seed, explore=0.0)
    got, _ = _call(student, stats, seed, explore=0.0)
    expect_equal(got, where, what + "\n  (the only untried option)")


@pytest.mark.promise("ucb_choice.near_ties")
@given(st.lists(st.sampled_from(MEANS), min_size=2, max_size=6), stats_lists, seeds)
@example([0.3, 0.2, 0.1], [[0.0, 2]], 1)
@example([0.7, 0.2, 0.1], [[0.3, 3]], 4)
def test_rounding_differences_are_ties(student, means, others, seed):
    """Options whose scores differ only by float rounding (within 1e-12) are tied"""
    twins = [[_add_up(means), len(means)], [_add_up(reversed(means)), len(means)]]
    stats = twins + others
    what = _what(stats, seed, explore=0.0)
    got, rng = _call(student, stats, seed, explore=0.0)
    tied = _tied_best(stats)
    replay = random.Random(seed)
    replay.random()
    expect_equal(got, replay.choice(tied), what + f"\n  (options tied for the best score: {tied})")
    expect_true(
        rng.getstate() == replay.getstate(), what, "other random draws than random() then choice(tied)"
    )


@pytest.mark.promise("ucb_choice.explore")
@given(stats_lists, seeds, explores)
@settings(max_examples=4)  # one draw per example: few examples suffice
def test_explores_below_explore(student, stats, seed, explore):
    """With the surrogate on, rng.random() comes first; below `explore` the pick is rng.randrange(n)"""
    replay = random.Random(seed)
    if replay.random() >= explore:
        explore = 1.0  # this seed would not explore: make it
    what = _what(stats, seed, explore=explore)
    got, rng = _call(student, stats, seed, explore=explore)
    expect_equal(got, replay.randrange(len(stats)), what)
    expect_true(
        rng.getstate() == replay.getstate(), what, "other random draws than random() then randrange(n)"
    )


@pytest.mark.promise("ucb_choice.unchanged")
@given(stats_lists, seeds, st.booleans(), explores)
@example([[1.0, 2], [0.0, 0], [2.0, 3]], 3, True, 0.0)
@settings(max_examples=3)  # the @example walks the whole path; a change shows at once
def test_stats_are_not_changed(student, reference, stats, seed, surrogate, explore):
    """stats is not changed by the call"""
    _pin(student, reference)
    given_stats = [list(s) for s in stats]
    what = _what(stats, seed, surrogate=surrogate, explore=explore)
    student.ucb_choice(given_stats, random.Random(seed), surrogate=surrogate, explore=explore)
    expect_true(
        given_stats == stats and "0" not in student.last_changed and "stats" not in student.last_changed,
        what,
        "the call changed stats",
    )
