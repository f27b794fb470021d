"""Exercise 14, SFT from filtered rollouts (hidden): `sft_grad` against central differences of the mean
token log-likelihood and by its structure, `filter_rollouts` by its definition and against the reference."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_equal, expect_pinned, expect_true

from .gradients import S, T, V, central_difference, copy3, opaque, policy_text, thetas, zeros

pytestmark = pytest.mark.exercise(14)


PAIR = st.tuples(st.integers(0, S - 1), st.tuples(*[st.integers(0, V - 1)] * T))
DATA = st.lists(PAIR, min_size=1, max_size=6)


def grad_call(policy, data):
    return f"sft_grad({policy_text(policy)}, {data!r})"


def _pin(student, reference):
    """Each sft_grad property below also pins two gradients: a zero table satisfies them."""
    policy = reference.TabPolicy(
        S, T, V, [[[0.3 * (s + t) - 0.4 * v for v in range(V)] for t in range(T)] for s in range(S)]
    )
    data = [(0, (1, 2)), (1, (0, 0)), (0, (1, 0))]
    expect_pinned(student, reference, "sft_grad", (policy, data), (policy, data[1:]))


def mean_token_loglik(policy, data):
    return math.fsum(
        policy.logp_tok(s, t, v) / (len(data) * len(seq)) for s, seq in data for t, v in enumerate(seq)
    )


# ---- sft_grad -----------------------------------------------------------------------------------------


@given(theta=thetas(-3.0, 3.0), data=DATA)
def test_sft_grad_is_the_gradient_of_the_mean_token_log_likelihood(student, lab, theta, data):
    """sft_grad equals the central-difference gradient of the mean token log-likelihood of the data."""
    policy = lab.TabPolicy(S, T, V, theta)
    want = central_difference(lambda: mean_token_loglik(policy, data), policy)
    expect_close(student.sft_grad(policy, data), want, grad_call(policy, data), rel=1e-5, abs=1e-6)


@given(theta=thetas(-3.0, 3.0), data=DATA)
def test_sft_grad_structure(student, reference, lab, theta, data):
    """Each logit row of the gradient sums to 0, and rows that no data token reaches are 0."""
    _pin(student, reference)
    policy = lab.TabPolicy(S, T, V, theta)
    g = student.sft_grad(policy, data)
    what = grad_call(policy, data)
    seen = {(s, t) for s, seq in data for t in range(len(seq))}
    for s in range(S):
        for t in range(T):
            row = g[s][t]
            expect_close(math.fsum(row), 0.0, f"sum of row [{s}][{t}] = {list(row)} of {what}", abs=1e-12)
            if (s, t) not in seen:
                expect_close(row, [0.0] * V, f"row [{s}][{t}] (no data token there) of {what}", abs=1e-15)


@given(theta=thetas(-3.0, 3.0), first=DATA, second=DATA)
def test_sft_grad_of_joined_data_is_the_weighted_mean(student, reference, lab, theta, first, second):
    """The gradient on two data sets joined is their gradients' mean weighted by their sizes."""
    _pin(student, reference)
    policy = lab.TabPolicy(S, T, V, theta)
    g1, g2 = student.sft_grad(policy, first), student.sft_grad(policy, second)
    g = student.sft_grad(policy, first + second)
    n1, n2 = len(first), len(second)
    want = [
        [
            [(n1 * a + n2 * b) / (n1 + n2) for a, b in zip(r1, r2, strict=True)]
            for r1, r2 in zip(b1, b2, strict=True)
        ]
        for b1, b2 in zip(g1, g2, strict=True)
    ]
    what = (
        grad_call(policy, first + second) + f"\n  vs the size-weighted mean of its first {n1} and last {n2}"
    )
    expect_close(g, want, what, rel=1e-9, abs=1e-12)


@st.composite
def fitted_case(draw):
    """Data for one state with every token at every position, and logits log(count): probs = frequencies."""
    extra = draw(st.integers(0, 3))
    columns = []
    for _ in range(T):
        tokens = list(range(V)) + [draw(st.integers(0, V - 1)) for _ in range(extra)]
        columns.append(draw(st.permutations(tokens)))
    data = [(0, tuple(col[i] for col in columns)) for i in range(V + extra)]
    theta = [[[math.log(col.count(v)) for v in range(V)] for col in columns]]
    return theta, data


@given(case=fitted_case())
def test_sft_grad_vanishes_where_the_policy_matches_the_data(student, reference, lab, case):
    """The gradient is 0 when the policy's token probabilities equal the data's token frequencies."""
    _pin(student, reference)
    theta, data = case
    policy = lab.TabPolicy(1, T, V, theta)
    expect_close(student.sft_grad(policy, data), zeros(1), grad_call(policy, data), abs=1e-12)


BEHAVIOUR = [
    [[0.0, 0.4, 0.8], [0.4, 0.8, 0.0]],
    [[0.4, 0.8, 0.0], [0.8, 0.0, 0.4]],
    [[0.8, 0.0, 0.4], [0.0, 0.4, 0.8]],
]
LEARNER = [
    [[0.0, 0.3, 0.6], [-0.2, 0.1, 0.4]],
    [[0.1, 0.4, 0.7], [-0.1, 0.2, 0.5]],
    [[0.2, 0.5, 0.8], [0.0, 0.3, -0.6]],
]


@pytest.mark.parametrize("seed", [0, 1, 2, 3], ids=opaque(4, "run"))
def test_sft_grad_matches_reference_on_filtered_rollouts(student, lab, reference, seed):
    """sft_grad matches the reference on rollouts that pass the filter, and changes no argument."""
    env = lab.ToyEnv(3, 2, 3, seed=seed)
    behaviour = lab.TabPolicy(3, 2, 3, copy3(BEHAVIOUR))
    rollouts = lab.collect(behaviour, env, random.Random(seed), 60)
    data = [(s, seq) for s, seq, R in rollouts if R >= 1.0] + [(s, seq) for s, seq, _ in rollouts[:5]]
    policy = lab.TabPolicy(3, 2, 3, copy3(LEARNER))
    before = repr((policy.theta, data))
    want = reference.sft_grad(policy, data)
    expect_close(student.sft_grad(policy, data), want, grad_call(policy, data), rel=1e-9, abs=1e-12)
    expect_true(
        repr((policy.theta, data)) == before, f"{grad_call(policy, data)} changed one of its arguments"
    )


# ---- filter_rollouts ----------------------------------------------------------------------------------

ROLLOUT = st.tuples(
    st.integers(0, 5), st.tuples(*[st.integers(0, 3)] * 2), st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 2.0])
)


def pairs(got):
    try:
        return [tuple(p) for p in got]
    except TypeError:
        return got


@given(rollouts=st.lists(ROLLOUT, max_size=12), min_reward=st.sampled_from([0.0, 0.25, 0.5, 1.0, 1.5, 3.0]))
def test_filter_rollouts_keeps_the_passing_pairs_in_order(student, rollouts, min_reward):
    """Kept are the (state, response) pairs of rollouts with R >= min_reward, in order, and nothing else."""
    before = list(rollouts)
    want = [(s, seq) for s, seq, R in rollouts if R >= min_reward]
    got = student.filter_rollouts(rollouts, min_reward)
    what = call("filter_rollouts", before, min_reward)
    expect_equal(pairs(got), want, what)
    expect_true(rollouts == before, f"{what} changed its rollouts to {rollouts}")


@given(rollouts=st.lists(ROLLOUT, max_size=12))
def test_filter_rollouts_default_threshold_is_one(student, rollouts):
    """By default only rollouts with reward at least 1.0 are kept."""
    want = [(s, seq) for s, seq, R in rollouts if R >= 1.0]
    expect_equal(pairs(student.filter_rollouts(rollouts)), want, call("filter_rollouts", rollouts))


@given(
    rollouts=st.lists(
        st.tuples(st.integers(0, 5), st.tuples(st.integers(0, 3)), st.floats(-5, 5)), max_size=12
    )
)
def test_filter_rollouts_matches_reference(student, reference, rollouts):
    """filter_rollouts matches the reference on rollouts with arbitrary rewards."""
    for min_reward in (1.0, 0.0, -1.5):
        want = reference.filter_rollouts(rollouts, min_reward)
        got = student.filter_rollouts(rollouts, min_reward)
        expect_equal(pairs(got), want, call("filter_rollouts", rollouts, min_reward))
