"""Exercise 15, on-policy distillation: `token_reverse_kl` and `on_policy_distill_grad`.

For a response the student sampled, token t's reverse-KL term is log pi_student - log pi_teacher at that
token. Its reward is minus that term, and with discount 0 its advantage is its own reward, so the
gradient is sum_i w_i * sum_t -(term_t) * (onehot(v_t) - probs_student(s, t)), w_i = 1/len(samples) by
default. Weighting every response by its exact student probability turns it into minus the gradient of
KL(student || teacher).
"""

import pytest

from grader.expect import expect_close, expect_true

pytestmark = pytest.mark.exercise(15)

STUDENT = [[[0.5, -0.2, 0.1], [0.0, 1.0, -1.0]], [[-0.3, 0.4, 0.0], [0.2, 0.2, -0.6]]]
TEACHER = [[[0.0, 0.3, -0.4], [0.6, 0.0, 0.2]], [[0.1, -0.5, 0.3], [0.0, 0.0, 0.0]]]
LOG3 = 1.0986122886681098  # log(3)
ZERO = [[[0.0] * 3, [0.0] * 3], [[0.0] * 3, [0.0] * 3]]


def policy_text(p):
    return f"TabPolicy({p.S}, {p.T}, {p.V}, theta={p.theta!r})"


def table(theta):
    return [[row[:] for row in block] for block in theta]


def kl_call(st, te, s, seq):
    return f"token_reverse_kl({policy_text(st)}, {policy_text(te)}, {s!r}, {seq!r})"


def grad_call(st, te, samples, *weights):
    tail = f", {weights[0]!r}" if weights else ""
    return f"on_policy_distill_grad({policy_text(st)}, {policy_text(te)}, {samples!r}{tail})"


# ---- token_reverse_kl ---------------------------------------------------------------------------------


@pytest.mark.promise("token_reverse_kl.log_ratio")
def test_token_reverse_kl_two_tokens(student, lab):
    """State 1, response (0, 2): [log pi_s(0 | s=1, t=0) - log pi_t(0 | s=1, t=0),
    log pi_s(2 | s=1, t=1) - log pi_t(2 | s=1, t=1)]."""
    st, te = lab.TabPolicy(2, 2, 3, table(STUDENT)), lab.TabPolicy(2, 2, 3, table(TEACHER))
    got = student.token_reverse_kl(st, te, 1, (0, 2))
    expect_close(got, [-0.4543753277729412, -0.5972018061761555], kl_call(st, te, 1, (0, 2)), abs=1e-12)
    got = student.token_reverse_kl(st, te, 0, (1, 2))
    expect_close(got, [-0.6679839909414165, -1.210489979248942], kl_call(st, te, 0, (1, 2)), abs=1e-12)


@pytest.mark.promise("token_reverse_kl.log_ratio")
def test_token_reverse_kl_one_term_per_token(student, lab):
    """Three positions, three terms. The middle one is 0: logits [0.5, -0.5] and [1, 0] give the same
    probabilities (softmax ignores a shift)."""
    st = lab.TabPolicy(1, 3, 2, [[[0.0, 1.0], [0.5, -0.5], [2.0, 0.0]]])
    te = lab.TabPolicy(1, 3, 2, [[[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]])
    got = student.token_reverse_kl(st, te, 0, (1, 0, 1))
    expect_close(
        got, [0.3798854930417225, 0.0, -1.4337808304830273], kl_call(st, te, 0, (1, 0, 1)), abs=1e-12
    )


@pytest.mark.promise("token_reverse_kl.short_response")
def test_token_reverse_kl_of_a_response_shorter_than_t(student, lab):
    """A response may be shorter than T: one term per token it has. The first two terms of (1, 0, 1)
    above, for the response (1, 0)."""
    st = lab.TabPolicy(1, 3, 2, [[[0.0, 1.0], [0.5, -0.5], [2.0, 0.0]]])
    te = lab.TabPolicy(1, 3, 2, [[[0.0, 0.0], [1.0, 0.0], [0.0, 0.0]]])
    got = student.token_reverse_kl(st, te, 0, (1, 0))
    expect_close(got, [0.3798854930417225, 0.0], kl_call(st, te, 0, (1, 0)), abs=1e-12)
    got = student.token_reverse_kl(st, te, 0, (1,))
    expect_close(got, [0.3798854930417225], kl_call(st, te, 0, (1,)), abs=1e-12)


@pytest.mark.promise("token_reverse_kl.zero_for_teacher")
def test_token_reverse_kl_is_zero_for_the_teacher_itself(student, lab):
    """Student == teacher: every term is 0 (against the other teacher, the same response's terms are not)."""
    st, te = lab.TabPolicy(2, 2, 3, table(STUDENT)), lab.TabPolicy(2, 2, 3, table(STUDENT))
    expect_close(
        student.token_reverse_kl(st, te, 0, (1, 2)), [0.0, 0.0], kl_call(st, te, 0, (1, 2)), abs=1e-12
    )
    te = lab.TabPolicy(2, 2, 3, table(TEACHER))
    got = student.token_reverse_kl(st, te, 0, (1, 2))
    expect_true(
        len(got) == 2 and all(abs(x) > 1e-3 for x in got), kl_call(st, te, 0, (1, 2)), f"got {got!r}: not 0"
    )


# ---- on_policy_distill_grad ---------------------------------------------------------------------------

SAMPLES = [(0, (0, 1)), (1, (2, 0)), (0, (0, 2)), (1, (1, 1))]
# The gradient of STUDENT toward TEACHER on the first two samples alone (weight 1/2 each).
FIRST_TWO_GRADIENT = [
    [
        [-0.08939736505556412, 0.03804371767671521, 0.051353647378848906],
        [0.12108063723590373, -0.16562371439893017, 0.0445430771630264],
    ],
    [
        [-0.04060573753541011, -0.08176991390076765, 0.12237565143617776],
        [-0.06000037162943736, 0.04139872528248497, 0.0186016463469524],
    ],
]


@pytest.mark.promise("on_policy_distill_grad.formula")
def test_distill_grad_default_weights(student, lab):
    """Four samples, weight 1/4 each: sum of -(term) * (onehot - probs) / 4 over their tokens."""
    st, te = lab.TabPolicy(2, 2, 3, table(STUDENT)), lab.TabPolicy(2, 2, 3, table(TEACHER))
    want = [
        [
            [-0.08939736505556412, 0.03804371767671521, 0.051353647378848906],
            [-0.013520021844234967, -0.2841287348873177, 0.29764875673155267],
        ],
        [
            [0.028144653961529674, -0.15472979494091466, 0.126585140979385],
            [-0.009300823173476195, -0.009300823173476195, 0.0186016463469524],
        ],
    ]
    expect_close(student.on_policy_distill_grad(st, te, SAMPLES), want, grad_call(st, te, SAMPLES), abs=1e-12)
    samples = SAMPLES[:2]  # the first two samples alone: weight 1/2 each
    want = FIRST_TWO_GRADIENT
    expect_close(student.on_policy_distill_grad(st, te, samples), want, grad_call(st, te, samples), abs=1e-12)


@pytest.mark.promise("on_policy_distill_grad.weights_as_given")
def test_distill_grad_given_weights(student, lab):
    """Weights [0.2, 0.4, 0.6, 0.8] replace the uniform 1/4, used as given: they sum to 2, not 1, and they
    are not normalised."""
    st, te = lab.TabPolicy(2, 2, 3, table(STUDENT)), lab.TabPolicy(2, 2, 3, table(TEACHER))
    weights = [0.2, 0.4, 0.6, 0.8]
    want = [
        [
            [-0.1430357840889026, 0.060869948282744335, 0.08216583580615826],
            [-0.1293125622148869, -0.5494099922104183, 0.6787225544253054],
        ],
        [
            [0.12254748270522305, -0.4297194126903128, 0.30717192998508974],
            [0.018237663148426064, -0.06288161438111181, 0.04464395123268577],
        ],
    ]
    got = student.on_policy_distill_grad(st, te, SAMPLES, weights)
    expect_close(got, want, grad_call(st, te, SAMPLES, weights), abs=1e-12)


@pytest.mark.promise("on_policy_distill_grad.zero_for_teacher")
def test_distill_grad_is_zero_when_the_student_is_the_teacher(student, lab):
    """Student == teacher: every reward is 0, so is the gradient (not so against the other teacher)."""
    st, te = lab.TabPolicy(2, 2, 3, table(STUDENT)), lab.TabPolicy(2, 2, 3, table(STUDENT))
    expect_close(student.on_policy_distill_grad(st, te, SAMPLES), ZERO, grad_call(st, te, SAMPLES), abs=1e-12)
    te, samples = lab.TabPolicy(2, 2, 3, table(TEACHER)), SAMPLES[:2]
    got = student.on_policy_distill_grad(st, te, samples)
    expect_true(
        any(abs(x) > 1e-3 for block in got for row in block for x in row),
        grad_call(st, te, samples),
        f"got {got!r}: against another teacher the gradient is not 0",
    )


@pytest.mark.promise("on_policy_distill_grad.minus_kl_gradient")
def test_distill_grad_exact_weights_give_minus_the_kl_gradient(student, lab):
    """Student [1/2, 1/2], teacher [1/4, 3/4]; both responses weighted by their student probability 1/2:
    -(1/2 log 2 * [1/2, -1/2] + 1/2 log(2/3) * [-1/2, 1/2]) = [-1/4 log 3, 1/4 log 3], which is minus
    the gradient of KL(student || teacher) with respect to the student's logits."""
    st, te = lab.TabPolicy(1, 1, 2, [[[0.0, 0.0]]]), lab.TabPolicy(1, 1, 2, [[[0.0, LOG3]]])
    samples, weights = [(0, (0,)), (0, (1,))], [0.5, 0.5]
    got = student.on_policy_distill_grad(st, te, samples, weights)
    expect_close(got, [[[-LOG3 / 4, LOG3 / 4]]], grad_call(st, te, samples, weights), abs=1e-12)
