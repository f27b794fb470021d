"""Exercise 12, group advantages: `group_advantages`.

GRPO scores each response against its own group: subtract the group mean and, with std_norm, divide by
the group's population standard deviation (a z-score). A group whose rewards are all equal (standard
deviation below eps) carries no signal: every advantage is 0.
"""

import pytest

from grader.expect import call, expect_close

pytestmark = pytest.mark.exercise(12)

ROOT3 = 1.7320508075688772  # sqrt(3)


def check(student, rewards, want, **kw):
    expect_close(
        student.group_advantages(rewards, **kw), want, call("group_advantages", rewards, **kw), abs=1e-9
    )


def test_one_success_in_four(student):
    """The demo's group [1, 0, 0, 0]: mean 1/4, sd sqrt(3)/4, so (1 - 1/4) / (sqrt(3)/4) = sqrt(3); the
    success in another place moves its advantage with it."""
    check(student, [1.0, 0.0, 0.0, 0.0], [ROOT3, -1 / ROOT3, -1 / ROOT3, -1 / ROOT3])
    check(student, [0.0, 0.0, 1.0, 0.0], [-1 / ROOT3, -1 / ROOT3, ROOT3, -1 / ROOT3])


def test_two_rewards_become_minus_one_and_one(student):
    """[2, 4]: mean 3, population sd 1 (not the sample sd, which would be sqrt(2))."""
    check(student, [2.0, 4.0], [-1.0, 1.0])


def test_uneven_group(student):
    """[3, 1, 2, 2, 7]: mean 3, population sd sqrt(22/5); the order of the rewards is kept."""
    want = [0.0, -0.9534625892455922, -0.4767312946227961, -0.4767312946227961, 1.9069251784911845]
    check(student, [3.0, 1.0, 2.0, 2.0, 7.0], want)


def test_without_std_norm_only_the_mean_is_subtracted(student):
    """std_norm=False: [1, 0, 0, 0] minus its mean 1/4."""
    check(student, [1.0, 0.0, 0.0, 0.0], [0.75, -0.25, -0.25, -0.25], std_norm=False)


@pytest.mark.parametrize("std_norm", [True, False])
def test_identical_rewards_give_zero_advantages(student, std_norm):
    """All rewards equal: no signal, every advantage is 0 (with or without std_norm); one reward raised by
    3 is signal again (the mean, 1.75, subtracted)."""
    check(student, [1.0, 1.0, 1.0], [0.0, 0.0, 0.0], std_norm=std_norm)
    check(student, [0.0, 0.0, 0.0, 0.0, 0.0], [0.0] * 5, std_norm=std_norm)
    check(student, [1.0, 1.0, 1.0, 4.0], [-0.75, -0.75, -0.75, 2.25], std_norm=False)


def test_spread_below_eps_counts_as_identical(student):
    """sd = 5e-8 is below the default eps = 1e-6: zeros. sd = 5e-6 is above it: a z-score again.
    A larger eps (0.6 > sd = 0.5) zeroes [0, 1] too."""
    check(student, [0.0, 1e-7], [0.0, 0.0])
    check(student, [0.0, 1e-5], [-1.0, 1.0])
    check(student, [0.0, 1.0], [0.0, 0.0], eps=0.6)
