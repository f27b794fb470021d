"""Exercise 16 (exact KL): exact_kl(p, q) = KL(p || q), the sum of p_i * ln(p_i / q_i) over the outcomes
with p_i > 0, each term p_i (ln p_i - ln q_i) however small p_i or q_i; math.inf where q_i == 0 < p_i."""

import math

import pytest

from grader.expect import call, expect_close, expect_true

pytestmark = pytest.mark.exercise(16)


@pytest.mark.promise("exact_kl.formula")
def test_exact_kl_of_two_coin_flips(student):
    """KL([0.5, 0.5] || [0.25, 0.75]) = 0.5 ln(0.5/0.25) + 0.5 ln(0.5/0.75) = 0.5 ln 2 + 0.5 ln(2/3);
    KL([0.5, 0.5] || [0.1, 0.9]) = 0.5 ln 5 + 0.5 ln(5/9)."""
    p, q = [0.5, 0.5], [0.25, 0.75]
    expect_close(student.exact_kl(p, q), 0.14384103622589042, call("exact_kl", p, q))
    p, q = [0.5, 0.5], [0.1, 0.9]
    expect_close(student.exact_kl(p, q), 0.5108256237659907, call("exact_kl", p, q))


@pytest.mark.promise("exact_kl.formula")
def test_exact_kl_of_three_outcomes(student):
    """A three-outcome example: 0.1 ln(1/3) + 0.2 ln(2/3) + 0.7 ln(7/4), natural logarithms."""
    p, q = [0.1, 0.2, 0.7], [0.3, 0.3, 0.4]
    expect_close(student.exact_kl(p, q), 0.20077680106635193, call("exact_kl", p, q))


@pytest.mark.promise("exact_kl.direction")
def test_exact_kl_is_not_symmetric(student):
    """KL is not symmetric: swapping p and q of the coin-flip example gives a different number."""
    p, q = [0.25, 0.75], [0.5, 0.5]
    got = student.exact_kl(p, q)
    expect_close(got, 0.13081203594113697, call("exact_kl", p, q))
    expect_true(
        abs(got - 0.14384103622589042) > 1e-3,
        "KL(q || p) should differ from KL(p || q)",
        f"{call('exact_kl', p, q)} = {got!r}, and KL([0.5, 0.5] || [0.25, 0.75]) = 0.14384103622589042",
    )


@pytest.mark.promise("exact_kl.formula")
def test_exact_kl_of_a_distribution_with_itself_is_zero(student):
    """KL(p || p) = 0: every log ratio is ln 1 = 0 (and moving p away from q makes it positive)."""
    p, q = [0.2, 0.3, 0.5], [0.2, 0.3, 0.5]
    expect_close(student.exact_kl(p, q), 0.0, call("exact_kl", p, q), abs=1e-12)
    p = [0.5, 0.3, 0.2]  # 0.5 ln 2.5 + 0.3 ln 1 + 0.2 ln 0.4
    expect_close(student.exact_kl(p, q), 0.27488721956224654, call("exact_kl", p, q))


@pytest.mark.promise("exact_kl.zero_p_terms_skipped")
def test_exact_kl_skips_outcomes_that_p_never_takes(student):
    """Terms with p_i == 0 are skipped (0 ln 0 counts as 0), even where q_i is 0 too."""
    p, q = [0.0, 0.5, 0.5], [0.0, 0.25, 0.75]
    expect_close(student.exact_kl(p, q), 0.14384103622589042, call("exact_kl", p, q))
    # Only the second outcome counts: 1.0 * ln(1.0 / 0.5) = ln 2.
    p, q = [0.0, 1.0], [0.5, 0.5]
    expect_close(student.exact_kl(p, q), 0.6931471805599453, call("exact_kl", p, q))


@pytest.mark.promise("exact_kl.tiny_terms_count")
def test_exact_kl_counts_tiny_probabilities(student):
    """However small q_i: 0.5 (ln 0.5 - ln 1e-310) + 0.5 ln 0.5, finite (0.5 / 1e-310 would overflow to inf);
    however small p_i: 1e-13 (ln 1e-13 - ln 1e-300) + (1 - 1e-13) ln(1 - 1e-13), about 6.6e-11, not 0."""
    p, q = [0.5, 0.5], [1e-310, 1.0]
    expect_close(student.exact_kl(p, q), 356.2075422335172, call("exact_kl", p, q))
    p, q = [1e-13, 1.0 - 1e-13], [1e-300, 1.0]
    expect_close(student.exact_kl(p, q), 6.598416107441038e-11, call("exact_kl", p, q), rel=1e-6, abs=1e-15)


@pytest.mark.promise("exact_kl.zero_q_infinite")
def test_exact_kl_is_infinite_where_q_is_zero_and_p_is_not(student):
    """KL(p || q) is infinite where q_i == 0 < p_i: math.inf, not an error."""
    p, q = [0.5, 0.5], [0.0, 1.0]
    expect_close(student.exact_kl(p, q), math.inf, call("exact_kl", p, q))
