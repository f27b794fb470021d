"""Exercise 9: add_score(g, policy, s, t, v, w) adds w * (onehot(v) - probs(s, t)) to g[s][t], in place.

That is w times the gradient of log pi(v | s, t) with respect to the logits theta[s][t].
"""

import pytest

from grader.expect import call, expect_close, expect_equal, expect_true

pytestmark = pytest.mark.exercise(9)

THETA = [[[0.0, 0.0, 0.0], [1.0, 0.0, -1.0]], [[0.5, 0.5, 0.0], [0.0, 2.0, 0.0]]]


def policy(lab):
    return lab.TabPolicy(n_states=2, T=2, V=3, theta=[[row[:] for row in st] for st in THETA])


def zeros():
    return [[[0.0] * 3 for _ in range(2)] for _ in range(2)]


@pytest.mark.promise("add_score.formula")
def test_uniform_row_gives_onehot_minus_a_third(lab, student):
    """theta[0][0] is all zeros, so probs = [1/3] * 3; v = 2, w = 1 adds [-1/3, -1/3, 2/3] to g[0][0]."""
    g, pol = zeros(), policy(lab)
    student.add_score(g, pol, 0, 0, 2, 1.0)
    what = call("add_score", "g = zeros", f"TabPolicy(theta={THETA})", 0, 0, 2, 1.0)
    want = zeros()
    want[0][0] = [-1 / 3, -1 / 3, 2 / 3]
    expect_close(g, want, what + ", then g", rel=1e-9, abs=1e-15)


@pytest.mark.promise("add_score.formula")
def test_weighted_score_of_a_skewed_row(lab, student):
    """theta[0][1] = [1, 0, -1]: probs = softmax; w = 2, v = 0 adds 2 * ([1, 0, 0] - probs) to g[0][1]."""
    g, pol = zeros(), policy(lab)
    student.add_score(g, pol, 0, 1, 0, 2.0)
    want = zeros()
    want[0][1] = [0.6695180884503564, -0.4894569421095953, -0.18006114634076092]
    expect_close(
        g,
        want,
        call("add_score", "g = zeros", f"TabPolicy(theta={THETA})", 0, 1, 0, 2.0) + ", then g",
        rel=1e-9,
        abs=1e-15,
    )


@pytest.mark.promise("add_score.formula")
def test_negative_weight(lab, student):
    """w = -0.5 on theta[1][1] = [0, 2, 0], v = 1: the chosen token's logit goes down, the others up."""
    g, pol = zeros(), policy(lab)
    student.add_score(g, pol, 1, 1, 1, -0.5)
    want = zeros()
    want[1][1] = [0.053253489459600366, -0.1065069789192008, 0.053253489459600366]
    expect_close(
        g,
        want,
        call("add_score", "g = zeros", f"TabPolicy(theta={THETA})", 1, 1, 1, -0.5) + ", then g",
        rel=1e-9,
        abs=1e-15,
    )


@pytest.mark.promise("add_score.accumulates")
def test_adds_to_what_g_holds(lab, student):
    """add_score adds (g +=), it does not overwrite: other entries and earlier sums stay."""
    g, pol = zeros(), policy(lab)
    g[1][0] = [1.0, 2.0, 3.0]
    g[0][0] = [0.5, 0.5, 0.5]
    student.add_score(g, pol, 0, 0, 2, 1.0)
    student.add_score(g, pol, 0, 0, 2, 1.0)
    want = zeros()
    want[1][0] = [1.0, 2.0, 3.0]
    want[0][0] = [0.5 - 2 / 3, 0.5 - 2 / 3, 0.5 + 4 / 3]
    expect_close(
        g,
        want,
        "g[1][0] = [1, 2, 3], g[0][0] = [0.5] * 3, then twice "
        + call("add_score", "g", f"TabPolicy(theta={THETA})", 0, 0, 2, 1.0)
        + ", then g",
        rel=1e-9,
        abs=1e-15,
    )


@pytest.mark.promise("add_score.in_place")
def test_returns_none_and_changes_g_in_place(lab, student):
    """add_score returns None: its work is the change it makes to the caller's g."""
    g, pol = zeros(), policy(lab)
    got = student.add_score(g, pol, 1, 0, 0, 1.0)
    what = call("add_score", "g = zeros", f"TabPolicy(theta={THETA})", 1, 0, 0, 1.0)
    expect_equal(got, None, what + " (the return value: g is changed in place)")
    expect_true(g[1][0] != [0.0, 0.0, 0.0], what, "the caller's g[1][0] did not change")


@pytest.mark.promise("add_score.policy_unchanged")
def test_policy_is_not_changed(lab, student):
    """add_score only reads the policy: its logits stay as they were."""
    g, pol = zeros(), policy(lab)
    student.add_score(g, pol, 0, 1, 2, 1.0)
    what = call("add_score", "g = zeros", f"TabPolicy(theta={THETA})", 0, 1, 2, 1.0)
    expect_equal(pol.theta, THETA, what + ", then the policy's theta (it must not change)")
    expect_true(not student.last_changed, what, "the call changed the policy")
    expect_true(g[0][1][2] > 0.0, what, f"g[0][1] is {g[0][1]}: the call did not add the score to g")
