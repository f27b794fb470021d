"""Exercise 14, SFT from filtered rollouts (hidden): `sft_grad` against central differences of the mean
token log-likelihood and by its structure, `filter_rollouts` by its definition and against the reference."""

import math
import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_equal, expect_form, expect_true

from .gradients import S, T, V, central_difference, copy3, opaque, policy_text, thetas, zeros

pytestmark = pytest.mark.exercise(14)


PAIR = st.tuples(st.integers(0, S - 1), st.tuples(*[st.integers(0, V - 1)] * T))
# Data drawn freely, or from a few pairs so that a pair is listed twice (it counts twice: data is a list).
DATA = st.one_of(
    st.lists(PAIR, min_size=1, max_size=6),
    st.lists(PAIR, min_size=1, max_size=3).flatmap(
        lambda pool: st.lists(st.sampled_from(pool), min_size=2, max_size=6)
    ),
)
LONG = (2, 3, 3)  # policies with T = 3: responses of 1, 2 and 3 tokens
MIXED_PAIR = st.tuples(
    st.integers(0, LONG[0] - 1), st.lists(st.integers(0, LONG[2] - 1), min_size=1, max_size=3).map(tuple)
)
MIXED = st.lists(MIXED_PAIR, min_size=1, max_size=5)


def grad_call(policy, data):
    return f"sft_grad({policy_text(policy)}, {data!r})"


def mean_token_loglik(policy, data):
    return math.fsum(
        policy.logp_tok(s, t, v) / (len(data) * len(seq)) for s, seq in data for t, v in enumerate(seq)
    )


def nonzero(g):
    return any(abs(x) > 1e-9 for block in g for row in block for x in row)


def combined(g1, g2, k1, k2):
    return [
        [[k1 * a + k2 * b for a, b in zip(r1, r2, strict=True)] for r1, r2 in zip(b1, b2, strict=True)]
        for b1, b2 in zip(g1, g2, strict=True)
    ]


# ---- sft_grad -----------------------------------------------------------------------------------------


@pytest.mark.promise("sft_grad.formula")
@given(theta=thetas(-3.0, 3.0), data=DATA)
@example(theta=[[[0.0] * V] * T] * S, data=[(0, (1, 2)), (0, (1, 0))])
@example(theta=[[[0.5, 0.0, -0.5]] * T] * S, data=[(0, (1, 2)), (1, (0, 0)), (0, (1, 2))])  # a pair twice
def test_sft_grad_is_the_gradient_of_the_mean_token_log_likelihood(student, lab, theta, data):
    """sft_grad equals the central-difference gradient of the mean token log-likelihood of the data."""
    policy = lab.TabPolicy(S, T, V, copy3(theta))
    want = central_difference(lambda: mean_token_loglik(policy, data), policy)
    expect_close(student.sft_grad(policy, data), want, grad_call(policy, data), rel=1e-5, abs=1e-6)


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("sft_grad.per_response_weight")
@given(theta=thetas(-3.0, 3.0, *LONG), first=MIXED, second=MIXED)
@example(theta=[[[0.0] * 3] * 3] * 2, first=[(0, (1,))], second=[(0, (1, 2, 0)), (1, (2, 2))])
def test_sft_grad_weighs_each_response_alike(student, lab, theta, first, second):
    """Responses may be shorter than T, and each response's tokens share 1 / len(data): the gradient on two
    data sets joined is their gradients' mean weighted by their numbers of responses (not of tokens), and
    a response's first position gets 1 / len(seq) of what its first token alone would give."""
    policy = lab.TabPolicy(*LONG, copy3(theta))
    g1, g2 = student.sft_grad(policy, first), student.sft_grad(policy, second)
    n1, n2 = len(first), len(second)
    g = student.sft_grad(policy, first + second)
    what = (
        grad_call(policy, first + second)
        + f"\n  vs the mean of its first {n1} and last {n2}, weighted by size"
    )
    expect_close(g, combined(g1, g2, n1 / (n1 + n2), n2 / (n1 + n2)), what, rel=1e-9, abs=1e-12)
    for s, seq in (first[0], second[-1]):
        alone = student.sft_grad(policy, [(s, seq[:1])])
        expect_true(nonzero(alone), grad_call(policy, [(s, seq[:1])]), f"got {alone}: one token's gradient")
        whole = student.sft_grad(policy, [(s, seq)])
        what = (
            grad_call(policy, [(s, seq)]) + f"\n  position 0 vs 1/{len(seq)} x that of its first token alone"
        )
        expect_close(whole[s][0], [x / len(seq) for x in alone[s][0]], what, rel=1e-9, abs=1e-12)


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


@pytest.mark.promise("sft_grad.formula")
@given(case=fitted_case())
def test_sft_grad_vanishes_where_the_policy_matches_the_data(student, lab, case):
    """The gradient is 0 when the policy's token probabilities equal the data's token frequencies (and not
    0 without the last response, whose tokens then are less frequent than their probabilities)."""
    theta, data = case
    policy = lab.TabPolicy(1, T, V, theta)
    expect_close(student.sft_grad(policy, data), zeros(1), grad_call(policy, data), abs=1e-12)
    fewer = student.sft_grad(policy, data[:-1])
    expect_true(
        nonzero(fewer), grad_call(policy, data[:-1]), f"got {fewer}: the policy does not fit this data"
    )


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


def filtered_data(lab, seed):
    env = lab.ToyEnv(3, 2, 3, seed=seed)
    behaviour = lab.TabPolicy(3, 2, 3, copy3(BEHAVIOUR))
    rollouts = lab.collect(behaviour, env, random.Random(seed), 60)
    return [(s, seq) for s, seq, R in rollouts if R >= 1.0] + [(s, seq) for s, seq, _ in rollouts[:5]]


@pytest.mark.promise("sft_grad.formula")
@pytest.mark.parametrize("seed", [0, 1, 2, 3], ids=opaque(4, "run"))
def test_sft_grad_matches_reference_on_filtered_rollouts(student, lab, reference, seed):
    """sft_grad matches the reference on rollouts that pass the filter."""
    data = filtered_data(lab, seed)
    policy = lab.TabPolicy(3, 2, 3, copy3(LEARNER))
    want = reference.sft_grad(policy, data)
    expect_close(student.sft_grad(policy, data), want, grad_call(policy, data), rel=1e-9, abs=1e-12)


@pytest.mark.promise("sft_grad.empty_data")
@given(theta=thetas(-3.0, 3.0), pair=PAIR)
@example(theta=[[[0.0] * V] * T] * S, pair=(1, (0, 2)))
def test_sft_grad_of_empty_data_is_zero(student, lab, theta, pair):
    """Empty data (nothing passed the filter) gives a table of zeros; one response does not."""
    policy = lab.TabPolicy(S, T, V, copy3(theta))
    expect_close(student.sft_grad(policy, []), zeros(), grad_call(policy, []), abs=0.0)
    one = student.sft_grad(policy, [pair])
    expect_true(nonzero(one), grad_call(policy, [pair]), f"got {one}: one response's gradient is not 0")


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("sft_grad.unchanged")
@given(theta=thetas(-3.0, 3.0, *LONG), data=MIXED)
def test_sft_grad_changes_no_argument(student, lab, theta, data):
    """sft_grad changes neither the policy nor the data. (Data of one state moves that state's rows only.)"""
    policy = lab.TabPolicy(*LONG, copy3(theta))
    for s in range(LONG[0]):
        mine = [(s, seq) for _, seq in data]
        before = repr((policy.theta, mine))
        g = student.sft_grad(policy, mine)
        what = grad_call(policy, mine)
        expect_true(not student.last_changed, what, f"the call changed its arguments {student.last_changed}")
        expect_true(repr((policy.theta, mine)) == before, what, "the call changed its arguments")
        ok = len(g) == LONG[0] and all(
            (u == s) == any(abs(x) > 1e-12 for row in b for x in row) for u, b in enumerate(g)
        )
        expect_true(ok, what, f"got {g}: only the rows of state {s} move")


# ---- filter_rollouts ----------------------------------------------------------------------------------

THRESHOLDS = [-1.0, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 3.0]
REWARDS = [-2.0, -1.0, -0.25, 0.0, 0.25, 0.5, 1.0, 1.5, 2.0]
ROLLOUT = st.tuples(st.integers(0, 5), st.tuples(*[st.integers(0, 3)] * 2), st.sampled_from(REWARDS))


@st.composite
def repeated_rollouts(draw, min_size=1):
    """Rollouts over a few (state, response) pairs, so that a pair comes back (with its reward or
    another): the repeats the docstring keeps."""
    pool = draw(
        st.lists(st.tuples(st.integers(0, 5), st.tuples(*[st.integers(0, 3)] * 2)), min_size=1, max_size=3)
    )
    picks = draw(
        st.lists(st.tuples(st.sampled_from(pool), st.sampled_from(REWARDS)), min_size=min_size, max_size=10)
    )
    return [(s, seq, R) for (s, seq), R in picks]


ROLLOUTS = st.one_of(st.lists(ROLLOUT, min_size=1, max_size=12), repeated_rollouts())


def pairs(got):
    try:
        return [tuple(p) for p in got]
    except TypeError:
        return got


def kept(got):
    """The kept pairs as a set of (state, response tuple), or the answer itself if it has no such shape:
    the checks of the threshold ask which pairs are kept, not in what order or how often."""
    try:
        return {(s, tuple(seq)) for s, seq in got}
    except (TypeError, ValueError):
        return got


def expect_kept(got, want, what):
    expect_true(
        kept(got) == set(want), what, f"kept {pairs(got)!r}; expected the pairs {sorted(set(want))!r}"
    )


@pytest.mark.promise("filter_rollouts.threshold")
@given(rollouts=ROLLOUTS, min_reward=st.sampled_from(THRESHOLDS))
@example(rollouts=[(0, (1, 2), 0.5), (1, (0, 0), 0.25), (2, (3, 3), 0.5)], min_reward=0.5)  # R == min_reward
@example(rollouts=[(0, (1, 2), 0.0), (1, (0, 0), 0.25)], min_reward=0.0)  # a reward of 0 passes 0
@example(rollouts=[(0, (1, 2), -1.0), (1, (0, 0), -2.0), (2, (1, 1), 0.0)], min_reward=-1.0)  # negatives
def test_filter_rollouts_keeps_the_passing_pairs(student, rollouts, min_reward):
    """Kept are the (state, response) pairs of the rollouts with R >= min_reward (equal passes), and no
    other pair."""
    want = [(s, seq) for s, seq, R in rollouts if R >= min_reward]
    expect_kept(
        student.filter_rollouts(rollouts, min_reward), want, call("filter_rollouts", rollouts, min_reward)
    )


@pytest.mark.promise("filter_rollouts.threshold")
@given(
    rollouts=st.lists(
        st.tuples(st.integers(0, 5), st.tuples(st.integers(0, 3)), st.one_of(st.floats(-5, 5), st.just(0.0))),
        min_size=1,
        max_size=12,
    )
)
@example(rollouts=[(0, (1,), -1.5), (1, (2,), 0.0), (2, (0,), -2.0), (3, (3,), 1.0)])
def test_filter_rollouts_matches_reference(student, reference, rollouts):
    """filter_rollouts keeps the reference's pairs on rollouts with arbitrary (negative, zero) rewards."""
    for min_reward in (1.0, 0.0, -1.5):
        want = reference.filter_rollouts(rollouts, min_reward)
        expect_kept(
            student.filter_rollouts(rollouts, min_reward), want, call("filter_rollouts", rollouts, min_reward)
        )


# Rewards on both sides of 1.0, none equal to it (a reward equal to the threshold is the threshold's check).
AROUND_ONE = st.tuples(
    st.integers(0, 5), st.tuples(*[st.integers(0, 3)] * 2), st.sampled_from([0.0, 0.5, 0.75, 1.25, 2.0])
)


@pytest.mark.promise("filter_rollouts.default_threshold")
@given(rollouts=st.lists(AROUND_ONE, min_size=1, max_size=12))
@example(rollouts=[(0, (1, 2), 1.25), (1, (0, 0), 0.75), (2, (3, 3), 2.0), (3, (0, 1), 0.5)])
def test_filter_rollouts_default_threshold_is_one(student, rollouts):
    """By default only rollouts with reward at least 1.0 are kept (0.75 is not, 1.25 is)."""
    want = [(s, seq) for s, seq, R in rollouts if R >= 1.0]
    expect_kept(student.filter_rollouts(rollouts), want, call("filter_rollouts", rollouts))


POOL = [(0, (1, 2)), (1, (0, 0)), (0, (2, 1)), (2, (1, 1))]


@pytest.mark.promise("filter_rollouts.order_and_repeats")
@given(picks=st.lists(st.tuples(st.integers(0, len(POOL) - 1), st.booleans()), min_size=1, max_size=12))
@example(picks=[(3, True), (0, True), (3, True), (1, False), (2, True), (0, True)])
def test_filter_rollouts_keeps_order_and_repeats(student, picks):
    """The kept pairs come in the rollouts' order, a pair that passes twice kept twice (rewards 2.0 and 0.0,
    far from the threshold 1.0)."""
    rollouts = [(*POOL[i], 2.0 if passes else 0.0) for i, passes in picks]
    want = [POOL[i] for i, passes in picks if passes]
    expect_equal(pairs(student.filter_rollouts(rollouts, 1.0)), want, call("filter_rollouts", rollouts, 1.0))


@pytest.mark.promise("filter_rollouts.order_and_repeats")
@given(rollouts=repeated_rollouts(min_size=2), min_reward=st.sampled_from(THRESHOLDS))
@example(rollouts=[(1, (0, 0), 1.0), (0, (1, 2), 1.0), (1, (0, 0), 1.5), (0, (1, 2), 0.0)], min_reward=1.0)
def test_filter_rollouts_keeps_order_and_repeats_at_any_threshold(student, reference, rollouts, min_reward):
    """Rollouts that come back (the same pair again, with its reward or another), at any threshold: the
    kept pairs are the reference's, in the rollouts' order, each repeat that passes kept."""
    want = reference.filter_rollouts(rollouts, min_reward)
    what = call("filter_rollouts", rollouts, min_reward)
    expect_equal(pairs(student.filter_rollouts(rollouts, min_reward)), pairs(want), what)


@pytest.mark.promise("filter_rollouts.empty")
@given(rollouts=st.lists(ROLLOUT, max_size=8), min_reward=st.sampled_from(THRESHOLDS))
def test_filter_rollouts_can_keep_nothing(student, rollouts, min_reward):
    """No rollouts, or none whose reward reaches min_reward, give an empty list; one that passes is kept."""
    expect_equal(pairs(student.filter_rollouts([], min_reward)), [], call("filter_rollouts", [], min_reward))
    failing = [(s, seq, min_reward - 1.0) for s, seq, _ in rollouts]
    expect_equal(
        pairs(student.filter_rollouts(failing, min_reward)), [], call("filter_rollouts", failing, min_reward)
    )
    one = [(4, (3, 3), min_reward + 2.0)]
    expect_equal(
        pairs(student.filter_rollouts(one, min_reward)),
        [(4, (3, 3))],
        call("filter_rollouts", one, min_reward),
    )


@pytest.mark.promise("filter_rollouts.new_list")
@given(rollouts=ROLLOUTS, min_reward=st.sampled_from(THRESHOLDS))
@example(rollouts=[(0, (1, 2), 2.0), (1, (0, 0), 2.0)], min_reward=1.0)
def test_filter_rollouts_returns_a_list_of_pairs(student, reference, rollouts, min_reward):
    """filter_rollouts returns a list (not a tuple or a set) of (state, response) tuples."""
    rollouts = [*rollouts, (5, (3, 3), min_reward + 1.0)]  # one that passes: the pairs' form is seen
    want = reference.filter_rollouts(rollouts, min_reward)
    got = student.filter_rollouts(rollouts, min_reward)
    expect_kept(got, want, call("filter_rollouts", rollouts, min_reward))  # a working answer: its form counts
    expect_form(got, want, call("filter_rollouts", rollouts, min_reward))


@pytest.mark.promise("filter_rollouts.unchanged")
@given(rollouts=ROLLOUTS, min_reward=st.sampled_from(THRESHOLDS))
@example(rollouts=[(0, (1, 2), 0.0), (1, (0, 0), 2.0), (0, (1, 2), 0.0)], min_reward=1.0)
def test_filter_rollouts_changes_no_rollout(student, rollouts, min_reward):
    """filter_rollouts returns a new list and leaves its rollouts as they were (and keeps a rollout whose
    reward is well above min_reward, not one well below it)."""
    mine = [(s, seq, min_reward + (1.0 if i % 2 else -1.0)) for i, (s, seq, _) in enumerate(rollouts)]
    before = list(mine)
    got = student.filter_rollouts(mine, min_reward)
    what = call("filter_rollouts", before, min_reward)
    expect_true(not student.last_changed and mine == before, what, "the call changed its rollouts")
    expect_kept(got, [(s, seq) for s, seq, R in mine if R > min_reward], what)
