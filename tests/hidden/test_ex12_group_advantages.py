"""Exercise 12, group advantages (hidden): z-score properties of `group_advantages`, its ties and near-ties
with and without std_norm, its eps threshold, and comparisons with the reference."""

import math

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_true

from .gradients import opaque

pytestmark = pytest.mark.exercise(12)


REWARD = st.floats(-100, 100)


def pmean(xs):
    return math.fsum(xs) / len(xs)


def psd(xs):
    m = pmean(xs)
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / len(xs))


def spread(min_sd=1e-3, min_size=2):
    """Reward lists whose population sd is clearly above any threshold in play, negative rewards and
    repeated values included."""
    values = st.one_of(REWARD, st.sampled_from([0.0, 1.0, -1.0]))
    return st.lists(values, min_size=min_size, max_size=12).filter(lambda xs: psd(xs) > min_sd)


# The core checks' groups: a standard deviation of at least 0.05, so that dividing by sd + eps (eps 1e-6)
# moves an advantage by at most 2e-5 of itself, within CORE_REL: that slip is eps_threshold's alone.
CORE_REL = 1e-4


def core_spread():
    return spread(min_sd=0.05)


def zscores(xs):
    m, sd = pmean(xs), psd(xs)
    return [(x - m) / sd for x in xs]


def expect_signal(student, rewards, std_norm=True, **kw):
    """A group that is not a tie carries signal: a reward above the mean gets a positive advantage, one below
    it a negative one. Beside a check of zeros, this makes an answer of zeros (or a constant) fail it,
    without pinning the values, which a wrong mean or standard deviation would miss: that mistake costs the
    checks of the values."""
    got = student.group_advantages(rewards, std_norm, **kw)
    m = pmean(rewards)
    tol = 1e-9 * (1.0 + max(abs(r) for r in rewards))  # a reward this close to the mean may go either way
    expect_true(
        isinstance(got, list | tuple)
        and len(got) == len(rewards)
        and all(a > 0 for a, r in zip(got, rewards, strict=True) if r > m + tol)
        and all(a < 0 for a, r in zip(got, rewards, strict=True) if r < m - tol),
        call("group_advantages", rewards, std_norm, **kw),
        f"got {got!r}: a reward above the mean {m!r} should get a positive advantage, below it a negative",
    )


# ---- z-scores (std_norm) --------------------------------------------------------------------------------


@pytest.mark.promise("group_advantages.z_score")
@given(rewards=core_spread())
@example(rewards=[2.0, 4.0])  # the population sd is 1, the sample sd sqrt(2)
@example(rewards=[-3.0, -1.0, -1.0, 5.0])
def test_advantages_are_z_scores(student, rewards):
    """With std_norm, the advantages have mean 0 and population standard deviation 1."""
    adv = student.group_advantages(rewards)
    what = call("group_advantages", rewards)
    expect_true(len(adv) == len(rewards), f"{what} has {len(adv)} advantages for {len(rewards)} rewards")
    expect_close(pmean(adv), 0.0, f"mean of {what} = {list(adv)}", abs=1e-9)
    expect_close(psd(adv), 1.0, f"population sd of {what} = {list(adv)}", rel=CORE_REL)


@pytest.mark.promise("group_advantages.z_score")
@given(rewards=core_spread())
@example(rewards=[1.0, 0.0, 0.0, 0.0])
@example(rewards=[0.5, -2.0, 3.0, 3.0, 1.0])
def test_advantages_match_reference(student, reference, rewards):
    """With std_norm, the advantages match the reference, response by response."""
    want = reference.group_advantages(list(rewards), True)
    expect_close(
        student.group_advantages(rewards, True),
        want,
        call("group_advantages", rewards, True),
        rel=CORE_REL,
        abs=1e-9,
    )


@pytest.mark.promise("group_advantages.z_score")
@given(rewards=core_spread(), scale=st.floats(0.01, 100.0))
@example(rewards=[1.0, 2.0, 4.0], scale=10.0)
def test_scale_invariance(student, rewards, scale):
    """With std_norm, multiplying every reward by a positive constant leaves the z-scores unchanged."""
    scaled = [r * scale for r in rewards]
    assume(psd(scaled) > 0.05)
    got = student.group_advantages(scaled)
    what = call("group_advantages", scaled) + f"\n  vs the z-scores of the same without the factor {scale!r}"
    expect_close(got, zscores(rewards), what, rel=CORE_REL, abs=1e-9)


# ---- the mean only (std_norm=False) ---------------------------------------------------------------------


@pytest.mark.promise("group_advantages.mean_only")
@given(rewards=spread())
@example(rewards=[1.0, 0.0, 0.0, 0.0])
@example(rewards=[-2.0, 3.0, -2.0])
def test_without_std_norm_only_the_mean_is_subtracted(student, rewards):
    """With std_norm off, each advantage is its reward minus the group mean."""
    m = pmean(rewards)
    what = call("group_advantages", rewards, std_norm=False)
    expect_close(student.group_advantages(rewards, std_norm=False), [r - m for r in rewards], what, abs=1e-9)


@pytest.mark.promise("group_advantages.mean_only")
@given(rewards=spread(), shift=st.floats(-50, 50))
@example(rewards=[0.0, 1.0, 1.0], shift=3.0)
def test_shift_moves_nothing(student, rewards, shift):
    """Adding a constant to every reward leaves the advantages r - mean unchanged (std_norm off)."""
    moved = [r + shift for r in rewards]
    assume(psd(moved) > 1e-3)
    m = pmean(rewards)
    got = student.group_advantages(moved, False)
    what = call("group_advantages", moved, False) + f"\n  vs r - mean without the shift {shift!r}"
    expect_close(got, [r - m for r in rewards], what, rel=1e-6, abs=1e-6)


BINARY = [[0, 0, 1, 0], [0, 1, 1, 0, 1, 1, 1, 0], [0, 0, 0, 0, 0, 0, 0, 1], [1.0, 0.0]]
Z_SCORE, MEAN_ONLY = (
    pytest.mark.promise("group_advantages.z_score"),
    pytest.mark.promise("group_advantages.mean_only"),
)


@pytest.mark.parametrize("rewards", BINARY, ids=opaque(len(BINARY), "group"))
@pytest.mark.parametrize(
    "std_norm",
    [pytest.param(True, marks=Z_SCORE), pytest.param(False, marks=MEAN_ONLY)],
    ids=opaque(2, "norm"),
)
def test_binary_reward_groups_match_reference(student, reference, rewards, std_norm):
    """Groups of 0/1 rewards, as the toy environment gives, match the reference."""
    want = reference.group_advantages(rewards, std_norm)
    expect_close(
        student.group_advantages(rewards, std_norm),
        want,
        call("group_advantages", rewards, std_norm),
        rel=CORE_REL,
        abs=1e-9,
    )


# ---- ties, near-ties and the threshold ------------------------------------------------------------------


@pytest.mark.promise("group_advantages.identical_zero")
@given(
    value=st.one_of(REWARD, st.sampled_from([0.0, 1.0, -1.0, 0.1])),
    n=st.integers(0, 12),
    std_norm=st.booleans(),
)
@example(value=1.0, n=0, std_norm=True)  # an empty group
@example(value=1.0, n=1, std_norm=True)  # a single reward
@example(value=0.1, n=3, std_norm=False)  # the mean of [0.1] * 3 is not exactly 0.1
@example(value=-7.0, n=8, std_norm=True)
def test_identical_rewards_give_zeros(student, value, n, std_norm):
    """A group whose rewards are all equal (a single reward too) gets zero advantage everywhere, with or
    without std_norm (an empty group gets []); one reward raised above the others is signal again."""
    rewards = [value] * n
    what = call("group_advantages", rewards, std_norm=std_norm)
    expect_close(student.group_advantages(rewards, std_norm=std_norm), [0.0] * n, what, abs=1e-12)
    expect_signal(student, [*rewards, value + 1.0], std_norm)


@pytest.mark.promise("group_advantages.below_eps_zero")
@given(
    base=st.one_of(REWARD, st.just(0.0)),
    jitter=st.lists(st.floats(-1.0, 1.0), min_size=2, max_size=12),
    scale=st.sampled_from([1e-9, 1e-8, 1e-7]),
    std_norm=st.booleans(),
)
@example(base=0.0, jitter=[0.0, 1.0], scale=1e-7, std_norm=False)  # [0, 1e-7]: sd 5e-8, a near-tie
@example(base=3.0, jitter=[1.0, -1.0, 1.0, -1.0], scale=1e-7, std_norm=True)
@example(base=-2.0, jitter=[1.0, -1.0, 0.0], scale=1e-7, std_norm=False)
def test_spread_below_eps_gives_zeros(student, base, jitter, scale, std_norm):
    """A group whose standard deviation is below eps counts as identical: zero advantages, with or without
    std_norm (then r - mean would be tiny but not 0); a spread well above eps is signal again."""
    rewards = [base + scale * j for j in jitter]
    assume(psd(rewards) < 5e-7)
    what = call("group_advantages", rewards, std_norm)
    expect_close(student.group_advantages(rewards, std_norm), [0.0] * len(rewards), what, abs=1e-15)
    expect_signal(student, [base + 1e-3 * i for i in range(len(jitter))], std_norm)


@pytest.mark.promise("group_advantages.eps_threshold")
@given(rewards=spread(min_sd=0.01), factor=st.floats(2.0, 50.0), std_norm=st.booleans())
def test_eps_argument_is_the_threshold(student, rewards, factor, std_norm):
    """eps sets the threshold: a standard deviation below it gives zeros, one above it the advantages."""
    sd = psd(rewards)
    below = student.group_advantages(rewards, std_norm, eps=sd * factor)
    what = call("group_advantages", rewards, std_norm, eps=sd * factor)
    expect_close(below, [0.0] * len(rewards), what, abs=1e-12)
    expect_signal(student, rewards, std_norm, eps=sd / factor)


# Groups whose population standard deviation is exactly 1.0 or 0.5 however it is computed (a mean and
# squared deviations exact in binary): at eps equal to it, the standard deviation is not below eps.
AT_EPS = [([1.0, 3.0], 1.0), ([0.0, 0.0, 2.0, 2.0], 1.0), ([4.0, 5.0], 0.5), ([-1.0, -2.0, -1.0, -2.0], 0.5)]


@pytest.mark.promise("group_advantages.eps_threshold")
@pytest.mark.parametrize("rewards, sd", AT_EPS, ids=opaque(len(AT_EPS), "group"))
@pytest.mark.parametrize("std_norm", [True, False], ids=opaque(2, "norm"))
def test_standard_deviation_equal_to_eps_is_not_below_it(student, rewards, sd, std_norm):
    """At eps equal to the standard deviation the advantages are the usual ones (z-scores or r - mean);
    just above it, zeros."""
    m = pmean(rewards)
    want = [(r - m) / (sd if std_norm else 1.0) for r in rewards]
    what = call("group_advantages", rewards, std_norm, eps=sd)
    expect_close(student.group_advantages(rewards, std_norm, eps=sd), want, what, abs=1e-12)
    what = call("group_advantages", rewards, std_norm, eps=sd * 1.001)
    expect_close(student.group_advantages(rewards, std_norm, eps=sd * 1.001), [0.0] * len(rewards), what)


@pytest.mark.promise("group_advantages.eps_threshold")
@given(rewards=spread(min_sd=0.01, min_size=2), tiny=st.sampled_from([1e-5, 3e-5, 1e-4, 1e-3]))
@example(rewards=[0.0, 1.0], tiny=1e-5)
def test_small_spreads_are_divided_by_their_own_sd(student, rewards, tiny):
    """A standard deviation a little above eps is divided by itself, not by sd + eps: eps is only the
    threshold."""
    group = [r * tiny / psd(rewards) for r in rewards]  # a standard deviation of about `tiny`
    assume(psd(group) > 2e-6)
    what = call("group_advantages", group)
    expect_close(student.group_advantages(group), zscores(group), what, rel=1e-7, abs=1e-9)


# ---- large offsets ----------------------------------------------------------------------------------------


@pytest.mark.promise("group_advantages.large_offset")
@given(
    offset=st.sampled_from([1e8, -1e8, 3e7, 1e9]),
    steps=st.lists(st.integers(-3, 3), min_size=2, max_size=8).filter(lambda xs: len(set(xs)) > 1),
    std_norm=st.booleans(),
)
@example(offset=1e8, steps=[0, 1, 2], std_norm=True)
@example(offset=1e8, steps=[1, 0, 0, 0], std_norm=False)
def test_large_offset_changes_nothing(student, offset, steps, std_norm):
    """Rewards sharing a large offset (like 1e8 plus a few units) give the advantages of their spread."""
    rewards = [offset + x for x in steps]  # exact: integers below 2**53
    want = zscores(steps) if std_norm else [x - pmean(steps) for x in steps]
    what = call("group_advantages", rewards, std_norm)
    expect_close(student.group_advantages(rewards, std_norm), want, what, rel=1e-6, abs=1e-6)


# ---- the rewards are not changed ------------------------------------------------------------------------


@pytest.mark.promise("group_advantages.unchanged")
@given(rewards=spread(), std_norm=st.booleans())
@example(rewards=[1.0, 0.0, 0.0, 0.0], std_norm=True)
@example(rewards=[2.0, 2.0, 5.0], std_norm=False)
def test_rewards_are_not_changed(student, rewards, std_norm):
    """group_advantages returns a new list and leaves its rewards as they were (and its advantages follow
    the rewards: above the mean positive, below it negative)."""
    before = list(rewards)
    expect_signal(student, rewards, std_norm)
    what = call("group_advantages", before, std_norm)
    expect_true(not student.last_changed and rewards == before, what, "the call changed its rewards")
