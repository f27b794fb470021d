"""Exercise 3: ucb_choice (hidden checks: reference comparisons and properties)."""

import math
import random
import weakref

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.expect import expect_equal, expect_form, expect_true

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


# Inputs where a misread score formula picks another option: the mean alone, 0.5 / sqrt(pulls), twice the
# bonus, UCB1's sqrt(2 ln N / pulls), the sum over pulls + 1, 0.5 ** sqrt(pulls + 1), the worst.
FORMULA_CASES = (
    [[4.8, 8], [0.4, 1]],
    [[2.25, 3], [0.67, 1]],
    [[2.25, 3], [0.6, 1]],
    [[0.3, 1], [5.6, 8], [1.5, 2]],
    [[1.4, 2], [0.9, 1], [6.3, 10]],
)
# Six and eight options, one best each (at 2, 5 and 0): a random index passes all pins once in ~10^4.
PIN_CASES = (
    [[0.1, 1], [0.6, 2], [4.5, 5], [0.9, 3], [0.0, 1], [1.0, 4]],
    [[0.5, 2], [1.2, 3], [0.2, 1], [2.0, 5], [0.3, 2], [7.2, 8], [0.7, 1], [1.5, 6]],
    [[2.7, 3], [0.5, 1], [1.0, 2], [2.0, 4], [0.3, 1], [1.2, 2]],
)
_PINNED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _pin(student):
    """The checks of form and unchanged stats also pin plain picks (explore=0.0, one best option): a
    constant index, or a call that changes nothing, satisfies them. A pin that held is not asked again."""
    if _PINNED.get(student):
        return
    for stats in FORMULA_CASES + PIN_CASES:
        got, _ = _call(student, stats, 0, explore=0.0)
        expect_equal(got, _tied_best(stats)[0], _what(stats, 0, explore=0.0) + ": the one best option")
    _PINNED[student] = True


@st.composite
def tried_stats(draw, min_size=2, max_size=6):
    """Options tried 1 to 10 times: pulls and means spread so that the bonus often decides."""
    size = draw(st.integers(min_size, max_size))
    out = []
    for _ in range(size):
        pulls = draw(st.integers(1, 10))
        out.append([draw(st.sampled_from(MEANS)) * pulls, pulls])
    return out


@st.composite
def contests(draw):
    """A rarely and an often tried option whose means differ by about their bonuses' difference, among
    weaker ones: the score formula, not the mean alone, picks."""
    few, many = draw(st.integers(1, 3)), draw(st.integers(4, 12))
    gap = 0.5 / math.sqrt(few + 1) - 0.5 / math.sqrt(many + 1)
    high = draw(st.sampled_from((0.6, 0.7, 0.75, 0.9)))
    low = high - gap * draw(st.sampled_from((0.5, 0.8, 1.2, 1.5)))
    options = [[low * few, few], [high * many, many]]
    options += [[0.1 * n, n] for n in draw(st.lists(st.integers(1, 8), max_size=3))]
    return draw(st.permutations(options))


@pytest.mark.promise("ucb_choice.score")
@given(tried_stats(), seeds)
@example(FORMULA_CASES[0], 0)
@example(FORMULA_CASES[1], 1)
@example(FORMULA_CASES[2], 2)
@example(FORMULA_CASES[3], 3)
@example(FORMULA_CASES[4], 4)
def test_picks_the_best_score(student, stats, seed):
    """With explore=0.0 the pick is an option with the best mean + 0.5 / sqrt(pulls + 1)"""
    what = _what(stats, seed, explore=0.0)
    got, _ = _call(student, stats, seed, explore=0.0)
    tied = _tied_best(stats)
    expect_true(got in tied, what, f"got {got!r}; the best score is reached by {tied}")


@pytest.mark.promise("ucb_choice.score")
@given(contests(), seeds)
@example(FORMULA_CASES[4], 5)
@example(FORMULA_CASES[3], 6)
@example(FORMULA_CASES[2], 7)
@example(FORMULA_CASES[1], 8)
@example(FORMULA_CASES[0], 9)
def test_the_bonus_decides(student, stats, seed):
    """A rarely tried option with a lower mean wins exactly when its bonus makes up the gap"""
    what = _what(stats, seed, explore=0.0)
    got, _ = _call(student, stats, seed, explore=0.0)
    tied = _tied_best(stats)
    expect_true(got in tied, what, f"got {got!r}; the best score is reached by {tied}")


@pytest.mark.promise("ucb_choice.valid_index")
@given(stats_lists, seeds, st.booleans(), explores)
def test_result_is_a_valid_index(student, stats, seed, surrogate, explore):
    """The pick is always an int index into stats"""
    _pin(student)
    what = _what(stats, seed, surrogate=surrogate, explore=explore)
    got, _ = _call(student, stats, seed, surrogate=surrogate, explore=explore)
    expect_form(got, 0, what)
    expect_true(0 <= got < len(stats), what, f"got {got!r}, not an index below {len(stats)}")


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
    got, _ = _call(student, stats, seed, explore=0.0)
    tied = _tied_best(stats)
    replay = random.Random(seed)
    replay.random()
    expect_equal(got, replay.choice(tied), what + f"\n  (options tied for the best score: {tied})")


# How far apart near scores lie: within 1e-12 they tie, beyond it they do not (1e-10 is no tie, though
# math.isclose's relative tolerance calls it one); spaced 0.9e-12 apart, three options span 1.8e-12, so
# only the two nearest the best tie, in whatever order the options come.
OFFSETS = (0.0, 2e-13, 4e-13, 0.9e-12, 1.1e-12, 1e-10, 1e-9)


@st.composite
def near_stats(draw):
    """Options tried alike whose means differ by the offsets above, in any order, with weaker ones."""
    pulls = draw(st.integers(1, 6))
    base = draw(st.sampled_from((0.25, 0.5, 0.75)))
    offsets = draw(st.lists(st.sampled_from(OFFSETS), min_size=2, max_size=5))
    options = [[(base + off) * pulls, pulls] for off in offsets]
    options += [[0.1 * n, n] for n in draw(st.lists(st.integers(1, 6), max_size=2))]
    return draw(st.permutations(options))


@pytest.mark.promise("ucb_choice.near_ties")
@given(near_stats(), seeds)
@example([[0.5, 1], [0.5 + 0.9e-12, 1], [0.5 + 1.8e-12, 1]], 1)
@example([[0.5 + 1.8e-12, 1], [0.5 + 0.9e-12, 1], [0.5, 1]], 1)
@example([[0.5, 1], [0.5 + 1e-10, 1]], 0)
@example([[1.5 + 3e-13, 2], [1.5, 2], [0.2, 1]], 3)
def test_ties_are_within_1e_12_of_the_best(student, stats, seed):
    """The options within 1e-12 of the best score tie (and no others, in whatever order the options
    come); rng.choice draws among them in index order"""
    what = _what(stats, seed, explore=0.0)
    got, _ = _call(student, stats, seed, explore=0.0)
    tied = _tied_best(stats)
    replay = random.Random(seed)
    replay.random()
    expect_equal(got, replay.choice(tied), what + f"\n  (options tied for the best score: {tied})")


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
def test_stats_are_not_changed(student, stats, seed, surrogate, explore):
    """stats is not changed by the call"""
    _pin(student)
    given_stats = [list(s) for s in stats]
    what = _what(stats, seed, surrogate=surrogate, explore=explore)
    student.ucb_choice(given_stats, random.Random(seed), surrogate=surrogate, explore=explore)
    expect_true(
        given_stats == stats and "0" not in student.last_changed and "stats" not in student.last_changed,
        what,
        "the call changed stats",
    )
