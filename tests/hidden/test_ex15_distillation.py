"""Exercise 15, on-policy distillation (hidden): `token_reverse_kl` by its definition, and
`on_policy_distill_grad` by exact enumeration against central differences of the given `exact_reverse_kl`
and against the reference on sampled responses."""

import itertools
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.expect import expect_close, expect_pinned, expect_true

from .gradients import S, T, V, central_difference, copy3, opaque, policy_text, thetas, zeros

pytestmark = pytest.mark.exercise(15)


SEQ = st.lists(st.integers(0, V - 1), min_size=1, max_size=T).map(tuple)
SAMPLES = st.lists(
    st.tuples(st.integers(0, S - 1), st.tuples(*[st.integers(0, V - 1)] * T)), min_size=1, max_size=6
)


def _policies(reference):
    student = [[[0.3 * (s + t) - 0.4 * v for v in range(V)] for t in range(T)] for s in range(S)]
    teacher = [[[0.5 * v - 0.2 * (s - t) for v in range(V)] for t in range(T)] for s in range(S)]
    return reference.TabPolicy(S, T, V, student), reference.TabPolicy(S, T, V, teacher)


def _pin_kl(student, reference):
    """Each token_reverse_kl property below also pins two answers: zeros satisfy them."""
    pol, teacher = _policies(reference)
    expect_pinned(student, reference, "token_reverse_kl", (pol, teacher, 0, (1, 2)), (pol, teacher, 1, (0,)))


def _pin_grad(student, reference):
    """Pins on_policy_distill_grad on two batches: a zero table passes the student-is-the-teacher check."""
    pol, teacher = _policies(reference)
    samples = [(0, (0, 1)), (1, (2, 0)), (0, (2,))]
    expect_pinned(
        student,
        reference,
        "on_policy_distill_grad",
        (pol, teacher, samples),
        (pol, teacher, samples[1:], [0.7, 0.3]),
    )


def kl_call(pol, teacher, s, seq):
    return f"token_reverse_kl({policy_text(pol)}, {policy_text(teacher)}, {s!r}, {seq!r})"


def grad_call(pol, teacher, samples, weights=None):
    tail = "" if weights is None else f", {weights!r}"
    return f"on_policy_distill_grad({policy_text(pol)}, {policy_text(teacher)}, {samples!r}{tail})"


def every_response(pol):
    """All S * V**T (state, response) pairs with their exact probability, states uniform."""
    samples, weights = [], []
    for s in range(pol.S):
        for seq in itertools.product(range(pol.V), repeat=pol.T):
            p = 1.0
            for t, v in enumerate(seq):
                p *= pol.probs(s, t)[v]
            samples.append((s, seq))
            weights.append(p / pol.S)
    return samples, weights


# ---- token_reverse_kl ---------------------------------------------------------------------------------


@given(theta=thetas(-3.0, 3.0), teacher_theta=thetas(-3.0, 3.0), s=st.integers(0, S - 1), seq=SEQ)
def test_token_reverse_kl_is_the_log_ratio_at_each_token(student, lab, theta, teacher_theta, s, seq):
    """Each term is log pi_student - log pi_teacher at that token, one term per token of the response."""
    pol, teacher = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, teacher_theta)
    want = [pol.logp_tok(s, t, v) - teacher.logp_tok(s, t, v) for t, v in enumerate(seq)]
    got = student.token_reverse_kl(pol, teacher, s, seq)
    expect_close(got, want, kl_call(pol, teacher, s, seq), rel=1e-9, abs=1e-9)


@given(theta=thetas(-3.0, 3.0), s=st.integers(0, S - 1), seq=SEQ)
def test_token_reverse_kl_is_zero_for_the_teacher_itself(student, reference, lab, theta, s, seq):
    """Every term is 0 when the student is the teacher."""
    _pin_kl(student, reference)
    pol, teacher = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, copy3(theta))
    got = student.token_reverse_kl(pol, teacher, s, seq)
    expect_close(got, [0.0] * len(seq), kl_call(pol, teacher, s, seq), abs=1e-12)


@given(theta=thetas(-3.0, 3.0), teacher_theta=thetas(-3.0, 3.0), s=st.integers(0, S - 1), seq=SEQ)
def test_token_reverse_kl_changes_sign_when_the_roles_swap(
    student, reference, lab, theta, teacher_theta, s, seq
):
    """Swapping student and teacher negates every term."""
    _pin_kl(student, reference)
    pol, teacher = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, teacher_theta)
    forward = student.token_reverse_kl(pol, teacher, s, seq)
    backward = student.token_reverse_kl(teacher, pol, s, seq)
    what = kl_call(teacher, pol, s, seq) + f"\n  vs minus the terms with the roles swapped, {list(forward)}"
    expect_close(backward, [-x for x in forward], what, rel=1e-9, abs=1e-12)


# ---- on_policy_distill_grad ---------------------------------------------------------------------------


SMALL = (2, 2, 2)  # 8 responses to enumerate


@given(
    theta=thetas(-3.0, 3.0, *SMALL),
    teacher_theta=thetas(-3.0, 3.0, *SMALL),
)
def test_distill_grad_with_exact_weights_is_minus_the_reverse_kl_gradient(
    student, lab, reference, theta, teacher_theta
):
    """With exact student probabilities as weights, the gradient is minus that of KL(student || teacher)."""
    pol, teacher = lab.TabPolicy(*SMALL, theta), lab.TabPolicy(*SMALL, teacher_theta)
    samples, weights = every_response(pol)
    grad = central_difference(lambda: reference.exact_reverse_kl(pol, teacher), pol)
    want = [[[-x for x in row] for row in block] for block in grad]
    got = student.on_policy_distill_grad(pol, teacher, samples, weights)
    expect_close(got, want, grad_call(pol, teacher, samples, weights), rel=1e-5, abs=1e-6)


@given(theta=thetas(-3.0, 3.0), samples=SAMPLES, weighted=st.booleans())
def test_distill_grad_is_zero_when_the_student_is_the_teacher(
    student, reference, lab, theta, samples, weighted
):
    """The gradient is 0 when the student is the teacher."""
    _pin_grad(student, reference)
    pol, teacher = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, copy3(theta))
    weights = [0.5 + i for i in range(len(samples))] if weighted else None
    args = (samples, weights) if weighted else (samples,)
    got = student.on_policy_distill_grad(pol, teacher, *args)
    expect_close(got, zeros(), grad_call(pol, teacher, samples, weights), abs=1e-12)


@given(theta=thetas(-3.0, 3.0), teacher_theta=thetas(-3.0, 3.0), samples=SAMPLES)
def test_distill_grad_default_weights_are_uniform(student, lab, reference, theta, teacher_theta, samples):
    """Without weights every sample weighs 1/len(samples)."""
    pol, teacher = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, teacher_theta)
    want = reference.on_policy_distill_grad(pol, teacher, samples, [1.0 / len(samples)] * len(samples))
    got = student.on_policy_distill_grad(pol, teacher, samples)
    expect_close(got, want, grad_call(pol, teacher, samples), rel=1e-9, abs=1e-12)


STUDENT = [[[0.5, -0.2, 0.1], [0.0, 1.0, -1.0]], [[-0.3, 0.4, 0.0], [0.2, 0.2, -0.6]]]
TEACHER = [[[2.0, -1.0, 0.0], [0.0, -1.5, 1.0]], [[-0.5, 0.0, 1.5], [1.0, 1.0, -2.0]]]


@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4], ids=opaque(5, "run"))
@pytest.mark.parametrize("weighted", [False, True], ids=opaque(2, "weights"))
def test_distill_grad_matches_reference_on_sampled_responses(student, lab, reference, seed, weighted):
    """The gradient matches the reference on responses the student sampled, and changes no argument."""
    pol = lab.TabPolicy(S, T, V, copy3(STUDENT))
    teacher = lab.TabPolicy(S, T, V, copy3(TEACHER))
    rng = random.Random(seed)
    samples = []
    for _ in range(12):
        s = rng.randrange(S)
        samples.append((s, pol.sample(s, rng)))
    weights = [rng.random() for _ in samples] if weighted else None
    args = (samples, weights) if weighted else (samples,)
    before = repr((pol.theta, teacher.theta, samples, weights))
    want = reference.on_policy_distill_grad(pol, teacher, *args)
    got = student.on_policy_distill_grad(pol, teacher, *args)
    what = grad_call(pol, teacher, samples, weights)
    expect_close(got, want, what, rel=1e-9, abs=1e-12)
    expect_true(
        repr((pol.theta, teacher.theta, samples, weights)) == before, f"{what} changed one of its arguments"
    )
