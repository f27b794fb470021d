"""Exercise 9 (hidden): add_score, against the reference, a numerical gradient and its algebra."""

import math
import weakref

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_equal, expect_true

from .gradients import copy3, softmax

pytestmark = pytest.mark.exercise(9)


value = st.floats(-3.0, 3.0, allow_nan=False)
weight = st.floats(-4.0, 4.0, allow_nan=False)


@st.composite
def setups(draw):
    """(S, T, V, theta, g, s, t, v): a policy's logits, a gradient table already holding values, an entry."""
    S, T, V = draw(st.integers(1, 2)), draw(st.integers(1, 2)), draw(st.integers(2, 4))
    table = st.lists(
        st.lists(st.lists(value, min_size=V, max_size=V), min_size=T, max_size=T), min_size=S, max_size=S
    )
    theta, g = draw(table), draw(table)
    s, t, v = draw(st.integers(0, S - 1)), draw(st.integers(0, T - 1)), draw(st.integers(0, V - 1))
    return S, T, V, theta, g, s, t, v


_WORKS: weakref.WeakSet = weakref.WeakSet()  # the students whose add_score passed _works


def _works(student, reference):
    """A guard of the properties below, which doing nothing to g also satisfies: w = 1 and w = -0.5
    on a zero table of a skewed row must add the reference's score (a core result: an answer that knows
    the types but not the policy, such as the uniform distribution, fails it; an edge slip, such as a
    softmax that overflows at 1000, does not)."""
    if student in _WORKS:
        return
    theta = [[[0.5, -0.2, 0.1], [2.0, 0.0, -1.0]]]
    for t, v, w in ((0, 1, 1.0), (1, 2, -0.5)):
        g = [[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]
        student.add_score(g, reference.TabPolicy(1, 2, 3, copy3(theta)), 0, t, v, w)
        want = [[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]
        reference.add_score(want, reference.TabPolicy(1, 2, 3, copy3(theta)), 0, t, v, w)
        expect_close(
            g[0][t],
            want[0][t],
            call("add_score", "g = zeros", f"TabPolicy(1, 2, 3, theta={theta})", 0, t, v, w)
            + f", then g[0][{t}]",
        )
    _WORKS.add(student)


def run(lab, student, setup, w):
    S, T, V, theta, g, s, t, v = setup
    pol = lab.TabPolicy(S, T, V, copy3(theta))
    g = copy3(g)
    got = student.add_score(g, pol, s, t, v, w)
    what = (
        call("add_score", "g", f"TabPolicy({S}, {T}, {V}, theta={theta})", s, t, v, w)
        + f" with g = {setup[4]}"
    )
    return got, g, pol, what


@pytest.mark.promise("add_score.formula")
@given(setups(), weight)
def test_matches_reference(lab, student, reference, setup, w):
    """add_score changes g as the reference does."""
    _, g, _, what = run(lab, student, setup, w)
    S, T, V, theta, g0, s, t, v = setup
    want = copy3(g0)
    reference.add_score(want, reference.TabPolicy(S, T, V, copy3(theta)), s, t, v, w)
    expect_close(g, want, what + ", then g", rel=1e-9, abs=1e-12)


@pytest.mark.promise("add_score.formula")
@given(setups(), weight)
def test_adds_onehot_minus_probs(lab, student, setup, w):
    """g[s][t] grows by w * (onehot(v) - probs(s, t))."""
    got, g, pol, what = run(lab, student, setup, w)
    S, T, V, theta, g0, s, t, v = setup
    p = softmax(theta[s][t])
    want = [g0[s][t][u] + w * ((1.0 if u == v else 0.0) - p[u]) for u in range(V)]
    expect_close(g[s][t], want, what + f", then g[{s}][{t}]", rel=1e-9, abs=1e-12)


@pytest.mark.promise("add_score.only_row")
@given(setups(), weight)
def test_only_row_s_t_changes(lab, student, reference, setup, w):
    """Every entry of g outside g[s][t] stays as it was."""
    _works(student, reference)
    got, g, pol, what = run(lab, student, setup, w)
    S, T, V, theta, g0, s, t, v = setup
    for s2 in range(S):
        for t2 in range(T):
            if (s2, t2) != (s, t):
                expect_true(
                    g[s2][t2] == g0[s2][t2],
                    what,
                    f"g[{s2}][{t2}] changed to {g[s2][t2]}: only g[{s}][{t}] may",
                )


@pytest.mark.promise("add_score.in_place")
@given(setups(), weight)
def test_changes_g_in_place_and_returns_none(lab, student, reference, setup, w):
    """add_score changes the caller's g in place and returns None."""
    _works(student, reference)
    got, g, pol, what = run(lab, student, setup, w)
    S, T, V, theta, g0, s, t, v = setup
    expect_equal(got, None, what + " (the return value)")
    if abs(w) >= 1e-3:  # smaller steps may round away against g's entries
        expect_true(g != g0, what, "the caller's g did not change")


@pytest.mark.promise("add_score.policy_unchanged")
@example(
    setup=(1, 2, 3, [[[0.5, -0.2, 0.1], [2.0, 0.0, 1.0]]], [[[0.1, 0.0, 0.0], [0.0] * 3]], 0, 1, 2), w=1.0
)
@given(setups(), weight)
def test_policy_is_not_changed(lab, student, reference, setup, w):
    """add_score leaves the policy (its logits) as it was."""
    _works(student, reference)
    got, g, pol, what = run(lab, student, setup, w)
    expect_equal(pol.theta, setup[3], what + ", then the policy's theta")
    expect_true("1" not in student.last_changed, what, "the policy changed")


@pytest.mark.promise("add_score.sums_to_zero")
@given(setups(), weight)
def test_added_entries_sum_to_zero(lab, student, reference, setup, w):
    """The entries added to g[s][t] sum to 0 (onehot and probabilities both sum to 1)."""
    _works(student, reference)
    _, g, _, what = run(lab, student, setup, w)
    s, t = setup[5], setup[6]
    added = [a - b for a, b in zip(g[s][t], setup[4][s][t], strict=False)]
    expect_true(
        abs(math.fsum(added)) <= 1e-12 * (1 + abs(w)) + 1e-14 * sum(map(abs, setup[4][s][t])),
        what,
        f"added {added} to g[{s}][{t}], which sums to {math.fsum(added)!r}",
    )


@pytest.mark.promise("add_score.accumulates")
@example(
    setup=(1, 2, 3, [[[0.5, -0.2, 0.1], [2.0, 0.0, 1.0]]], [[[0.3, -1.0, 0.2], [0.0] * 3]], 0, 0, 2),
    w1=1.0,
    w2=-0.25,
)
@given(setups(), weight, weight)
def test_accumulates_on_what_g_holds(lab, student, setup, w1, w2):
    """Two calls with weights w1 and w2 add both scores to what g already held: g + (w1 + w2) times
    onehot(v) - probs(s, t) in row g[s][t]."""
    S, T, V, theta, g0, s, t, v = setup
    pol = lab.TabPolicy(S, T, V, copy3(theta))
    twice = copy3(g0)
    student.add_score(twice, pol, s, t, v, w1)
    student.add_score(twice, pol, s, t, v, w2)
    p = softmax(theta[s][t])
    want = copy3(g0)
    for u in range(V):
        for w in (w1, w2):
            want[s][t][u] += w * ((1.0 if u == v else 0.0) - p[u])
    expect_close(
        twice,
        want,
        call("add_score", "g", f"TabPolicy({S}, {T}, {V}, theta={theta})", s, t, v, w1)
        + f" then with w = {w2}, with g = {g0}: g after both",
        rel=1e-9,
        abs=1e-12,
    )


@pytest.mark.promise("add_score.formula")
@given(setups(), weight)
def test_matches_numerical_gradient(lab, student, setup, w):
    """What is added equals w times a central-difference gradient of log pi(v | s, t)."""
    S, T, V, theta, _, s, t, v = setup
    g = [[[0.0] * V for _ in range(T)] for _ in range(S)]
    student.add_score(g, lab.TabPolicy(S, T, V, copy3(theta)), s, t, v, w)
    h = 1e-5
    for u in range(V):
        up, down = list(theta[s][t]), list(theta[s][t])
        up[u] += h
        down[u] -= h
        num = w * (math.log(softmax(up)[v]) - math.log(softmax(down)[v])) / (2 * h)
        expect_close(
            g[s][t][u],
            num,
            call("add_score", "zeros", f"TabPolicy({S}, {T}, {V}, theta={theta})", s, t, v, w)
            + f": g[{s}][{t}][{u}] vs the central difference",
            rel=1e-5,
            abs=1e-7,
        )


@pytest.mark.promise("add_score.stable")
@example(offset=1000.0, spread=[0.0, -1.0, -1000.0], v=1, w=1.0)
@given(
    st.sampled_from([1000.0, -1000.0, 800.0, 1e5]),
    st.lists(st.floats(-3.0, 3.0), min_size=2, max_size=4),
    st.integers(0, 3),
    weight,
)
def test_large_logits(lab, student, offset, spread, v, w):
    """Logits like 1000 give finite scores: the probabilities come from a stable softmax."""
    theta = [[[offset + x for x in spread]]]
    V, v = len(spread), v % len(spread)
    g = [[[0.0] * V]]
    student.add_score(g, lab.TabPolicy(1, 1, V, copy3(theta)), 0, 0, v, w)
    p = softmax(theta[0][0])
    expect_close(
        g,
        [[[w * ((1.0 if u == v else 0.0) - p[u]) for u in range(V)]]],
        call("add_score", "zeros", f"TabPolicy(1, 1, {V}, theta={theta})", 0, 0, v, w) + ", then g",
        rel=1e-9,
        abs=1e-12,
    )


@pytest.mark.promise("add_score.large_token_ids")
@given(st.integers(258, 400), st.data())
def test_large_vocabulary(lab, student, reference, V, data):
    """The one-hot part marks token v in a vocabulary of hundreds of tokens too (token ids are compared
    by value)."""
    _works(student, reference)
    v = data.draw(st.integers(257, V - 1), label="v")
    theta = [[[((u * 37) % 11) / 5.0 for u in range(V)]]]  # drawing hundreds of logits is slow, and moot here
    g = [[[0.0] * V]]
    student.add_score(g, lab.TabPolicy(1, 1, V, copy3(theta)), 0, 0, v, 1.0)
    p = softmax(theta[0][0])
    expect_close(
        g,
        [[[(1.0 if u == v else 0.0) - p[u] for u in range(V)]]],
        call("add_score", "zeros", f"TabPolicy(1, 1, {V}, theta=...)", 0, 0, v, 1.0) + ", then g",
        rel=1e-9,
        abs=1e-12,
    )
