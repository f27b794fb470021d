"""Exercise 15, on-policy distillation (hidden): `token_reverse_kl` by its definition, and
`on_policy_distill_grad` by exact enumeration against central differences of the given `exact_reverse_kl`
and against the reference on sampled responses."""

import itertools
import math
import random

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from grader.expect import expect_close, expect_true

from .gradients import S, T, V, central_difference, copy3, opaque, policy_text, thetas, zeros

pytestmark = pytest.mark.exercise(15)


SEQ = st.tuples(*[st.integers(0, V - 1)] * T)
LONG = (2, 3, 3)  # policies with T = 3: responses of 1, 2 and 3 tokens
SAMPLES = st.lists(
    st.tuples(st.integers(0, S - 1), st.tuples(*[st.integers(0, V - 1)] * T)), min_size=1, max_size=6
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


def nonzero(g):
    return any(abs(x) > 1e-12 for block in g for row in block for x in row)


def scaled(g, k):
    return [[[k * x for x in row] for row in block] for block in g]


def log_ratios(pol, teacher, s, seq):
    """The terms as the docstring defines them, computed here (to tell inputs with signal from the rest)."""
    return [pol.logp_tok(s, t, v) - teacher.logp_tok(s, t, v) for t, v in enumerate(seq)]


def expect_signal(student, pol, teacher, s, seq, got=None):
    """Against a teacher that differs from the student at these tokens, some term is not 0: beside a check
    of zeros or of a relation between answers, an answer of zeros (or a constant) fails."""
    got = student.token_reverse_kl(pol, teacher, s, seq) if got is None else got
    expect_true(
        isinstance(got, list | tuple) and len(got) == len(seq) and any(abs(x) > 1e-6 for x in got),
        kl_call(pol, teacher, s, seq),
        f"got {got!r}: the student and the teacher differ at these tokens",
    )


UNIFORM = [[[0.0] * V for _ in range(T)] for _ in range(S)]
SKEWED = [[[1.0, 0.0, -1.0], [0.0, 2.0, 0.0]], [[0.5, 0.5, 0.0], [-1.0, 0.0, 1.0]]]
SHORT_RESPONSES = {  # two policies with T = 3, a state, a full response and a length k < T to cut it to
    "theta": thetas(-3.0, 3.0, *LONG),
    "teacher_theta": thetas(-3.0, 3.0, *LONG),
    "s": st.integers(0, LONG[0] - 1),
    "seq": st.tuples(*[st.integers(0, LONG[2] - 1)] * LONG[1]),
    "k": st.integers(1, LONG[1] - 1),
}


# ---- token_reverse_kl ---------------------------------------------------------------------------------


@pytest.mark.promise("token_reverse_kl.log_ratio")
@given(theta=thetas(-3.0, 3.0), teacher_theta=thetas(-3.0, 3.0), s=st.integers(0, S - 1), seq=SEQ)
@example(theta=UNIFORM, teacher_theta=SKEWED, s=1, seq=(2, 0))  # terms of both signs
def test_token_reverse_kl_is_the_log_ratio_at_each_token(student, lab, theta, teacher_theta, s, seq):
    """Each term is log pi_student - log pi_teacher at that token (natural logs), one per token, in order."""
    pol, teacher = lab.TabPolicy(S, T, V, copy3(theta)), lab.TabPolicy(S, T, V, copy3(teacher_theta))
    want = log_ratios(pol, teacher, s, seq)
    got = student.token_reverse_kl(pol, teacher, s, seq)
    expect_close(got, want, kl_call(pol, teacher, s, seq), rel=1e-9, abs=1e-9)


@pytest.mark.promise("token_reverse_kl.short_response")
@given(**SHORT_RESPONSES)
@example(theta=[[[0.0] * 3] * 3] * 2, teacher_theta=[[[1.0, 0.0, 0.0]] * 3] * 2, s=0, seq=(0, 1, 2), k=1)
def test_token_reverse_kl_of_a_response_shorter_than_t(student, lab, theta, teacher_theta, s, seq, k):
    """A response shorter than T gets one term per token it has: the first terms of a longer response (all
    0 against the student itself)."""
    pol, teacher = lab.TabPolicy(*LONG, copy3(theta)), lab.TabPolicy(*LONG, copy3(teacher_theta))
    assume(any(abs(x) > 1e-3 for x in log_ratios(pol, teacher, s, seq)))
    full = student.token_reverse_kl(pol, teacher, s, seq)
    expect_signal(student, pol, teacher, s, seq, full)
    got = student.token_reverse_kl(pol, teacher, s, seq[:k])
    what = kl_call(pol, teacher, s, seq[:k]) + f"\n  vs the first {k} terms of {list(full)}"
    expect_close(got, list(full)[:k], what, rel=1e-12, abs=1e-15)
    itself = lab.TabPolicy(*LONG, copy3(theta))
    got = student.token_reverse_kl(pol, itself, s, seq[:k])
    expect_close(got, [0.0] * k, kl_call(pol, itself, s, seq[:k]), abs=1e-12)


@pytest.mark.promise("token_reverse_kl.zero_for_teacher")
@given(theta=thetas(-3.0, 3.0), other=thetas(-3.0, 3.0), s=st.integers(0, S - 1), seq=SEQ)
@example(theta=SKEWED, other=UNIFORM, s=0, seq=(0, 1))
def test_token_reverse_kl_is_zero_for_the_teacher_itself(student, lab, theta, other, s, seq):
    """Every term is 0 when the student is the teacher (and not against another teacher)."""
    pol, teacher = lab.TabPolicy(S, T, V, copy3(theta)), lab.TabPolicy(S, T, V, copy3(theta))
    got = student.token_reverse_kl(pol, teacher, s, seq)
    expect_close(got, [0.0] * len(seq), kl_call(pol, teacher, s, seq), abs=1e-12)
    different = lab.TabPolicy(S, T, V, copy3(other))
    assume(any(abs(x) > 1e-3 for x in log_ratios(pol, different, s, seq)))
    expect_signal(student, pol, different, s, seq)


@pytest.mark.promise("token_reverse_kl.antisymmetric")
@given(theta=thetas(-3.0, 3.0), teacher_theta=thetas(-3.0, 3.0), s=st.integers(0, S - 1), seq=SEQ)
@example(theta=UNIFORM, teacher_theta=SKEWED, s=1, seq=(2, 0))
def test_token_reverse_kl_changes_sign_when_the_roles_swap(student, lab, theta, teacher_theta, s, seq):
    """Swapping student and teacher negates every term."""
    pol, teacher = lab.TabPolicy(S, T, V, copy3(theta)), lab.TabPolicy(S, T, V, copy3(teacher_theta))
    assume(any(abs(x) > 1e-3 for x in log_ratios(pol, teacher, s, seq)))
    forward = student.token_reverse_kl(pol, teacher, s, seq)
    expect_signal(student, pol, teacher, s, seq, forward)
    backward = student.token_reverse_kl(teacher, pol, s, seq)
    what = kl_call(teacher, pol, s, seq) + f"\n  vs minus the terms with the roles swapped, {list(forward)}"
    expect_close(backward, [-x for x in forward], what, rel=1e-9, abs=1e-12)


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("token_reverse_kl.unchanged")
@given(theta=thetas(-3.0, 3.0), teacher_theta=thetas(-3.0, 3.0), s=st.integers(0, S - 1), seq=SEQ)
def test_token_reverse_kl_changes_no_argument(student, lab, theta, teacher_theta, s, seq):
    """token_reverse_kl changes neither policy (and its terms are 0 against the student itself, not all 0
    against another teacher)."""
    pol, teacher = lab.TabPolicy(S, T, V, copy3(theta)), lab.TabPolicy(S, T, V, copy3(teacher_theta))
    assume(any(abs(x) > 1e-3 for x in log_ratios(pol, teacher, s, seq)))
    itself = lab.TabPolicy(S, T, V, copy3(theta))
    for other in (teacher, itself):
        before = repr((pol.theta, other.theta, seq))
        got = student.token_reverse_kl(pol, other, s, seq)
        what = kl_call(pol, other, s, seq)
        expect_true(not student.last_changed, what, f"the call changed its arguments {student.last_changed}")
        expect_true(repr((pol.theta, other.theta, seq)) == before, what, "the call changed its arguments")
        zero = isinstance(got, list | tuple) and len(got) == len(seq) and all(abs(x) < 1e-12 for x in got)
        expect_true(zero == (other is itself), what, f"got {got!r}: 0 against the student itself only")


# ---- on_policy_distill_grad ---------------------------------------------------------------------------


SMALL = (2, 2, 2)  # 8 responses to enumerate


@pytest.mark.promise("on_policy_distill_grad.minus_kl_gradient")
@given(
    theta=thetas(-3.0, 3.0, *SMALL),
    teacher_theta=thetas(-3.0, 3.0, *SMALL),
)
def test_distill_grad_with_exact_weights_is_minus_the_reverse_kl_gradient(
    student, lab, reference, theta, teacher_theta
):
    """With exact student probabilities as weights, the gradient is minus that of KL(student || teacher)."""
    pol, teacher = lab.TabPolicy(*SMALL, copy3(theta)), lab.TabPolicy(*SMALL, copy3(teacher_theta))
    samples, weights = every_response(pol)
    grad = central_difference(lambda: reference.exact_reverse_kl(pol, teacher), pol)
    want = [[[-x for x in row] for row in block] for block in grad]
    got = student.on_policy_distill_grad(pol, teacher, samples, weights)
    expect_close(got, want, grad_call(pol, teacher, samples, weights), rel=1e-5, abs=1e-6)


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("on_policy_distill_grad.zero_for_teacher")
@given(theta=thetas(-3.0, 3.0), other=thetas(-3.0, 3.0), samples=SAMPLES, weighted=st.booleans())
@example(theta=SKEWED, other=UNIFORM, samples=[(0, (0, 1)), (1, (2, 2))], weighted=True)
def test_distill_grad_is_zero_when_the_student_is_the_teacher(student, lab, theta, other, samples, weighted):
    """The gradient is 0 when the student is the teacher (and not against another teacher)."""
    pol, teacher = lab.TabPolicy(S, T, V, copy3(theta)), lab.TabPolicy(S, T, V, copy3(theta))
    weights = [0.5 + i for i in range(len(samples))] if weighted else None
    args = (samples, weights) if weighted else (samples,)
    got = student.on_policy_distill_grad(pol, teacher, *args)
    expect_close(got, zeros(), grad_call(pol, teacher, samples, weights), abs=1e-12)
    different = lab.TabPolicy(S, T, V, copy3(other))
    assume(any(abs(x) > 1e-3 for s, seq in samples for x in log_ratios(pol, different, s, seq)))
    g = student.on_policy_distill_grad(pol, different, *args)
    expect_true(nonzero(g), grad_call(pol, different, samples, weights), f"got {g}: the teacher differs")


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("on_policy_distill_grad.default_weights")
@given(theta=thetas(-3.0, 3.0), teacher_theta=thetas(-3.0, 3.0), samples=SAMPLES, extra=SEQ)
@example(theta=UNIFORM, teacher_theta=SKEWED, samples=[(0, (0, 1)), (0, (2, 2)), (0, (1, 0))], extra=(1, 1))
def test_distill_grad_default_weights_are_uniform(student, lab, theta, teacher_theta, samples, extra):
    """Without weights every sample weighs 1/len(samples): the same as those weights given. (Samples of
    state 0 leave the rows of state 1 at 0; one more sample there moves them.)"""
    pol, teacher = lab.TabPolicy(S, T, V, copy3(theta)), lab.TabPolicy(S, T, V, copy3(teacher_theta))
    samples = [(0, seq) for _, seq in samples]
    assume(any(abs(x) > 1e-3 for x in log_ratios(pol, teacher, 1, extra)))
    for batch in (samples, [*samples, (1, extra)]):
        n = len(batch)
        got = student.on_policy_distill_grad(pol, teacher, batch)
        if batch is not samples:  # one comparison with the weights given is enough
            what = grad_call(pol, teacher, batch) + f"\n  vs the same with weights [1/{n}] * {n}"
            want = student.on_policy_distill_grad(pol, teacher, batch, [1.0 / n] * n)
            expect_close(got, want, what, rel=1e-9, abs=1e-12)
        moved = any(abs(x) > 1e-12 for row in got[1] for x in row)
        expect_true(
            moved == (batch is not samples),
            grad_call(pol, teacher, batch),
            f"got {got}: the rows of state 1 move exactly when a sample of state 1 is in the batch",
        )


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("on_policy_distill_grad.weights_as_given")
@given(
    theta=thetas(-3.0, 3.0),
    teacher_theta=thetas(-3.0, 3.0),
    samples=SAMPLES,
    data=st.data(),
    factor=st.sampled_from([2.0, 0.5, 3.0]),
)
def test_distill_grad_uses_the_weights_as_given(student, lab, theta, teacher_theta, samples, data, factor):
    """The weights are used as given, not normalised: weights that do not sum to 1 scale the gradient, so
    `factor` times the weights gives `factor` times the gradient."""
    pol, teacher = lab.TabPolicy(S, T, V, copy3(theta)), lab.TabPolicy(S, T, V, copy3(teacher_theta))
    assume(any(abs(x) > 1e-3 for s, seq in samples for x in log_ratios(pol, teacher, s, seq)))
    weights = [data.draw(st.floats(0.1, 2.0)) for _ in samples]
    g = student.on_policy_distill_grad(pol, teacher, samples, weights)
    expect_true(nonzero(g), grad_call(pol, teacher, samples, weights), f"got {g}: the teacher differs")
    more = [factor * w for w in weights]
    what = grad_call(pol, teacher, samples, more) + f"\n  vs {factor} x the gradient with weights {weights}"
    expect_close(
        student.on_policy_distill_grad(pol, teacher, samples, more),
        scaled(g, factor),
        what,
        rel=1e-9,
        abs=1e-12,
    )


@pytest.mark.promise("on_policy_distill_grad.mixed_lengths")
@given(**SHORT_RESPONSES)
@example(theta=[[[0.0] * 3] * 3] * 2, teacher_theta=[[[1.0, 0.0, 0.0]] * 3] * 2, s=1, seq=(0, 1, 2), k=1)
def test_distill_grad_of_a_response_shorter_than_t(student, lab, theta, teacher_theta, s, seq, k):
    """A response shorter than T adds its own tokens only: with weight 1, its first k positions get what
    the full response's first k positions get, and the positions it does not reach stay 0."""
    pol, teacher = lab.TabPolicy(*LONG, copy3(theta)), lab.TabPolicy(*LONG, copy3(teacher_theta))
    terms = log_ratios(pol, teacher, s, seq)
    assume(any(abs(x) > 1e-3 for x in terms))
    full = student.on_policy_distill_grad(pol, teacher, [(s, seq)], [1.0])
    short = student.on_policy_distill_grad(pol, teacher, [(s, seq[:k])], [1.0])
    what = grad_call(pol, teacher, [(s, seq[:k])], [1.0])
    expect_true(nonzero(full), grad_call(pol, teacher, [(s, seq)], [1.0]), f"got {full}: the teacher differs")
    want = [
        [list(row) if (u == s and t < k) else [0.0] * LONG[2] for t, row in enumerate(block)]
        for u, block in enumerate(full)
    ]
    expect_close(
        short, want, what + f"\n  vs its first {k} positions in the gradient of {seq}", rel=1e-9, abs=1e-12
    )


# Batches as the docstring allows them: responses of 1 to T tokens mixed (with T = 3), a response listed
# twice (it counts twice), weights as given (None, not summing to 1, one of them 0).
MIXED_RESPONSE = st.tuples(
    st.integers(0, LONG[0] - 1),
    st.lists(st.integers(0, LONG[2] - 1), min_size=1, max_size=LONG[1]).map(tuple),
)


@st.composite
def mixed_batches(draw):
    samples = draw(st.lists(MIXED_RESPONSE, min_size=1, max_size=5))
    if draw(st.booleans()):  # a response drawn twice
        samples.append(samples[draw(st.integers(0, len(samples) - 1))])
    weights = draw(
        st.one_of(
            st.none(),
            st.lists(st.sampled_from([0.0, 0.25, 1.0, 2.5]), min_size=len(samples), max_size=len(samples)),
        )
    )
    return samples, weights


@pytest.mark.promise("on_policy_distill_grad.mixed_lengths")
@given(theta=thetas(-3.0, 3.0, *LONG), teacher_theta=thetas(-3.0, 3.0, *LONG), batch=mixed_batches())
@example(
    theta=[[[0.0] * 3] * 3] * 2,
    teacher_theta=[[[1.0, 0.0, 0.0]] * 3] * 2,
    batch=([(0, (0,)), (1, (2, 1)), (0, (0, 1, 2)), (1, (2, 1))], [1.0, 0.0, 2.5, 0.25]),
)
@example(
    theta=[[[0.0] * 3] * 3] * 2,
    teacher_theta=[[[1.0, 0.0, 0.0]] * 3] * 2,
    batch=([(1, (1,)), (0, (2, 2, 2)), (1, (1,))], None),
)
def test_distill_grad_of_a_batch_of_mixed_lengths_matches_the_reference(
    student, lab, reference, theta, teacher_theta, batch
):
    """A batch mixing responses of 1 to T tokens (one listed twice, weights as given or None) gives the
    reference's gradient: each response adds its own tokens only."""
    samples, weights = batch
    pol, teacher = lab.TabPolicy(*LONG, copy3(theta)), lab.TabPolicy(*LONG, copy3(teacher_theta))
    args = (samples,) if weights is None else (samples, weights)
    want = reference.on_policy_distill_grad(pol, teacher, *args)
    got = student.on_policy_distill_grad(pol, teacher, *args)
    expect_close(got, want, grad_call(pol, teacher, samples, weights), rel=1e-9, abs=1e-12)


STUDENT = [[[0.5, -0.2, 0.1], [0.0, 1.0, -1.0]], [[-0.3, 0.4, 0.0], [0.2, 0.2, -0.6]]]
TEACHER = [[[2.0, -1.0, 0.0], [0.0, -1.5, 1.0]], [[-0.5, 0.0, 1.5], [1.0, 1.0, -2.0]]]


def sampled(lab, seed, weighted):
    """12 responses the student sampled, and weights: drawn and normalised to sum to 1, or 1/12 each (the
    formula's checks give weights that sum to 1, whatever a submission does with them)."""
    pol = lab.TabPolicy(S, T, V, copy3(STUDENT))
    teacher = lab.TabPolicy(S, T, V, copy3(TEACHER))
    rng = random.Random(seed)
    samples = []
    for _ in range(12):
        s = rng.randrange(S)
        samples.append((s, pol.sample(s, rng)))
    raw = [rng.random() for _ in samples] if weighted else [1.0] * len(samples)
    return pol, teacher, samples, [w / math.fsum(raw) for w in raw]


@pytest.mark.promise("on_policy_distill_grad.formula")
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4], ids=opaque(5, "run"))
@pytest.mark.parametrize("weighted", [False, True], ids=opaque(2, "weights"))
def test_distill_grad_matches_reference_on_sampled_responses(student, lab, reference, seed, weighted):
    """The gradient matches the reference on responses the student sampled."""
    pol, teacher, samples, weights = sampled(lab, seed, weighted)
    want = reference.on_policy_distill_grad(pol, teacher, samples, weights)
    got = student.on_policy_distill_grad(pol, teacher, samples, weights)
    expect_close(got, want, grad_call(pol, teacher, samples, weights), rel=1e-9, abs=1e-12)


@pytest.mark.promise("on_policy_distill_grad.unchanged")
def test_distill_grad_changes_no_argument(student, lab):
    """on_policy_distill_grad changes no argument: not the policies, the samples or the weights. (Samples of
    one state move that state's rows only.)"""
    pol, teacher, samples, weights = sampled(lab, 0, True)
    for s in range(S):
        mine = [(s, seq) for _, seq in samples]
        for args in ((mine, list(weights)), (mine,)):
            before = repr((pol.theta, teacher.theta, args))
            g = student.on_policy_distill_grad(pol, teacher, *args)
            what = grad_call(pol, teacher, *args)
            expect_true(
                not student.last_changed, what, f"the call changed its arguments {student.last_changed}"
            )
            expect_true(
                repr((pol.theta, teacher.theta, args)) == before, what, "the call changed its arguments"
            )
            ok = len(g) == S and all((u == s) == nonzero([block]) for u, block in enumerate(g))
            expect_true(ok, what, f"got {g}: only the rows of state {s} move")
