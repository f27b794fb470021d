"""Exercise 11, PPO clip (hidden): `clip_flows` against the clip rule, `ppo_grad` against central
differences of the given `ppo_objective` and against the reference on collected samples."""

import math
import random

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from grader.expect import expect_close, expect_equal, expect_pinned, expect_true

from .gradients import S, T, V, central_difference, copy3, opaque, policy_text, thetas

pytestmark = pytest.mark.exercise(11)


MARGIN = 1e-4  # no ratio this close to 1 +- clip (a step of H moves a ratio by about r * H)


def grad_call(policy, samples, clip):
    return f"ppo_grad({policy_text(policy)}, samples={samples!r}, clip={clip!r})"


def ratios(policy, samples):
    return [
        math.exp(policy.logp_tok(sm.s, t, v) - sm.logp_old[t]) for sm in samples for t, v in enumerate(sm.seq)
    ]


def margin(policy, samples, clip):
    return min(min(abs(r - 1 - clip), abs(r - 1 + clip)) for r in ratios(policy, samples))


def collected(lab, theta_old, delta, env_seed, seed, critic, kl_beta):
    """Samples from lab.ppo_collect at theta_old, and the policy theta_old + delta they are judged at."""
    old = lab.TabPolicy(S, T, V, theta_old)
    env = lab.ToyEnv(S, T, V, seed=env_seed)
    cfg = lab.PPOConfig(kl_beta=kl_beta, batch=5)
    samples = lab.ppo_collect(old, old.copy(), env, critic, random.Random(seed), cfg)
    new = [
        [[a + d for a, d in zip(ra, rd, strict=True)] for ra, rd in zip(sa, sd, strict=True)]
        for sa, sd in zip(theta_old, delta, strict=True)
    ]
    return lab.TabPolicy(S, T, V, new), samples


# ---- clip_flows ---------------------------------------------------------------------------------------

# Away from the boundaries, both verdicts, both signs: a constant, or a coin flip, fails some of them.
PINNED_CLIP = [
    (1.0, 1.1, 0.2, True),
    (1.0, 1.5, 0.2, False),
    (2.0, 0.5, 0.3, True),
    (-1.0, 0.9, 0.2, True),
    (-1.0, 0.5, 0.2, False),
    (-2.0, 1.6, 0.3, True),
    (0.5, 2.0, 0.5, False),
    (-0.5, 0.3, 0.5, False),
    (3.0, 1.25, 0.3, True),
    (0.25, 1.4, 0.3, False),
    (-3.0, 0.75, 0.3, True),
    (-0.25, 0.6, 0.3, False),
]


def _pin_clip(student, reference, sign=None):
    """Each clip_flows property below also pins the verdicts above (a constant answer, or a coin flip,
    passes it); a check of one sign of A pins that sign's cases only, so a bug of the other sign costs
    the other sign's checks."""
    for A, ratio, eps, want in PINNED_CLIP:
        if sign is None or (A > 0) == (sign > 0):
            expect_equal(student.clip_flows(A, ratio, eps), want, f"clip_flows({A!r}, {ratio!r}, {eps!r})")


def _pin_grad(student, reference):
    """Pins ppo_grad on two batches: a zero table passes the property of clipped tokens."""
    policy = reference.TabPolicy(
        S, T, V, [[[0.2 * (s - t + v) for v in range(V)] for t in range(T)] for s in range(S)]
    )
    first = reference.PPOSample(s=0, seq=(1, 2), R=0.0, logp_old=[-1.0, -1.2], G=[0.0, 0.0], A=[0.6, -0.3])
    second = reference.PPOSample(s=1, seq=(0, 0), R=0.0, logp_old=[-1.1, -0.9], G=[0.0, 0.0], A=[1.0, 0.4])
    expect_pinned(student, reference, "ppo_grad", (policy, [first], 0.2), (policy, [first, second], 0.3))


@given(A=st.floats(-10, 10), ratio=st.floats(0.0, 5.0), eps=st.floats(0.01, 0.99))
def test_clip_flows_follows_the_clip_rule(student, A, ratio, eps):
    """clip_flows is True exactly when A > 0 and ratio < 1 + eps, or A < 0 and ratio > 1 - eps."""
    if min(abs(ratio - (1 + eps)), abs(ratio - (1 - eps))) < 1e-9:
        ratio += 1e-6  # the boundaries themselves are checked with exact binary values below
    want = (A > 0 and ratio < 1 + eps) or (A < 0 and ratio > 1 - eps)
    expect_equal(student.clip_flows(A, ratio, eps), want, f"clip_flows({A!r}, {ratio!r}, {eps!r})")


@pytest.mark.parametrize("eps", [0.125, 0.25, 0.375, 0.5, 0.75], ids=opaque(5, "eps"))
@pytest.mark.parametrize("A", [0.25, 3.0, -0.25, -3.0], ids=opaque(4, "A"))
def test_clip_flows_at_the_boundaries(student, reference, A, eps):
    """A ratio exactly at 1 + eps (A > 0) or 1 - eps (A < 0) is held by the clip; the other end passes."""
    _pin_clip(student, reference, A)
    held, free = (1 + eps, 1 - eps) if A > 0 else (1 - eps, 1 + eps)
    expect_equal(student.clip_flows(A, held, eps), False, f"clip_flows({A!r}, {held!r}, {eps!r})")
    expect_equal(student.clip_flows(A, free, eps), True, f"clip_flows({A!r}, {free!r}, {eps!r})")


@given(ratio=st.floats(0.0, 10.0), eps=st.floats(0.01, 0.99), negative_zero=st.booleans())
def test_clip_flows_zero_advantage(student, reference, ratio, eps, negative_zero):
    """A zero advantage never passes gradient."""
    _pin_clip(student, reference)
    A = -0.0 if negative_zero else 0.0
    expect_equal(student.clip_flows(A, ratio, eps), False, f"clip_flows({A!r}, {ratio!r}, {eps!r})")


# ---- ppo_grad -----------------------------------------------------------------------------------------


@given(
    theta_old=thetas(-2.0, 2.0),
    delta=thetas(-0.6, 0.6),
    env_seed=st.integers(0, 50),
    seed=st.integers(0, 10**6),
    critic=st.lists(st.lists(st.floats(-1, 1), min_size=T, max_size=T), min_size=S, max_size=S),
    kl_beta=st.sampled_from([0.0, 0.1]),
    clip=st.sampled_from([0.1, 0.2, 0.3]),
)
def test_ppo_grad_is_the_gradient_of_ppo_objective(
    student, lab, reference, theta_old, delta, env_seed, seed, critic, kl_beta, clip
):
    """ppo_grad equals the central-difference gradient of ppo_objective (away from clip boundaries)."""
    policy, samples = collected(lab, theta_old, delta, env_seed, seed, critic, kl_beta)
    assume(margin(policy, samples, clip) > MARGIN)
    want = central_difference(lambda: reference.ppo_objective(policy, samples, clip), policy)
    got = student.ppo_grad(policy, samples, clip)
    expect_close(got, want, grad_call(policy, samples, clip), rel=1e-5, abs=1e-6)


START = [[[0.0, 0.3, -0.4], [0.6, 0.0, 0.2]], [[0.1, -0.5, 0.3], [-0.2, 0.0, 0.4]]]


def trained_case(lab, reference, seed):
    """A policy after a few reference PPO iterations, a fresh batch from it, and the policy one step later."""
    env = lab.ToyEnv(S, T, V, seed=seed)
    policy = lab.TabPolicy(S, T, V, copy3(START))
    cfg = lab.PPOConfig(kl_beta=0.05, batch=8, epochs=2)
    rng = random.Random(seed)
    critic = [[0.0] * T for _ in range(S)]
    reference.ppo_train(policy, env, rng, iters=4, cfg=cfg, critic=critic)
    samples = lab.ppo_collect(policy, policy.copy(), env, critic, rng, cfg)
    lab.apply_grad(policy, reference.ppo_grad(policy, samples, cfg.clip), 1.5)
    return policy, samples


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6], ids=opaque(6, "batch"))
@pytest.mark.parametrize("clip", [0.2, 0.05], ids=opaque(2, "clip"))
def test_ppo_grad_matches_reference_on_collected_batches(student, lab, reference, seed, clip):
    """ppo_grad matches the reference on batches collected from a trained policy, and changes no argument."""
    policy, samples = trained_case(lab, reference, seed)
    assert margin(policy, samples, clip) > 1e-6, "test input too close to a clip boundary"
    theta_before, samples_before = repr(policy.theta), repr(samples)
    want = reference.ppo_grad(policy, samples, clip)
    got = student.ppo_grad(policy, samples, clip)
    what = grad_call(policy, samples, clip)
    expect_close(got, want, what, rel=1e-9, abs=1e-12)
    expect_true(repr(policy.theta) == theta_before, f"{what} changed the policy's theta")
    expect_true(repr(samples) == samples_before, f"{what} changed the samples")


@st.composite
def blocked_samples(draw, lab, clip):
    """Samples whose every token the clip holds: A > 0 and r > 1 + clip, A < 0 and r < 1 - clip, or A = 0."""
    policy_theta = draw(thetas(-2.0, 2.0))
    policy = lab.TabPolicy(S, T, V, policy_theta)
    out = []
    for _ in range(draw(st.integers(1, 3))):
        s = draw(st.integers(0, S - 1))
        seq = tuple(draw(st.integers(0, V - 1)) for _ in range(T))
        A, logp_old = [], []
        for t, v in enumerate(seq):
            kind = draw(st.sampled_from(["up", "down", "zero"]))
            gap = draw(st.floats(0.01, 1.0))
            a = {"up": 1.0, "down": -1.0, "zero": 0.0}[kind] * draw(st.floats(0.1, 2.0))
            free = draw(st.floats(0.2, 3.0))
            r = {"up": 1 + clip + gap, "down": max(1e-3, 1 - clip - gap), "zero": free}[kind]
            A.append(a)
            logp_old.append(policy.logp_tok(s, t, v) - math.log(r))
        out.append(lab.PPOSample(s, seq, 0.0, logp_old, [0.0] * T, A))
    return policy, out


@given(
    data=st.data(), env_seed=st.integers(0, 50), seed=st.integers(0, 10**6), clip=st.sampled_from([0.1, 0.2])
)
def test_ppo_grad_ignores_clipped_tokens(student, reference, lab, data, env_seed, seed, clip):
    """Tokens the clip holds add nothing: appending them only changes the normalisation."""
    _pin_grad(student, reference)
    policy, extra = data.draw(blocked_samples(lab, clip))
    env = lab.ToyEnv(S, T, V, seed=env_seed)
    critic = [[0.5, -0.5]] * S
    base = lab.ppo_collect(policy, policy.copy(), env, critic, random.Random(seed), lab.PPOConfig(batch=4))
    alone = student.ppo_grad(policy, extra, clip)
    zero = [[[0.0] * V for _ in range(T)] for _ in range(S)]
    expect_close(alone, zero, grad_call(policy, extra, clip), abs=1e-12)
    g_base = student.ppo_grad(policy, base, clip)
    g_all = student.ppo_grad(policy, base + extra, clip)
    k = len(base) / (len(base) + len(extra))
    want = [[[k * x for x in row] for row in block] for block in g_base]
    what = grad_call(policy, base + extra, clip) + f"\n  vs {k:.3f} x the gradient of its first {len(base)}"
    expect_close(g_all, want, what, rel=1e-9, abs=1e-12)
