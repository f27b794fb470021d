"""Exercise 16 (exact KL), hidden checks: reference comparisons and properties of KL(p || q), tiny
probabilities (down to subnormal q_i) counted as they are, and math.inf where q_i == 0 < p_i."""

import math

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_pinned, expect_true

pytestmark = pytest.mark.exercise(16)

# KL can come out at about -5e-16 where it is 0 (rounding), so "non-negative" allows a little below 0.
TOL = 1e-12


def _normalised(weights):
    total = sum(weights)
    return [w / total for w in weights]


# Weights of ordinary size, and now and then a tiny one (an outcome of probability about 1e-12 to 1e-6, which
# counts as it is: smoothing every probability by an epsilon changes its term).
weight = st.one_of(
    st.floats(min_value=1e-3, max_value=1.0), st.sampled_from([1e-12, 1e-9, 1e-6]), st.just(1.0)
)


@st.composite
def positive_pair(draw, min_size=1, max_size=6):
    """Two distributions over the same outcomes, both strictly positive."""
    n = draw(st.integers(min_size, max_size))
    p = _normalised(draw(st.lists(weight, min_size=n, max_size=n)))
    q = _normalised(draw(st.lists(weight, min_size=n, max_size=n)))
    return p, q


@st.composite
def pair_with_zeros(draw):
    """p has zeros (some where q is 0 as well); q is positive wherever p is."""
    n = draw(st.integers(2, 7))
    support = draw(st.lists(st.booleans(), min_size=n, max_size=n).filter(any))
    p = _normalised([draw(weight) if s else 0.0 for s in support])
    q_zero = [not s and draw(st.booleans()) for s in support]
    q_zero = q_zero if not all(q_zero) else [False] * n
    q = _normalised([0.0 if z else draw(weight) for z in q_zero])
    return p, q


def _direct(p, q):
    return math.fsum(pi * (math.log(pi) - math.log(qi)) for pi, qi in zip(p, q, strict=True) if pi > 0)


def _pin(student, reference):
    """Each property below also pins two values: 0.0 or a constant satisfies most of them."""
    expect_pinned(
        student, reference, "exact_kl", ([0.1, 0.2, 0.7], [0.3, 0.3, 0.4]), ([0.6, 0.4], [0.2, 0.8])
    )


@pytest.mark.promise("exact_kl.formula")
@given(positive_pair())
@example(([1.0], [1.0]))  # one outcome: KL 0
@example(([0.5, 0.5], [1e-12, 1.0 - 1e-12]))  # a tiny q_i: its term is 0.5 ln(0.5 / 1e-12)
@example(([1e-10, 1.0 - 1e-10], [0.5, 0.5]))  # a tiny p_i counts too
def test_matches_the_reference(student, reference, pq):
    """exact_kl gives the reference's value."""
    p, q = pq
    expect_close(student.exact_kl(p, q), reference.exact_kl(p, q), call("exact_kl", p, q), rel=1e-9, abs=TOL)


@pytest.mark.promise("exact_kl.zero_p_terms_skipped")
@given(pair_with_zeros())
@example(([0.0, 1.0], [0.5, 0.5]))  # p_i == 0 < q_i
@example(([0.0, 0.3, 0.7], [0.0, 0.6, 0.4]))  # p_i == q_i == 0
def test_matches_the_direct_formula_with_zeros_in_p(student, pq):
    """exact_kl is the sum of p_i ln(p_i / q_i) over p_i > 0, skipping outcomes where p_i == 0."""
    p, q = pq
    expect_close(student.exact_kl(p, q), _direct(p, q), call("exact_kl", p, q), rel=1e-9, abs=TOL)


# One outcome of tiny probability under p (1e-13 to 1e-12: each term is below a cut-off at 1e-12) and far
# tinier under q (down to subnormal: p_i / q_i would overflow there), the rest shared: the tiny term is
# most of the KL, so dropping it or getting inf shows.
tiny_p = st.sampled_from([1e-13, 3e-13, 9.9e-13])
tinier_q = st.sampled_from([1e-200, 1e-300, 1e-310, 5e-320])


@st.composite
def tiny_pair(draw):
    eps_p, eps_q = draw(tiny_p), draw(tinier_q)
    n = draw(st.integers(1, 4))
    rest = _normalised(draw(st.lists(st.floats(0.1, 1.0), min_size=n, max_size=n)))
    at = draw(st.integers(0, n))
    p = [(1.0 - eps_p) * r for r in rest]
    q = [(1.0 - eps_q) * r for r in rest]
    return p[:at] + [eps_p] + p[at:], q[:at] + [eps_q] + q[at:]


@settings(max_examples=3)  # drawn beside named examples of each case
@pytest.mark.promise("exact_kl.tiny_terms_count")
@given(tiny_pair())
@example(([0.5, 0.5], [1e-310, 1.0]))  # about 356.2: 0.5 / 1e-310 overflows, ln 0.5 - ln 1e-310 does not
@example(([1e-13, 1.0 - 1e-13], [1e-300, 1.0]))  # about 6.6e-11: the tiny p_i counts
def test_tiny_probabilities_count_as_they_are(student, pq):
    """Terms count however small p_i or q_i: a p_i below 1e-12 is not dropped, and a subnormal q_i gives a
    finite term, p_i (ln p_i - ln q_i), not inf."""
    p, q = pq
    expect_close(student.exact_kl(p, q), _direct(p, q), call("exact_kl", p, q), rel=1e-9, abs=TOL)


@st.composite
def pair_with_zero_q(draw):
    """p positive where q is 0 (at least once), q a distribution elsewhere."""
    p, q = draw(pair_with_zeros())
    support = [i for i, pi in enumerate(p) if pi > 0]
    where = draw(st.lists(st.sampled_from(support), min_size=1, max_size=2, unique=True))
    q = [0.0 if i in where else qi for i, qi in enumerate(q)]
    if sum(q) == 0:  # q's whole mass was where it is now 0: give it back elsewhere
        q[p.index(0.0) if 0.0 in p else where[-1]] = 1.0
    return p, _normalised(q)


@settings(max_examples=3)  # drawn beside named examples of each case
@pytest.mark.promise("exact_kl.zero_q_infinite")
@given(pair_with_zero_q())
@example(([0.5, 0.5], [0.0, 1.0]))
@example(([1e-13, 1.0 - 1e-13], [0.0, 1.0]))  # however small p_i
def test_is_infinite_where_q_is_zero_and_p_is_not(student, reference, pq):
    """Where q_i == 0 < p_i, KL(p || q) is infinite: math.inf, no error."""
    _pin(student, reference)
    p, q = pq
    expect_close(student.exact_kl(p, q), math.inf, call("exact_kl", p, q))


@pytest.mark.promise("exact_kl.formula")
@given(positive_pair())
def test_is_never_negative(student, reference, pq):
    """KL is never negative (up to rounding)."""
    _pin(student, reference)
    p, q = pq
    got = student.exact_kl(p, q)
    expect_true(got >= -TOL, f"{call('exact_kl', p, q)} should be >= 0 (up to rounding)", f"got {got!r}")


@pytest.mark.promise("exact_kl.formula")
@given(pair_with_zeros())
def test_of_a_distribution_with_itself_is_zero(student, reference, pq):
    """KL(p || p) is 0."""
    _pin(student, reference)
    p, _ = pq
    same = list(p)
    expect_close(student.exact_kl(p, same), 0.0, call("exact_kl", p, same), abs=TOL)


@pytest.mark.promise("exact_kl.formula")
@given(positive_pair(min_size=2))
def test_is_positive_when_the_distributions_differ(student, reference, pq):
    """KL(p || q) is positive when p and q differ (at least Pinsker's bound, half the squared L1 distance)."""
    _pin(student, reference)
    p, q = pq
    got = student.exact_kl(p, q)
    bound = 0.5 * sum(abs(a - b) for a, b in zip(p, q, strict=True)) ** 2
    expect_true(
        got >= bound - TOL, f"{call('exact_kl', p, q)} should be >= {bound!r} (Pinsker)", f"got {got!r}"
    )


@pytest.mark.promise("exact_kl.direction")
@given(positive_pair(min_size=2))
def test_swapping_the_arguments_gives_the_other_direction(student, pq):
    """exact_kl(q, p) is KL(q || p), which in general differs from KL(p || q)."""
    p, q = pq
    expect_close(student.exact_kl(q, p), _direct(q, p), call("exact_kl", q, p), rel=1e-9, abs=TOL)
    expect_close(student.exact_kl(p, q), _direct(p, q), call("exact_kl", p, q), rel=1e-9, abs=TOL)


@pytest.mark.promise("exact_kl.direction")
def test_is_asymmetric_on_a_skewed_pair(student):
    """KL is not symmetric: the two directions differ on a skewed pair."""
    p, q = [0.9, 0.1], [0.5, 0.5]
    forward, backward = student.exact_kl(p, q), student.exact_kl(q, p)
    expect_close(forward, _direct(p, q), call("exact_kl", p, q))
    expect_close(backward, _direct(q, p), call("exact_kl", q, p))
    expect_true(
        abs(forward - backward) > 0.05,
        "KL(p || q) and KL(q || p) should differ here",
        f"{call('exact_kl', p, q)} = {forward!r}, {call('exact_kl', q, p)} = {backward!r}",
    )


@pytest.mark.promise("exact_kl.formula")
@given(positive_pair(max_size=3), positive_pair(max_size=3))
def test_adds_over_independent_pairs(student, reference, pq1, pq2):
    """KL of two independent pairs of distributions is the sum of their KLs."""
    _pin(student, reference)
    (p1, q1), (p2, q2) = pq1, pq2
    p = [a * b for a in p1 for b in p2]
    q = [a * b for a in q1 for b in q2]
    want = student.exact_kl(p1, q1) + student.exact_kl(p2, q2)
    expect_close(student.exact_kl(p, q), want, call("exact_kl", p, q), rel=1e-9, abs=1e-11)


@pytest.mark.promise("exact_kl.formula")
@given(positive_pair(min_size=2), st.data())
def test_does_not_depend_on_the_order_of_outcomes(student, reference, pq, data):
    """Listing the outcomes in another order (the same for p and q) gives the same KL."""
    _pin(student, reference)
    p, q = pq
    order = data.draw(st.permutations(range(len(p))))
    p2, q2 = [p[i] for i in order], [q[i] for i in order]
    expect_close(
        student.exact_kl(p2, q2), student.exact_kl(p, q), call("exact_kl", p2, q2), rel=1e-9, abs=TOL
    )
