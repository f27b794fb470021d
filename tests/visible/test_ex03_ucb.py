"""Exercise 3: ucb_choice, the MIPRO-like search's pick of one option (visible examples).

The order of random draws: with the surrogate off, one rng.randrange(len(stats)). With it on, first
rng.random() (compared with `explore`), then either rng.randrange(len(stats)) (explore) or
rng.choice(...) among the options tied (within 1e-12) for the best mean + 0.5 / sqrt(pulls + 1), in
index order. An untried option has mean 0.5, so its score is 0.5 + 0.5 / sqrt(1) = 1.0.
"""

import random

import pytest

from grader.expect import expect_equal

pytestmark = pytest.mark.exercise(3)

# scores: 0.5 + 0.354, 0.0 + 0.354, 0.667 + 0.25, 1.0 + 0.354: option 3 is the best
STATS = [[1.0, 2], [0.0, 1], [2.0, 3], [1.0, 1]]


def _check(student, stats, seed, want, next_random=None, **kw):
    """ucb_choice(stats, random.Random(seed), **kw) == want, and (where given) the rng's next random()
    afterwards: which draws were made."""
    extra = "".join(f", {k}={v!r}" for k, v in kw.items())
    what = f"ucb_choice({stats!r}, random.Random({seed}){extra})"
    rng = random.Random(seed)
    expect_equal(student.ucb_choice([list(s) for s in stats], rng, **kw), want, what)
    if next_random is not None:
        expect_equal(
            rng.random(), next_random, what + ": rng.random() after the call (which draws were made)"
        )


@pytest.mark.promise("ucb_choice.surrogate_off")
def test_surrogate_off_picks_uniformly(student):
    """surrogate=False: random.Random(7).randrange(4) is 2, although option 3 has the best score."""
    _check(student, STATS, 7, 2, 0.9478653606090632, surrogate=False)


@pytest.mark.promise("ucb_choice.score")
def test_best_mean_plus_bonus(student):
    """explore=0.0 never explores: option 3 (mean 1.0 + 0.5 / sqrt(2)) wins. random.Random(1).random()
    is 0.134, below the default 0.25, but with explore=0.0 no uniform pick happens."""
    _check(student, STATS, 1, 3, explore=0.0)
    # random.Random(0).random() is 0.844 >= 0.25: no exploration with the default either
    _check(student, STATS, 0, 3)


@pytest.mark.promise("ucb_choice.untried_option")
def test_an_untried_option_scores_one(student):
    """An untried option has mean 0.5, so it scores 0.5 + 0.5 / sqrt(1) = 1.0: option 1 beats option 0
    (mean 0.5 + 0.5 / sqrt(3) = 0.789)."""
    _check(student, [[1.0, 2], [0.0, 0], [0.0, 3]], 0, 1, explore=0.0)


@pytest.mark.promise("ucb_choice.score")
def test_the_bonus_shrinks_with_pulls(student):
    """0.5 / sqrt(pulls + 1): option 0 (mean 0.75, 3 pulls) scores 0.75 + 0.25 = 1.0; option 1 (1 pull)
    scores its mean + 0.354, so it wins with mean 0.67 (1.024) and loses with mean 0.6 (0.954)."""
    _check(student, [[2.25, 3], [0.67, 1]], 0, 1, explore=0.0)
    _check(student, [[2.25, 3], [0.6, 1]], 0, 0, explore=0.0)


@pytest.mark.promise("ucb_choice.explore")
def test_explore_picks_uniformly(student):
    """random.Random(1).random() is 0.134 < 0.25: a uniform pick, randrange(4) gives option 0;
    random.Random(3).random() is 0.238 < 0.25: randrange(4) gives option 1; with explore=1.0 every
    pick is uniform (seed 5: option 2)."""
    _check(student, STATS, 1, 0, 0.2550690257394217)
    _check(student, STATS, 3, 1, 0.36995516654807925)
    _check(student, STATS, 5, 2, 0.7951935655656966, explore=1.0)


@pytest.mark.promise("ucb_choice.near_ties")
def test_ties_are_broken_by_rng_choice_in_index_order(student):
    """Options 0, 2 and 3 are untried (score 1.0 each): after random(), rng.choice([0, 2, 3]) picks;
    with seed 3 that is option 3."""
    _check(student, [[0.0, 0], [1.0, 3], [0.0, 0], [0.0, 0]], 3, 3, 0.13042279608514273, explore=0.0)


@pytest.mark.promise("ucb_choice.near_ties")
def test_ties_within_1e_12(student):
    """(0.1 + 0.2) / 3 and 0.3 / 3 differ by about 1e-17: options 0 and 1 are tied, and
    random.Random(0) then picks rng.choice([0, 1]) = 1."""
    _check(student, [[0.1 + 0.2, 3], [0.3, 3], [0.0, 2]], 0, 1, 0.04048437818077755, explore=0.0)


@pytest.mark.promise("ucb_choice.rng_calls")
def test_a_single_best_option_is_still_drawn(student):
    """A single best option is still drawn with rng.choice([i]), so the rng moves the same way."""
    _check(student, [[2.0, 4]], 5, 0, 0.7951935655656966)
