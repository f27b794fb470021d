"""Exercise 10 (hidden): reinforce_grad, against the reference, the exact gradient and its algebra."""

import itertools
import math
import random
import weakref

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_true

from .gradients import copy3, softmax

pytestmark = pytest.mark.exercise(10)


logit = st.floats(-2.0, 2.0, allow_nan=False)
reward = st.floats(-2.0, 2.0, allow_nan=False)


@st.composite
def shapes_and_thetas(draw, max_s=3, max_t=2, max_v=3):
    S, T, V = draw(st.integers(1, max_s)), draw(st.integers(1, max_t)), draw(st.integers(2, max_v))
    row = st.lists(logit, min_size=V, max_size=V)
    theta = draw(st.lists(st.lists(row, min_size=T, max_size=T), min_size=S, max_size=S))
    return S, T, V, theta


@st.composite
def batches(draw, min_size=1, max_size=5):
    """(S, T, V, theta, batch): a policy and a batch of (state, response, reward) triples."""
    S, T, V, theta = draw(shapes_and_thetas())
    sample = st.tuples(st.integers(0, S - 1), st.tuples(*[st.integers(0, V - 1)] * T), reward)
    batch = draw(st.lists(sample, min_size=min_size, max_size=max_size))
    return S, T, V, theta, batch


def normalized(draw, n):
    raw = draw(st.lists(st.floats(0.01, 1.0), min_size=n, max_size=n))
    return [x / math.fsum(raw) for x in raw]


def formula(S, T, V, theta, batch, baseline, weights=None):
    """sum_i w_i (R_i - b) sum_t (onehot(v_t) - probs(s_i, t)), b = sum_i w_i R_i for the mean baseline."""
    w = weights if weights is not None else [1.0 / len(batch)] * len(batch)
    b = math.fsum(wi * R for wi, (_, _, R) in zip(w, batch, strict=True)) if baseline == "mean" else 0.0
    g = [[[0.0] * V for _ in range(T)] for _ in range(S)]
    for wi, (s, seq, R) in zip(w, batch, strict=True):
        for t, v in enumerate(seq):
            p = softmax(theta[s][t])
            for u in range(V):
                g[s][t][u] += wi * (R - b) * ((1.0 if u == v else 0.0) - p[u])
    return g


def grad(lab, student, S, T, V, theta, batch, *args):
    got = student.reinforce_grad(lab.TabPolicy(S, T, V, copy3(theta)), batch, *args)
    what = call("reinforce_grad", f"TabPolicy({S}, {T}, {V}, theta={theta})", batch, *args)
    expect_true(
        isinstance(got, list | tuple)
        and len(got) == S
        and all(isinstance(r, list | tuple) and len(r) == T for r in got)
        and all(isinstance(x, list | tuple) and len(x) == V for r in got for x in r),
        what,
        f"expected an S x T x V = {S} x {T} x {V} table, got {got!r}",
    )
    return got, what


_WORKS: weakref.WeakSet = weakref.WeakSet()  # the students whose reinforce_grad passed _works


def _works(student, reference):
    """A guard of the properties below, which a zero table or a constant also satisfies: one sample
    without a baseline, and two samples with the default mean baseline, must give the formula's
    gradient (a core result: an answer that knows the types but not the policy, such as the uniform
    distribution, fails it; an edge slip, such as weights normalised or "None" read as "mean", does
    not)."""
    if student in _WORKS:
        return
    theta = [[[0.4, -0.3, 0.0]], [[1.0, 0.0, -0.5]]]
    for batch, args in (([(0, (2,), 1.0)], ("none",)), ([(0, (2,), 1.0), (1, (0,), -0.5)], ())):
        got = student.reinforce_grad(reference.TabPolicy(2, 1, 3, copy3(theta)), batch, *args)
        what = call("reinforce_grad", f"TabPolicy(2, 1, 3, theta={theta})", batch, *args)
        expect_close(got, formula(2, 1, 3, theta, batch, *(args or ("mean",))), what, rel=1e-9, abs=1e-12)
    _WORKS.add(student)


def enumerate_all(S, T, V, theta, rewards):
    """Every (state, response, reward) with weight P(state) P(response | state), states uniform."""
    batch, weights = [], []
    for s in range(S):
        for j, seq in enumerate(itertools.product(range(V), repeat=T)):
            p = math.prod(softmax(theta[s][t])[v] for t, v in enumerate(seq))
            batch.append((s, seq, rewards[s][j]))
            weights.append(p / S)
    return batch, weights


def expected_reward(S, T, V, theta, rewards):
    return math.fsum(
        math.prod(softmax(theta[s][t])[v] for t, v in enumerate(seq)) * rewards[s][j] / S
        for s in range(S)
        for j, seq in enumerate(itertools.product(range(V), repeat=T))
    )


def numerical_gradient(S, T, V, theta, rewards, h=1e-5):
    g = [[[0.0] * V for _ in range(T)] for _ in range(S)]
    for s, t, u in itertools.product(range(S), range(T), range(V)):
        up, down = copy3(theta), copy3(theta)
        up[s][t][u] += h
        down[s][t][u] -= h
        g[s][t][u] = (expected_reward(S, T, V, up, rewards) - expected_reward(S, T, V, down, rewards)) / (
            2 * h
        )
    return g


@st.composite
def exact_cases(draw):
    S, T, V, theta = draw(shapes_and_thetas(max_s=2))
    n = V**T
    rewards = draw(st.lists(st.lists(reward, min_size=n, max_size=n), min_size=S, max_size=S))
    return S, T, V, theta, rewards


@pytest.mark.promise("reinforce_grad.formula")
@pytest.mark.parametrize("seed", range(3))
def test_matches_reference(lab, student, reference, seed):
    """reinforce_grad gives the reference's gradient on sampled batches."""
    rng = random.Random(seed)
    S, T, V = rng.choice([(3, 2, 3), (2, 3, 2), (1, 1, 4)])
    theta = [[[rng.uniform(-2, 2) for _ in range(V)] for _ in range(T)] for _ in range(S)]
    env = lab.ToyEnv(S, T, V, seed=seed)
    batch = lab.collect(lab.TabPolicy(S, T, V, copy3(theta)), env, rng, rng.randint(1, 6))
    batch = [(s, seq, R + rng.choice([0.0, 0.5, -1.0])) for s, seq, R in batch]
    w = [rng.random() + 0.01 for _ in batch]
    w = [x / sum(w) for x in w]
    for args in ((), ("mean",), ("none",), ("mean", w), ("none", w)):
        got, what = grad(lab, student, S, T, V, theta, batch, *args)
        want = reference.reinforce_grad(reference.TabPolicy(S, T, V, copy3(theta)), batch, *args)
        expect_close(got, want, what, rel=1e-9, abs=1e-12)


@pytest.mark.promise("reinforce_grad.formula")
@given(batches(), st.sampled_from(["mean", "none"]), st.booleans(), st.data())
def test_matches_the_formula(lab, student, case, baseline, weighted, data):
    """The gradient is sum_i w_i (R_i - b) grad log pi, b the weighted mean reward (own reward included)."""
    S, T, V, theta, batch = case
    args = (baseline, normalized(data.draw, len(batch))) if weighted else (baseline,)
    got, what = grad(lab, student, S, T, V, theta, batch, *args)
    expect_close(got, formula(S, T, V, theta, batch, *args), what, rel=1e-9, abs=1e-12)


@pytest.mark.promise("reinforce_grad.formula")
@given(exact_cases())
def test_exact_enumeration_gives_the_true_gradient(lab, student, case):
    """With every response weighted by its probability and no baseline, it is the true policy gradient."""
    S, T, V, theta, rewards = case
    batch, weights = enumerate_all(S, T, V, theta, rewards)
    got, what = grad(lab, student, S, T, V, theta, batch, "none", weights)
    expect_close(
        got,
        numerical_gradient(S, T, V, theta, rewards),
        what + " vs a central-difference gradient",
        rel=1e-5,
        abs=1e-7,
    )


@pytest.mark.promise("reinforce_grad.mean_baseline")
@settings(max_examples=4)
@given(exact_cases())
def test_exact_enumeration_mean_baseline_changes_nothing(lab, student, case):
    """With every response weighted by its probability, the mean baseline leaves the gradient unchanged."""
    S, T, V, theta, rewards = case
    batch, weights = enumerate_all(S, T, V, theta, rewards)
    got, what = grad(lab, student, S, T, V, theta, batch, "mean", weights)
    expect_close(
        got,
        numerical_gradient(S, T, V, theta, rewards),
        what + " vs a central-difference gradient",
        rel=1e-5,
        abs=1e-7,
    )


@pytest.mark.promise("reinforce_grad.equal_rewards_zero")
@given(batches(), reward, st.booleans(), st.data())
def test_equal_rewards_with_mean_baseline_give_zero(lab, student, reference, case, r, weighted, data):
    """When every reward is the same, the mean baseline makes the gradient zero."""
    _works(student, reference)
    S, T, V, theta, batch = case
    batch = [(s, seq, r) for s, seq, _ in batch]
    args = ("mean", normalized(data.draw, len(batch))) if weighted else ()
    got, what = grad(lab, student, S, T, V, theta, batch, *args)
    zero = [[[0.0] * V for _ in range(T)] for _ in range(S)]
    expect_close(got, zero, what, abs=1e-12)


@pytest.mark.promise("reinforce_grad.formula")
@given(batches(), st.lists(reward, min_size=5, max_size=5), reward, st.sampled_from(["mean", "none"]))
def test_linear_in_rewards(lab, student, case, other, c, baseline):
    """The gradient is linear in the rewards: rewards R1 + c R2 give g(R1) + c g(R2), each the formula's."""
    S, T, V, theta, batch = case
    b1 = batch
    b2 = [(s, seq, other[i]) for i, (s, seq, _) in enumerate(batch)]
    mix = [(s, seq, R + c * other[i]) for i, (s, seq, R) in enumerate(batch)]
    g1 = formula(S, T, V, theta, b1, baseline)
    g2 = formula(S, T, V, theta, b2, baseline)
    got, what = grad(lab, student, S, T, V, theta, mix, baseline)
    want = [
        [[x + c * y for x, y in zip(r1, r2, strict=False)] for r1, r2 in zip(s1, s2, strict=False)]
        for s1, s2 in zip(g1, g2, strict=False)
    ]
    expect_close(
        got, want, what + f" vs g(R1) + {c} g(R2) with R2 = {other[: len(batch)]}", rel=1e-7, abs=1e-10
    )


@pytest.mark.promise("reinforce_grad.mean_baseline")
@example(
    case=(
        2,
        1,
        3,
        [[[0.4, -0.3, 0.0]], [[1.0, 0.0, -0.5]]],
        [(0, (2,), 1.0), (1, (0,), -0.5), (0, (1,), 0.0)],
    ),
    weights=None,
)
@example(
    case=(1, 2, 2, [[[0.2, 0.0], [0.0, -0.4]]], [(0, (1, 0), 1.0), (0, (0, 0), 2.0)]), weights=[0.25, 0.75]
)
@given(batches(min_size=2), st.none() | st.lists(st.floats(0.01, 1.0), min_size=5, max_size=5))
def test_mean_baseline_is_the_weighted_mean_reward(lab, student, case, weights):
    """The mean baseline is b = sum_i w_i R_i (each sample's own reward included), default weights 1/n."""
    S, T, V, theta, batch = case
    if weights is not None:  # weights that sum to 1: a baseline normalising them agrees
        weights = [x / math.fsum(weights[: len(batch)]) for x in weights[: len(batch)]]
    args = ("mean", weights) if weights is not None else ()
    got, what = grad(lab, student, S, T, V, theta, batch, *args)
    expect_close(got, formula(S, T, V, theta, batch, *(args or ("mean",))), what, rel=1e-9, abs=1e-12)


@pytest.mark.promise("reinforce_grad.default_weights")
@example(
    case=(1, 1, 3, [[[0.4, -0.3, 0.0]]], [(0, (2,), 1.0), (0, (0,), 0.0), (0, (2,), -1.0)]), baseline="none"
)
@given(batches(), st.sampled_from(["mean", "none"]))
def test_default_weights_are_one_over_n(lab, student, case, baseline):
    """Leaving out the weights is the same as weights 1/len(batch)."""
    S, T, V, theta, batch = case
    got, what = grad(lab, student, S, T, V, theta, batch, baseline)
    want = formula(S, T, V, theta, batch, baseline, [1.0 / len(batch)] * len(batch))
    expect_close(got, want, what + " vs weights 1/len(batch)", rel=1e-9, abs=1e-12)


@pytest.mark.promise("reinforce_grad.other_baseline_zero")
@example(case=(1, 1, 2, [[[0.3, -0.2]]], [(0, (0,), 1.0), (0, (1,), 0.5)]), baseline=None)
@given(batches(min_size=2), st.sampled_from(["none", None, "zero", "baseline", "Mean"]))
def test_other_baselines_mean_no_baseline(lab, student, case, baseline):
    """Any baseline other than "mean" means b = 0."""
    S, T, V, theta, batch = case
    got, what = grad(lab, student, S, T, V, theta, batch, baseline)
    expect_close(got, formula(S, T, V, theta, batch, "none"), what, rel=1e-9, abs=1e-12)


@pytest.mark.promise("reinforce_grad.weights_as_given")
@example(
    case=(2, 1, 2, [[[0.5, -0.5]], [[0.0, 1.0]]], [(0, (0,), 1.0), (1, (1,), 0.0), (0, (1,), 0.5)]),
    baseline="mean",
    weights=[2.0, 1.0, 1.0],
)
@example(case=(1, 2, 2, [[[0.2, 0.0], [0.0, -0.4]]], [(0, (1, 0), 1.0)]), baseline="none", weights=[3.0])
@given(batches(), st.sampled_from(["mean", "none"]), st.lists(st.floats(0.05, 3.0), min_size=5, max_size=5))
def test_weights_are_used_as_given(lab, student, reference, case, baseline, weights):
    """Weights that do not sum to 1 are used as given: not normalised, in the sum or the baseline."""
    _works(student, reference)
    S, T, V, theta, batch = case
    w = weights[: len(batch)]
    if abs(math.fsum(w) - 1.0) < 0.05:
        w = [2.0 * x for x in w]  # keep them far from normalised
    got, what = grad(lab, student, S, T, V, theta, batch, baseline, w)
    expect_close(got, formula(S, T, V, theta, batch, baseline, w), what, rel=1e-9, abs=1e-12)


@pytest.mark.promise("reinforce_grad.unvisited_zero")
@given(batches(), st.sampled_from(["mean", "none"]))
def test_unvisited_states_get_zero(lab, student, reference, case, baseline):
    """States with no sample get zero rows."""
    _works(student, reference)
    S, T, V, theta, batch = case
    got, what = grad(lab, student, S, T, V, theta, batch, baseline)
    for s in set(range(S)) - {s for s, _, _ in batch}:
        expect_true(
            all(x == 0.0 for row in got[s] for x in row), what, f"state {s} has no sample but got {got[s]}"
        )


@pytest.mark.promise("reinforce_grad.inputs_unchanged")
@example(
    case=(
        2,
        2,
        2,
        [[[0.1, 0.0], [0.0, 0.3]], [[0.0, -0.5], [0.2, 0.0]]],
        [(0, (1, 0), 1.0), (1, (0, 0), -0.5)],
    ),
    baseline="mean",
    weighted=False,
)
@given(batches(), st.sampled_from(["mean", "none"]), st.booleans())
def test_policy_and_batch_are_not_changed(lab, student, reference, case, baseline, weighted):
    """Neither the policy nor the batch (nor the weights) is changed."""
    _works(student, reference)
    S, T, V, theta, batch = case
    pol = lab.TabPolicy(S, T, V, copy3(theta))
    before = list(batch)
    weights = [0.5 + i for i in range(len(batch))] if weighted else None
    w_before = list(weights) if weighted else None
    student.reinforce_grad(pol, batch, baseline, weights)
    what = call("reinforce_grad", f"TabPolicy({S}, {T}, {V}, theta={theta})", before, baseline, w_before)
    expect_true(pol.theta == theta and "0" not in student.last_changed, what, "the policy changed")
    expect_true(batch == before and "1" not in student.last_changed, what, "the batch changed")
    expect_true(weights == w_before and "3" not in student.last_changed, what, "the weights changed")
