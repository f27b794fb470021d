"""Exercise 12, group advantages (hidden): z-score properties of `group_advantages` and comparisons with
the reference."""

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_pinned, expect_true

from .gradients import opaque

pytestmark = pytest.mark.exercise(12)


REWARD = st.floats(-100, 100)


def pmean(xs):
    return math.fsum(xs) / len(xs)


def psd(xs):
    m = pmean(xs)
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / len(xs))


def spread(min_sd=1e-3, min_size=2):
    """Reward lists whose population sd is clearly above any threshold in play."""
    return st.lists(REWARD, min_size=min_size, max_size=12).filter(lambda xs: psd(xs) > min_sd)


def _pin(student, reference):
    """Each property below also pins two groups' advantages: zeros or a constant satisfy most of them. The
    pins subtract the mean only (std_norm=False), so that a wrong standard deviation costs the checks of
    the standard deviation, not these."""
    expect_pinned(
        student, reference, "group_advantages", ([3.0, 1.0, 2.5], False), ([0.0, 4.0, 1.0, 1.0], False)
    )


@given(rewards=spread())
def test_advantages_are_z_scores(student, rewards):
    """With std_norm, the advantages have mean 0 and population standard deviation 1."""
    adv = student.group_advantages(rewards)
    what = call("group_advantages", rewards)
    expect_true(len(adv) == len(rewards), f"{what} has {len(adv)} advantages for {len(rewards)} rewards")
    expect_close(pmean(adv), 0.0, f"mean of {what} = {list(adv)}", abs=1e-9)
    expect_close(psd(adv), 1.0, f"population sd of {what} = {list(adv)}", rel=1e-9)


@given(rewards=spread(), std_norm=st.booleans())
def test_advantages_match_reference(student, reference, rewards, std_norm):
    """Advantages match the reference, response by response, and the rewards are left as they were."""
    before = list(rewards)
    want = reference.group_advantages(before, std_norm)
    got = student.group_advantages(rewards, std_norm)
    what = call("group_advantages", before, std_norm)
    expect_close(got, want, what, rel=1e-9, abs=1e-9)
    expect_true(rewards == before, f"{what} changed its rewards to {rewards}")


@given(value=REWARD, n=st.integers(1, 12), std_norm=st.booleans())
def test_identical_rewards_give_zeros(student, reference, value, n, std_norm):
    """A group whose rewards are all equal gets zero advantage everywhere, with or without std_norm."""
    _pin(student, reference)
    rewards = [value] * n
    what = call("group_advantages", rewards, std_norm=std_norm)
    expect_close(student.group_advantages(rewards, std_norm=std_norm), [0.0] * n, what, abs=1e-12)


@given(
    base=REWARD,
    jitter=st.lists(st.floats(-1.0, 1.0), min_size=2, max_size=12),
    scale=st.sampled_from([1e-9, 1e-8, 1e-7]),
)
def test_spread_below_eps_gives_zeros(student, reference, base, jitter, scale):
    """A group whose standard deviation is below eps counts as identical: zero advantages."""
    _pin(student, reference)
    rewards = [base + scale * j for j in jitter]
    assume(psd(rewards) < 5e-7)
    what = call("group_advantages", rewards)
    expect_close(student.group_advantages(rewards), [0.0] * len(rewards), what, abs=1e-12)


@given(rewards=spread(min_sd=0.01), factor=st.floats(2.0, 50.0))
def test_eps_argument_is_the_threshold(student, rewards, factor):
    """eps sets the threshold: a standard deviation below it gives zeros, one above it a z-score."""
    sd = psd(rewards)
    below = student.group_advantages(rewards, eps=sd * factor)
    expect_close(below, [0.0] * len(rewards), call("group_advantages", rewards, eps=sd * factor), abs=1e-12)
    above = student.group_advantages(rewards, eps=sd / factor)
    what = call("group_advantages", rewards, eps=sd / factor)
    expect_close(psd(above), 1.0, f"population sd of {what} = {list(above)}", rel=1e-9)


@given(rewards=spread(), shift=st.floats(-50, 50), std_norm=st.booleans())
def test_shift_invariance(student, reference, rewards, shift, std_norm):
    """Adding a constant to every reward leaves the advantages unchanged."""
    _pin(student, reference)
    moved = [r + shift for r in rewards]
    assume(psd(moved) > 1e-3)
    want = student.group_advantages(rewards, std_norm)
    got = student.group_advantages(moved, std_norm)
    what = call("group_advantages", moved, std_norm) + f"\n  vs the same without the shift {shift!r}"
    expect_close(got, want, what, rel=1e-6, abs=1e-6)


@given(rewards=spread(), scale=st.floats(0.01, 100.0))
def test_scale_invariance(student, reference, rewards, scale):
    """With std_norm, multiplying every reward by a positive constant leaves the advantages unchanged."""
    _pin(student, reference)
    scaled = [r * scale for r in rewards]
    assume(psd(scaled) > 1e-3)
    want = student.group_advantages(rewards)
    got = student.group_advantages(scaled)
    what = call("group_advantages", scaled) + f"\n  vs the same without the factor {scale!r}"
    expect_close(got, want, what, rel=1e-9, abs=1e-9)


@given(rewards=spread())
def test_without_std_norm_only_the_mean_is_subtracted(student, rewards):
    """With std_norm off, each advantage is its reward minus the group mean."""
    m = pmean(rewards)
    what = call("group_advantages", rewards, std_norm=False)
    expect_close(student.group_advantages(rewards, std_norm=False), [r - m for r in rewards], what, abs=1e-9)


@pytest.mark.parametrize(
    "rewards",
    [[1, 0, 0, 0], [0, 1, 1, 0, 1, 1, 1, 0], [1], [0, 0, 0, 0, 0, 0, 0, 1], [1.0, 0.0]],
    ids=opaque(5, "group"),
)
@pytest.mark.parametrize("std_norm", [True, False], ids=opaque(2, "norm"))
def test_binary_reward_groups_match_reference(student, reference, rewards, std_norm):
    """Groups of 0/1 rewards, as the toy environment gives, match the reference."""
    _pin(student, reference)
    want = reference.group_advantages(rewards, std_norm)
    expect_close(
        student.group_advantages(rewards, std_norm),
        want,
        call("group_advantages", rewards, std_norm),
        abs=1e-9,
    )
