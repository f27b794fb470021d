"""Exercise 13, GRPO with KL: `kl_k3` and `grpo_grad`.

k3 = rho - log(rho) - 1 with rho = pi_ref / pi = exp(logp_ref - logp): never negative, 0 when the two
log-probabilities agree, and its mean under pi is KL(pi || pi_ref). `grpo_grad` is the gradient of
`grpo_objective`: per token, (A * r if the clip passes) - beta * (1 - rho), times (1/len(q) with
length_norm), divided by the group size and the number of groups, times (onehot - probs).
"""

import pytest

from grader.expect import expect_close, expect_true

pytestmark = pytest.mark.exercise(13)

LOG_HALF = -0.6931471805599453  # log(1/2)
LOG_QUARTER = -1.3862943611198906  # log(1/4)
LOG_THIRD = -1.0986122886681098  # log(1/3)

THETA = [[[0.5, -0.2, 0.1], [0.0, 1.0, -1.0]], [[-0.3, 0.4, 0.0], [0.2, 0.2, -0.6]]]
REF_THETA = [[[0.0, 0.3, -0.4], [0.6, 0.0, 0.2]], [[0.1, -0.5, 0.3], [0.0, 0.0, 0.0]]]
ZERO = [[[0.0] * 3, [0.0] * 3], [[0.0] * 3, [0.0] * 3]]


def policy_text(p):
    return f"TabPolicy({p.S}, {p.T}, {p.V}, theta={p.theta!r})"


def grad_call(policy, ref, groups, cfg=None):
    tail = "" if cfg is None else f", {cfg!r}"
    return f"grpo_grad({policy_text(policy)}, {policy_text(ref)}, groups={groups!r}{tail})"


def table(theta):
    return [[row[:] for row in block] for block in theta]


# ---- kl_k3 --------------------------------------------------------------------------------------------


@pytest.mark.promise("kl_k3.formula")
def test_kl_k3_ref_twice_as_likely(student):
    """pi_ref = 1/2, pi = 1/4: rho = 2, k3 = 2 - log 2 - 1 = 1 - log 2."""
    got = student.kl_k3(LOG_HALF, LOG_QUARTER)
    expect_close(got, 0.3068528194400547, f"kl_k3({LOG_HALF!r}, {LOG_QUARTER!r})", rel=1e-9)
    # pi = 1/8: rho = 4, k3 = 4 - log 4 - 1 = 3 - 2 log 2
    got = student.kl_k3(LOG_HALF, 3 * LOG_HALF)
    expect_close(got, 1.6137056388801088, f"kl_k3({LOG_HALF!r}, {3 * LOG_HALF!r})", rel=1e-9)


@pytest.mark.promise("kl_k3.formula")
def test_kl_k3_ref_half_as_likely(student):
    """pi_ref = 1/4, pi = 1/2: rho = 1/2, k3 = 1/2 + log 2 - 1 (the argument order matters)."""
    got = student.kl_k3(LOG_QUARTER, LOG_HALF)
    expect_close(got, 0.1931471805599453, f"kl_k3({LOG_QUARTER!r}, {LOG_HALF!r})", rel=1e-9)


@pytest.mark.promise("kl_k3.zero_when_equal")
def test_kl_k3_is_zero_when_the_log_probs_agree(student):
    """rho = 1: 1 - 0 - 1 = 0 (and one nat apart it is not 0)."""
    expect_close(student.kl_k3(-1.0, -1.0), 0.0, "kl_k3(-1.0, -1.0)", abs=1e-15)
    expect_close(student.kl_k3(LOG_THIRD, LOG_THIRD), 0.0, f"kl_k3({LOG_THIRD!r}, {LOG_THIRD!r})", abs=1e-15)
    got = student.kl_k3(-1.0, -2.0)
    expect_true(
        abs(got) > 1e-3, "kl_k3(-1.0, -2.0)", f"got {got!r}: log-probabilities one nat apart do not agree"
    )


@pytest.mark.promise("kl_k3.positive")
def test_kl_k3_is_positive_when_the_log_probs_differ(student):
    """Either way round, log-probabilities that differ give a positive k3 (the log ratio alone would be
    negative one way); a larger gap gives a larger one."""
    pairs = [(-1.0, -2.0), (-2.0, -1.0), (LOG_HALF, LOG_QUARTER), (LOG_QUARTER, LOG_HALF)]
    pairs += [(-0.5, -0.25), (-3.0, -0.5), (LOG_THIRD, -1.2), (-0.1, -4.0)]
    for a, b in pairs:
        got, wider = student.kl_k3(a, b), student.kl_k3(a, b + (b - a))
        expect_true(got > 0.0, f"kl_k3({a!r}, {b!r})", f"got {got!r}: expected a positive number")
        expect_true(wider > got, f"kl_k3({a!r}, {2 * b - a!r})", f"got {wider!r}, not more than {got!r}")


@pytest.mark.promise("kl_k3.unbiased")
def test_kl_k3_mean_under_pi_is_the_kl(student):
    """pi = [1/2, 1/4, 1/4], pi_ref = [1/4, 1/2, 1/4]: sum of pi(x) * k3(log pi_ref(x), log pi(x)) over
    the three tokens = KL(pi || pi_ref) = 1/2 log 2 + 1/4 log(1/2) = 1/4 log 2."""
    pi = [(0.5, LOG_HALF), (0.25, LOG_QUARTER), (0.25, LOG_QUARTER)]
    pi_ref = [LOG_QUARTER, LOG_HALF, LOG_QUARTER]
    terms = [student.kl_k3(r, lp) for (_, lp), r in zip(pi, pi_ref, strict=True)]
    got = sum(p * k for (p, _), k in zip(pi, terms, strict=True))
    what = f"sum of p * kl_k3(log_ref, logp) with kl_k3 values {terms}"
    expect_close(got, 0.17328679513998632, what, rel=1e-9)


# ---- grpo_grad ----------------------------------------------------------------------------------------


@pytest.mark.promise("grpo_grad.surrogate")
def test_grpo_grad_uniform_policy_equal_to_ref(student, lab):
    """Ratio 1 and pi == pi_ref (no KL gradient): each token adds A / len(q) / 2 responses * (onehot - 1/3).
    Position 1 holds token 2 in both responses, with opposite advantages: they cancel."""
    policy, ref = lab.TabPolicy(1, 2, 3), lab.TabPolicy(1, 2, 3)
    groups = [lab.Group(0, [(1, 2), (0, 2)], [1.0, 0.0], [1.0, -1.0], [[LOG_THIRD] * 2, [LOG_THIRD] * 2])]
    want = [[[-0.25, 0.25, 0.0], [0.0, 0.0, 0.0]]]
    for beta in (0.0, 0.5):
        cfg = lab.GRPOConfig(beta=beta)
        expect_close(
            student.grpo_grad(policy, ref, groups, cfg), want, grad_call(policy, ref, groups, cfg), abs=1e-12
        )
    # advantages 0.5 and -0.5 on responses (0, 1) and (2, 1): half as strong, position 1 cancels again
    groups = [lab.Group(0, [(0, 1), (2, 1)], [1.0, 0.0], [0.5, -0.5], [[LOG_THIRD] * 2, [LOG_THIRD] * 2])]
    want = [[[0.125, 0.0, -0.125], [0.0, 0.0, 0.0]]]
    cfg = lab.GRPOConfig()
    expect_close(
        student.grpo_grad(policy, ref, groups, cfg), want, grad_call(policy, ref, groups, cfg), abs=1e-12
    )


def two_groups(lab):
    # Ratios pi / pi_old at THETA, per response: group 0: (1.1, 1.5), (0.7, 1.3), (0.9, 1.0);
    # group 1: (0.95, 0.6), (1.05, 1.25).
    return [
        lab.Group(
            0,
            [(0, 1), (2, 2), (1, 0)],
            [0.0, 0.0, 0.0],
            [1.0, -1.0, 0.5],
            [[-0.86861, -0.813071], [-0.816625, -2.66997], [-1.36794, -1.407606]],
        ),
        lab.Group(
            1, [(2, 0), (1, 1)], [0.0, 0.0], [-0.8, 0.8], [[-1.122007, -0.384988], [-0.82209, -1.118958]]
        ),
    ]


CASES = {
    "no KL": (
        dict(beta=0.0),
        [
            [
                [0.032057829447446354, 0.007899155332647421, -0.03995698478009377],
                [0.057981893120274366, 0.0443493795689446, -0.10233127268921899],
            ],
            [[-0.002291669257142196, 0.10038512301041182, -0.09809345375326961], [0.0, 0.0, 0.0]],
        ],
    ),
    "KL 0.1": (
        dict(beta=0.1),
        [
            [
                [0.028221881546284855, 0.015082603950565085, -0.04330448549684994],
                [0.05975536599042641, 0.024876658035177815, -0.08463202402560424],
            ],
            [
                [-0.00187509673169493, 0.09409011092953448, -0.09221501419783955],
                [-0.0004209187661659284, -0.0004209187661659284, 0.0008418375323318572],
            ],
        ],
    ),
    "KL 0.1 no length_norm": (
        dict(beta=0.1, length_norm=False),
        [
            [
                [0.05644376309256971, 0.03016520790113017, -0.08660897099369988],
                [0.11951073198085282, 0.04975331607035563, -0.16926404805120848],
            ],
            [
                [-0.00375019346338986, 0.18818022185906896, -0.1844300283956791],
                [-0.0008418375323318568, -0.0008418375323318568, 0.0016836750646637144],
            ],
        ],
    ),
    "KL 0.1 clip 0.45": (
        dict(beta=0.1, clip=0.45),
        [
            [
                [0.0551419902270675, 0.028450734297909296, -0.08359272452497679],
                [0.05975536599042641, 0.024876658035177815, -0.08463202402560424],
            ],
            [
                [-0.00187509673169493, 0.09409011092953448, -0.09221501419783955],
                [-0.08695880086269842, 0.09804121510281025, -0.011082414240111837],
            ],
        ],
    ),
}


PROMISE_OF_CASE = {
    "no KL": "grpo_grad.surrogate",
    "KL 0.1": "grpo_grad.kl_term",
    "KL 0.1 no length_norm": "grpo_grad.length_norm",
    "KL 0.1 clip 0.45": "grpo_grad.surrogate",
}


@pytest.mark.parametrize(
    "case", [pytest.param(case, marks=pytest.mark.promise(PROMISE_OF_CASE[case])) for case in CASES]
)
def test_grpo_grad_two_groups(student, lab, case):
    """Two groups, some ratios outside the clip: those tokens keep only their KL term
    (-beta * (1 - rho)); without length_norm every response counts len(q) = 2 times as much."""
    kw, want = CASES[case]
    policy, ref = lab.TabPolicy(2, 2, 3, table(THETA)), lab.TabPolicy(2, 2, 3, table(REF_THETA))
    groups, cfg = two_groups(lab), lab.GRPOConfig(**kw)
    expect_close(
        student.grpo_grad(policy, ref, groups, cfg), want, grad_call(policy, ref, groups, cfg), abs=1e-12
    )


@pytest.mark.promise("grpo_grad.kl_term")
def test_grpo_grad_default_config(student, lab):
    """The default GRPOConfig(): clip 0.2, beta 0.04, length_norm on."""
    policy, ref = lab.TabPolicy(2, 2, 3, table(THETA)), lab.TabPolicy(2, 2, 3, table(REF_THETA))
    groups = two_groups(lab)
    want = [
        [
            [0.030523450286981755, 0.010772534779814488, -0.041295985066796236],
            [0.058691282268335185, 0.03656029095543789, -0.09525157322377309],
        ],
        [
            [-0.0021250402469632917, 0.09786711817806089, -0.0957420779310976],
            [-0.0001683675064663714, -0.0001683675064663714, 0.0003367350129327429],
        ],
    ]
    expect_close(student.grpo_grad(policy, ref, groups), want, grad_call(policy, ref, groups), abs=1e-12)


@pytest.mark.promise("grpo_grad.kl_when_clipped")
def test_grpo_grad_keeps_the_kl_term_when_the_clip_blocks(student, lab):
    """Every surrogate held by the clip (ratios 1.3, 2.0 with A > 0; 0.7, 0.5 with A < 0; A = 0):
    with beta = 0 the gradient is 0, with beta = 0.1 only the KL term -beta * (1 - rho) is left."""
    policy, ref = lab.TabPolicy(2, 2, 3, table(THETA)), lab.TabPolicy(2, 2, 3, table(REF_THETA))
    groups = [
        lab.Group(
            0, [(0, 1), (2, 2)], [0.0, 0.0], [1.0, -1.0], [[-1.035664, -1.100753], [-0.816625, -1.714459]]
        ),
        lab.Group(1, [(2, 0), (1, 1)], [0.0, 0.0], [0.0, 0.0], [[-1.1733, -0.895814], [-0.66794, -0.991124]]),
    ]
    cfg = lab.GRPOConfig(beta=0.0)
    expect_close(
        student.grpo_grad(policy, ref, groups, cfg), ZERO, grad_call(policy, ref, groups, cfg), abs=1e-12
    )
    cfg = lab.GRPOConfig(beta=0.1)
    want = [
        [
            [-0.0002720169245182013, 0.0016186372364726308, -0.0013466203119544293],
            [-0.005282730170227099, -0.022212964420114098, 0.0274956945903412],
        ],
        [
            [0.0004165725254472656, -0.006295012080877333, 0.005878439555430067],
            [-0.0004209187661659284, -0.0004209187661659284, 0.0008418375323318572],
        ],
    ]
    expect_close(
        student.grpo_grad(policy, ref, groups, cfg), want, grad_call(policy, ref, groups, cfg), abs=1e-12
    )
