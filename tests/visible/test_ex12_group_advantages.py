"""Exercise 12, group advantages: `group_advantages`.

GRPO scores each response against its own group: subtract the group mean and, with std_norm, divide by
the group's population standard deviation (a z-score). A group whose rewards are all equal (standard
deviation below eps) carries no signal: every advantage is 0.
"""

import pytest

from grader.expect import call, expect_close, expect_true

pytestmark = pytest.mark.exercise(12)

ROOT3 = 1.7320508075688772  # sqrt(3)


def check(student, rewards, want, **kw):
    expect_close(
        student.group_advantages(rewards, **kw), want, call("group_advantages", rewards, **kw), abs=1e-9
    )


@pytest.mark.promise("group_advantages.z_score")
def test_one_success_in_four(student):
    """The demo's group [1, 0, 0, 0]: mean 1/4, sd sqrt(3)/4, so (1 - 1/4) / (sqrt(3)/4) = sqrt(3); the
    success in another place moves its advantage with it."""
    check(student, [1.0, 0.0, 0.0, 0.0], [ROOT3, -1 / ROOT3, -1 / ROOT3, -1 / ROOT3])
    check(student, [0.0, 0.0, 1.0, 0.0], [-1 / ROOT3, -1 / ROOT3, ROOT3, -1 / ROOT3])


@pytest.mark.promise("group_advantages.z_score")
def test_two_rewards_become_minus_one_and_one(student):
    """[2, 4]: mean 3, population sd 1 (not the sample sd, which would be sqrt(2))."""
    check(student, [2.0, 4.0], [-1.0, 1.0])


@pytest.mark.promise("group_advantages.z_score")
def test_uneven_group(student):
    """[3, 1, 2, 2, 7]: mean 3, population sd sqrt(22/5); the order of the rewards is kept."""
    want = [0.0, -0.9534625892455922, -0.4767312946227961, -0.4767312946227961, 1.9069251784911845]
    check(student, [3.0, 1.0, 2.0, 2.0, 7.0], want)


@pytest.mark.promise("group_advantages.mean_only")
def test_without_std_norm_only_the_mean_is_subtracted(student):
    """std_norm=False: [1, 0, 0, 0] minus its mean 1/4."""
    check(student, [1.0, 0.0, 0.0, 0.0], [0.75, -0.25, -0.25, -0.25], std_norm=False)


def check_signal(student, rewards, **kw):
    """A group that is not a tie carries signal: the rewards above the mean get positive advantages, the
    ones below negative (whatever the exact values, which the checks above pin)."""
    got = student.group_advantages(rewards, **kw)
    mean = sum(rewards) / len(rewards)
    signs = [(r > mean) - (r < mean) for r in rewards]
    expect_true(
        len(got) == len(rewards) and [(a > 0) - (a < 0) for a in got] == signs,
        call("group_advantages", rewards, **kw),
        f"got {got!r}: rewards above the mean {mean!r} should get positive advantages, below it negative",
    )


@pytest.mark.promise("group_advantages.identical_zero")
@pytest.mark.parametrize("std_norm", [True, False])
def test_identical_rewards_give_zero_advantages(student, std_norm):
    """All rewards equal, a single reward too: no signal, every advantage is 0 (with or without std_norm);
    one reward raised by 3 is signal again."""
    check(student, [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], std_norm=std_norm)
    check(student, [0.0, 0.0, 0.0, 0.0, 0.0], [0.0] * 5, std_norm=std_norm)
    check(student, [2.5], [0.0], std_norm=std_norm)
    check_signal(student, [1.0, 1.0, 1.0, 4.0], std_norm=std_norm)


@pytest.mark.promise("group_advantages.below_eps_zero")
@pytest.mark.parametrize("std_norm", [True, False])
def test_spread_below_eps_counts_as_identical(student, std_norm):
    """sd = 5e-8 is below the default eps = 1e-6: zeros, with or without std_norm (a near-tie is a tie).
    sd = 5e-6 is above it: signal again."""
    check(student, [0.0, 1e-7], [0.0, 0.0], std_norm=std_norm)
    check(student, [3.0, 3.0 + 1e-7, 3.0], [0.0, 0.0, 0.0], std_norm=std_norm)
    check_signal(student, [0.0, 1e-5], std_norm=std_norm)


@pytest.mark.promise("group_advantages.eps_threshold")
def test_eps_sets_the_threshold(student):
    """A larger eps (0.6 > sd = 0.5) zeroes [0, 1]; a smaller one (0.4) does not. A standard deviation
    equal to eps is not below it: [1, 3] has sd exactly 1, and eps = 1.0 leaves its z-score [-1, 1]."""
    check(student, [0.0, 1.0], [0.0, 0.0], eps=0.6)
    check(student, [0.0, 1.0], [-1.0, 1.0], eps=0.4)
    check(student, [1.0, 3.0], [-1.0, 1.0], eps=1.0)
    check(student, [1.0, 3.0], [-1.0, 1.0], std_norm=False, eps=1.0)
