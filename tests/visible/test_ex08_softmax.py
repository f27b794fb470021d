"""Exercise 8: softmax(xs) = exp(x_i) / sum_j exp(x_j), computed stably (subtract the max first)."""

import math

import pytest

from grader.expect import call, expect_close, expect_true

pytestmark = pytest.mark.exercise(8)


@pytest.mark.promise("softmax.uniform")
def test_equal_logits_give_a_uniform_distribution(student):
    """Equal logits: every entry gets 1/n; two equal logits next to a larger one still share equally."""
    cases = (([0.0, 0.0], [0.5, 0.5]), ([3.0, 3.0, 3.0, 3.0], [0.25] * 4))
    for xs, want in (*cases, ([0.0, 0.0, math.log(2.0)], [0.25, 0.25, 0.5])):
        expect_close(student.softmax(xs), want, call("softmax", xs))


@pytest.mark.promise("softmax.formula")
def test_known_values(student):
    """exp(x_i) / sum_j exp(x_j) on a few small inputs."""
    cases = [
        ([1.0, 2.0, 3.0], [0.09003057317038046, 0.24472847105479764, 0.6652409557748218]),
        (
            [2.0, 1.0, 0.0, 1.0],
            [0.5344466453885229, 0.19661193324148185, 0.07232948812851327, 0.19661193324148185],
        ),
        ([0.0, math.log(3.0)], [0.25, 0.75]),  # exp(0) = 1 and exp(log 3) = 3
    ]
    for xs, want in cases:
        expect_close(student.softmax(xs), want, call("softmax", xs))


@pytest.mark.promise("softmax.single")
def test_a_single_logit_gets_probability_one(student):
    """One entry: [1.0], whatever the logit; with a second logit log 3 above it, that one gets 3/4."""
    for xs in ([5.0], [-700.0], [1000.0]):
        expect_close(student.softmax(xs), [1.0], call("softmax", xs))
    for xs, want in (([5.0, 5.0 + math.log(3.0)], [0.25, 0.75]), ([math.log(3.0), 0.0], [0.75, 0.25])):
        expect_close(student.softmax(xs), want, call("softmax", xs))


@pytest.mark.promise("softmax.stable")
def test_large_logits_do_not_overflow(student):
    """exp(1000) overflows a float: subtract the largest logit first (the result does not change)."""
    cases = [
        ([1000.0, 1000.0 + math.log(2.0)], [1 / 3, 2 / 3]),
        ([1000.0, 0.0], [1.0, 0.0]),  # exp(-1000) is 0.0 as a float
        ([0.0, 1000.0], [0.0, 1.0]),
        ([-1000.0, 0.0, 1000.0], [0.0, 0.0, 1.0]),
        ([-1000.0, -1000.0], [0.5, 0.5]),  # without the shift every exp is 0.0 and the sum too
    ]
    for xs, want in cases:
        got = student.softmax(xs)
        expect_true(
            all(math.isfinite(p) for p in got), call("softmax", xs), f"expected finite values, got {got}"
        )
        expect_close(got, want, call("softmax", xs))


@pytest.mark.promise("softmax.stable")
def test_adding_a_constant_changes_nothing(student):
    """softmax(x + c) = softmax(x): the constant cancels between numerator and denominator."""
    xs = [0.5, -1.0, 2.0]
    want = [0.1752903921400367, 0.039112573270687456, 0.7855970345892759]
    expect_close(student.softmax(xs), want, call("softmax", xs))
    for c in (10.0, -3.0, 500.0):
        shifted = [x + c for x in xs]
        expect_close(
            student.softmax(shifted), want, call("softmax", shifted) + f" vs softmax({xs})", rel=1e-9
        )
