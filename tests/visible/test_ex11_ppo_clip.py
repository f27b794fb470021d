"""Exercise 11, PPO clip: `clip_flows` and `ppo_grad`.

PPO's per-token objective is min(r A, clip(r, 1 - eps, 1 + eps) A), r = pi(token) / pi_old(token).
Its gradient flows through r A only while the clip does not hold r: for A > 0 while r < 1 + eps, for
A < 0 while r > 1 - eps, and never for A == 0. `ppo_grad` adds A * r * (onehot - probs) for each token
that passes, divided by len(samples) * len(seq).
"""

import pytest

from grader.expect import expect_close, expect_equal, expect_true

pytestmark = pytest.mark.exercise(11)

# Logits of a 2-state, 2-position, 3-token policy (theta[s][t][v]).
THETA = [[[0.5, -0.2, 0.1], [0.0, 1.0, -1.0]], [[-0.3, 0.4, 0.0], [0.2, 0.2, -0.6]]]
LOG_THIRD = -1.0986122886681098  # log(1/3): every token of a uniform 3-token row


def policy_text(p):
    return f"TabPolicy({p.S}, {p.T}, {p.V}, theta={p.theta!r})"


def grad_call(policy, samples, **kw):
    extra = "".join(f", {k}={v!r}" for k, v in kw.items())
    return f"ppo_grad({policy_text(policy)}, samples={samples!r}{extra})"


def sample(lab, s, seq, logp_old, A):
    return lab.PPOSample(s=s, seq=seq, R=0.0, logp_old=logp_old, G=[0.0] * len(seq), A=A)


POSITIVE_RULE = pytest.mark.promise("clip_flows.positive_advantage")
NEGATIVE_RULE = pytest.mark.promise("clip_flows.negative_advantage")
AT_THE_BOUND = pytest.mark.promise("clip_flows.bound_is_held")
# (A, ratio, eps, passes?)  eps = 0.25 and 0.5 are exact in binary, so 1 +- eps is exactly the boundary.
POSITIVE = [
    pytest.param(1.0, 1.1, 0.2, True, marks=POSITIVE_RULE),  # inside the clip range
    pytest.param(1.0, 0.5, 0.2, True, marks=POSITIVE_RULE),  # below 1 - eps: min() still picks r A
    pytest.param(1.0, 1.3, 0.2, False, marks=POSITIVE_RULE),  # above 1 + eps: clip(r) A is smaller
    pytest.param(2.0, 1.25, 0.25, False, marks=AT_THE_BOUND),  # exactly at 1 + eps: held by the clip
    pytest.param(0.5, 1.2499, 0.25, True, marks=POSITIVE_RULE),  # just inside
]
NEGATIVE = [
    pytest.param(-1.0, 0.9, 0.2, True, marks=NEGATIVE_RULE),
    pytest.param(-1.0, 1.5, 0.2, True, marks=NEGATIVE_RULE),  # above 1 + eps: r A is the smaller term
    pytest.param(-1.0, 0.7, 0.2, False, marks=NEGATIVE_RULE),  # below 1 - eps: held by the clip
    pytest.param(-3.0, 0.75, 0.25, False, marks=AT_THE_BOUND),  # exactly at 1 - eps: held
    pytest.param(-0.5, 0.5001, 0.5, True, marks=NEGATIVE_RULE),  # just inside
]
ZERO = [(0.0, 1.0, 0.2, False), (0.0, 0.5, 0.2, False), (-0.0, 2.0, 0.25, False)]
# Each case above is checked with cases of the other verdict, so that an answer that does not look at its
# arguments (always True, always False, a coin flip) earns nothing. A boundary case and a zero advantage
# are checked against ratio 1, which every reading of the rule passes: a mistake elsewhere in the rule
# costs the checks of that rule, not these.
AGAINST = {
    "positive": [
        (1.0, 1.05, 0.2, True),
        (1.0, 1.6, 0.2, False),
        (3.0, 0.9, 0.5, True),
        (0.5, 2.0, 0.5, False),
    ],
    "negative": [
        (-1.0, 0.95, 0.2, True),
        (-1.0, 0.6, 0.2, False),
        (-3.0, 1.2, 0.5, True),
        (-0.5, 0.3, 0.5, False),
    ],
    "central": [(1.0, 1.0, 0.2, True), (-1.0, 1.0, 0.2, True), (2.0, 1.0, 0.5, True), (-2.0, 1.0, 0.5, True)],
}


def against(A, ratio, eps):
    """The cases of the other verdict a case is checked with: its own rule's, or (at the bound) ratio 1."""
    if ratio in (1 + eps, 1 - eps):
        return AGAINST["central"]
    return AGAINST["positive" if A > 0 else "negative"]


def check_clip(student, cases):
    for A, ratio, eps, want in cases:
        expect_equal(student.clip_flows(A, ratio, eps), want, f"clip_flows({A!r}, {ratio!r}, {eps!r})")


@pytest.mark.parametrize("A, ratio, eps, want", POSITIVE)
def test_clip_flows_positive_advantage(student, A, ratio, eps, want):
    """A > 0: the gradient passes while ratio < 1 + eps (the answer is a bool)."""
    check_clip(student, [(A, ratio, eps, want), *against(A, ratio, eps)])


@pytest.mark.parametrize("A, ratio, eps, want", NEGATIVE)
def test_clip_flows_negative_advantage(student, A, ratio, eps, want):
    """A < 0: the gradient passes while ratio > 1 - eps (the answer is a bool)."""
    check_clip(student, [(A, ratio, eps, want), *against(A, ratio, eps)])


@pytest.mark.promise("clip_flows.zero_advantage")
@pytest.mark.parametrize("A, ratio, eps, want", ZERO)
def test_clip_flows_zero_advantage(student, A, ratio, eps, want):
    """A == 0 (or -0.0): r A and clip(r) A are both 0, nothing to pass, whatever the ratio."""
    check_clip(student, [(A, ratio, eps, want), *AGAINST["central"]])


@pytest.mark.promise("ppo_grad.formula")
def test_ppo_grad_ratio_one_uniform_policy(student, lab):
    """At ratio 1 every token passes: g[s][t] += A[t] * (onehot(v) - 1/3) / (1 sample * 2 tokens)."""
    policy = lab.TabPolicy(2, 2, 3)
    samples = [sample(lab, 0, (1, 2), [LOG_THIRD, LOG_THIRD], [0.6, -0.3])]
    want = [[[-0.1, 0.2, -0.1], [0.05, 0.05, -0.1]], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]
    expect_close(student.ppo_grad(policy, samples), want, grad_call(policy, samples), abs=1e-12)
    samples = [sample(lab, 1, (0, 0), [LOG_THIRD, LOG_THIRD], [1.0, 0.3])]  # state 1, token 0 twice
    want = [[[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]], [[1 / 3, -1 / 6, -1 / 6], [0.1, -0.05, -0.05]]]
    expect_close(student.ppo_grad(policy, samples), want, grad_call(policy, samples), abs=1e-12)


@pytest.mark.promise("ppo_grad.token_count")
def test_ppo_grad_divides_by_samples_times_tokens(student, lab):
    """The same sample twice: twice the sum, divided by twice the count, so the same gradient."""
    policy = lab.TabPolicy(2, 2, 3)
    one = sample(lab, 0, (1, 2), [LOG_THIRD, LOG_THIRD], [0.6, -0.3])
    samples = [one, sample(lab, 0, (1, 2), [LOG_THIRD, LOG_THIRD], [0.6, -0.3])]
    want = [[[-0.1, 0.2, -0.1], [0.05, 0.05, -0.1]], [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]]
    expect_close(student.ppo_grad(policy, samples), want, grad_call(policy, samples), abs=1e-12)
    # one with a sample of state 1: each sample's share is halved, as 2 samples x 2 tokens = 4
    samples = [one, sample(lab, 1, (0, 0), [LOG_THIRD, LOG_THIRD], [1.0, 0.3])]
    want = [[[-0.05, 0.1, -0.05], [0.025, 0.025, -0.05]], [[1 / 6, -1 / 12, -1 / 12], [0.05, -0.025, -0.025]]]
    expect_close(student.ppo_grad(policy, samples), want, grad_call(policy, samples), abs=1e-12)


def mixed_batch(lab):
    # Ratios at THETA (pi / pi_old, from these logp_old): sample 0: 1.1, 1.5; sample 1: 0.9, 0.6;
    # sample 2: 1.4, 0.5; sample 3: 1.0, 1.3 (with A = 0).
    return [
        sample(lab, 0, (0, 1), [-0.86861, -0.813071], [1.0, 0.5]),
        sample(lab, 1, (2, 0), [-1.06794, -0.384988], [-0.8, -0.4]),
        sample(lab, 0, (2, 2), [-1.509772, -1.714459], [-1.0, 0.7]),
        sample(lab, 1, (1, 1), [-0.7733, -1.158178], [0.0, 0.0]),
    ]


@pytest.mark.promise("ppo_grad.formula")
def test_ppo_grad_mixed_batch(student, lab):
    """Clip 0.2: tokens with (A > 0, r = 1.5), (A < 0, r = 0.6) and A = 0 add nothing; the rest add
    A * r * (onehot - probs) / 8. Nothing reaches (state 1, position 1)."""
    policy = lab.TabPolicy(2, 2, 3, [[row[:] for row in st] for st in THETA])
    samples = mixed_batch(lab)
    want = [
        [
            [0.15480574670041136, 0.008593794738406428, -0.1633995414388178],
            [-0.01070687292256904, -0.029104298105039606, 0.03981117102760865],
        ],
        [[0.020625127184821006, 0.04153390571035623, -0.062159032895177234], [0.0, 0.0, 0.0]],
    ]
    expect_close(student.ppo_grad(policy, samples), want, grad_call(policy, samples), abs=1e-12)


@pytest.mark.promise("ppo_grad.clipped_tokens_add_nothing")
def test_ppo_grad_wider_clip(student, lab):
    """Clip 0.6: the ratios 1.5 (A > 0) and 0.6 (A < 0) are inside [0.4, 1.6] now and pass too."""
    policy = lab.TabPolicy(2, 2, 3, [[row[:] for row in st] for st in THETA])
    samples = mixed_batch(lab)
    want = [
        [
            [0.15480574670041136, 0.008593794738406428, -0.1633995414388178],
            [-0.033650165419362, 0.0022793600141065053, 0.03137080540525551],
        ],
        [
            [0.020625127184821006, 0.04153390571035623, -0.062159032895177234],
            [-0.017751738977524682, 0.01224824689013041, 0.005503492087394277],
        ],
    ]
    got = student.ppo_grad(policy, samples, clip=0.6)
    expect_close(got, want, grad_call(policy, samples, clip=0.6), abs=1e-12)


def all_clipped(lab):
    # Ratios at THETA: 1.3, 2.0 with A > 0; 0.7, 0.5 with A < 0; A = 0.
    return [
        sample(lab, 0, (0, 1), [-1.035664, -1.100753], [1.0, 0.5]),
        sample(lab, 1, (2, 0), [-0.816625, -0.202667], [-0.8, -0.4]),
        sample(lab, 1, (1, 1), [-0.7733, -0.895814], [0.0, 0.0]),
    ]


@pytest.mark.promise("ppo_grad.clipped_tokens_add_nothing")
def test_ppo_grad_all_clipped_is_zero(student, lab):
    """Every token held by the clip (ratios 1.3, 2.0 with A > 0; 0.7, 0.5 with A < 0; A = 0): zero,
    while a token inside the clip still moves the policy (an answer of zeros everywhere is no clip)."""
    policy = lab.TabPolicy(2, 2, 3, [[row[:] for row in st] for st in THETA])
    samples = all_clipped(lab)
    want = [[[0.0] * 3, [0.0] * 3], [[0.0] * 3, [0.0] * 3]]
    expect_close(student.ppo_grad(policy, samples), want, grad_call(policy, samples), abs=1e-12)
    inside = [sample(lab, 0, (0, 1), [-0.86861, -0.813071], [1.0, 0.5])]  # its first token's ratio: 1.1
    moved = student.ppo_grad(policy, inside)
    expect_true(
        any(v != 0.0 for state in moved for row in state for v in row),
        grad_call(policy, inside),
        "a token inside the clip gave no gradient",
    )


@pytest.mark.promise("ppo_grad.token_count")
def test_ppo_grad_clipped_tokens_still_count(student, lab):
    """The held samples above and a fourth whose first token (ratio 1.1, A > 0) is inside the clip: only
    that token adds, divided by all 4 samples x 2 tokens = 8."""
    policy = lab.TabPolicy(2, 2, 3, [[row[:] for row in st] for st in THETA])
    samples = all_clipped(lab)
    samples.append(sample(lab, 0, (0, 1), [-0.86861, -0.813071], [1.0, 0.5]))
    want = [
        [[0.07404543524014218, -0.0315105890623802, -0.04253484617776198], [0.0] * 3],
        [[0.0] * 3, [0.0] * 3],
    ]
    expect_close(student.ppo_grad(policy, samples), want, grad_call(policy, samples), abs=1e-12)
