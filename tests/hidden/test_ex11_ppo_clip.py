"""Exercise 11, PPO clip (hidden): `clip_flows` against the clip rule, `ppo_grad` against central
differences of the given `ppo_objective` and against the reference on collected samples."""

import math
import random

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from grader.expect import expect_close, expect_equal, expect_true

from .gradients import S, T, V, central_difference, copy3, opaque, policy_text, thetas, zeros

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

# Cases every reading of the clip rule answers alike (ratio 1 passes for either sign): checked beside a
# boundary or a zero advantage, they make a constant answer fail without costing a mistake elsewhere in
# the rule the points of these checks.
CENTRAL = [(1.0, 1.0, 0.2, True), (-1.0, 1.0, 0.2, True), (2.0, 1.0, 0.5, True), (-0.5, 1.0, 0.3, True)]


def check_clip(student, cases):
    for A, ratio, eps, want in cases:
        expect_equal(student.clip_flows(A, ratio, eps), want, f"clip_flows({A!r}, {ratio!r}, {eps!r})")


@st.composite
def ratio_cases(draw):
    """(ratio, eps) with the ratio below 1 - eps, inside the clip range or above 1 + eps, each as often,
    never within 1e-9 of a bound (the bounds themselves are checked with exact binary values below)."""
    eps = draw(st.floats(0.01, 0.99))
    where = draw(st.sampled_from(["below", "inside", "above"]))
    frac = draw(st.floats(0.001, 0.999))
    lo, hi = {"below": (0.0, 1 - eps), "inside": (1 - eps, 1 + eps), "above": (1 + eps, 5.0)}[where]
    ratio = lo + frac * (hi - lo)
    assume(min(abs(ratio - (1 + eps)), abs(ratio - (1 - eps))) > 1e-9)
    return ratio, eps


@pytest.mark.promise("clip_flows.positive_advantage")
@given(A=st.floats(1e-6, 10.0), case=ratio_cases())
@example(A=1.0, case=(0.3, 0.2))  # far below 1 - eps: min() keeps r A, the gradient passes
@example(A=2.0, case=(1.1, 0.2))
@example(A=0.5, case=(1.5, 0.2))
def test_clip_flows_positive_rule(student, A, case):
    """For A > 0, clip_flows is True exactly when ratio < 1 + eps, however far below 1 - eps it is."""
    ratio, eps = case
    check_clip(student, [(A, ratio, eps, ratio < 1 + eps)])


@pytest.mark.promise("clip_flows.negative_advantage")
@given(A=st.floats(-10.0, -1e-6), case=ratio_cases())
@example(A=-1.0, case=(2.5, 0.2))  # far above 1 + eps: r A is the smaller term, the gradient passes
@example(A=-2.0, case=(0.9, 0.2))
@example(A=-0.5, case=(0.5, 0.2))
def test_clip_flows_negative_rule(student, A, case):
    """For A < 0, clip_flows is True exactly when ratio > 1 - eps, however far above 1 + eps it is."""
    ratio, eps = case
    check_clip(student, [(A, ratio, eps, ratio > 1 - eps)])


@pytest.mark.promise("clip_flows.bound_is_held")
@pytest.mark.parametrize("eps", [0.125, 0.25, 0.375, 0.5, 0.75], ids=opaque(5, "eps"))
@pytest.mark.parametrize("A", [0.25, 3.0, -0.25, -3.0], ids=opaque(4, "A"))
def test_clip_flows_at_the_boundaries(student, A, eps):
    """A ratio exactly at 1 + eps (A > 0) or 1 - eps (A < 0) is held by the clip (eps exact in binary)."""
    held = 1 + eps if A > 0 else 1 - eps
    check_clip(student, [(A, held, eps, False), *CENTRAL])


@pytest.mark.promise("clip_flows.zero_advantage")
@given(ratio=st.floats(0.0, 10.0), eps=st.floats(0.01, 0.99), negative_zero=st.booleans())
@example(ratio=0.5, eps=0.2, negative_zero=False)  # where A > 0 would pass
@example(ratio=1.5, eps=0.2, negative_zero=True)  # where A < 0 would pass
def test_clip_flows_zero_advantage(student, ratio, eps, negative_zero):
    """A zero advantage (0.0 or -0.0) never passes gradient."""
    A = -0.0 if negative_zero else 0.0
    check_clip(student, [(A, ratio, eps, False), *CENTRAL])


# ---- ppo_grad -----------------------------------------------------------------------------------------


def nonzero(g):
    return any(abs(x) > 1e-9 for block in g for row in block for x in row)


@pytest.mark.promise("ppo_grad.formula")
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


def with_held_tokens(lab, policy, samples, clip, short):
    """The samples with tokens the clip holds added (A > 0 above 1 + clip, A < 0 below 1 - clip, A = 0),
    and tokens that pass outside the clip range (A > 0 below 1 - clip, A < 0 above 1 + clip), beside the
    trained batch's tokens that pass: a gradient whose n is not every token, whose clip is not the given
    one, or that weighs a passing token by the clipped ratio, differs. With `short`, every response is
    cut to its first token (shorter than the policy's T, as the docstring allows: n counts the samples'
    tokens, not T)."""
    L = 1 if short else T
    out = [lab.PPOSample(sm.s, sm.seq[:L], sm.R, sm.logp_old[:L], sm.G[:L], sm.A[:L]) for sm in samples]
    specs = [
        (0, (1, 2), [0.9, -0.7], [1 + clip + 0.1, 1 - clip - 0.1]),
        (1, (2, 0), [0.0, 1.2], [1.5, 1 + clip + 0.02]),
        (1, (0, 1), [-1.1, 0.6], [1 - clip - 0.03, 1 + clip + 0.3]),
        # Outside the clip range on the side that passes (min() keeps r A): they add A r, not A clip(r).
        (0, (2, 1), [0.8, -0.6], [1 - clip - 0.2, 1 + clip + 0.25]),
    ]
    for s, seq, A, rs in specs:
        logp_old = [
            policy.logp_tok(s, t, v) - math.log(r) for (t, v), r in zip(enumerate(seq), rs, strict=True)
        ]
        out.append(lab.PPOSample(s, seq[:L], 0.0, logp_old[:L], [0.0] * L, A[:L]))
    return out


@pytest.mark.promise("ppo_grad.formula")
@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5, 6], ids=opaque(6, "batch"))
@pytest.mark.parametrize("clip", [0.2, 0.05], ids=opaque(2, "clip"))
def test_ppo_grad_matches_reference_on_collected_batches(student, lab, reference, seed, clip):
    """ppo_grad matches the reference on batches collected from a trained policy, tokens that the clip
    holds among them (responses shorter than the policy's T in some)."""
    policy, samples = trained_case(lab, reference, seed)
    samples = with_held_tokens(lab, policy, samples, clip, short=seed % 2 == 0)
    assert margin(policy, samples, clip) > 1e-6, "test input too close to a clip boundary"
    want = reference.ppo_grad(policy, samples, clip)
    got = student.ppo_grad(policy, samples, clip)
    expect_close(got, want, grad_call(policy, samples, clip), rel=1e-9, abs=1e-12)


@st.composite
def blocked_case(draw):
    """(theta, clip, specs): specs (s, seq, A, ratios) of samples whose every token the clip holds: A > 0
    and r > 1 + clip, A < 0 and r < 1 - clip, or A = 0 (any ratio). A held ratio lies as often within 0.1
    of its bound (where a wider clip would pass it) as further out."""
    theta = draw(thetas(-2.0, 2.0))
    clip = draw(st.sampled_from([0.1, 0.15, 0.3]))
    specs = []
    for _ in range(draw(st.integers(1, 3))):
        s = draw(st.integers(0, S - 1))
        seq = tuple(draw(st.integers(0, V - 1)) for _ in range(T))
        A, ratios = [], []
        for _ in seq:
            kind = draw(st.sampled_from(["up", "down", "zero"]))
            gap = draw(st.one_of(st.floats(0.001, 0.1), st.floats(0.1, 1.0)))
            A.append({"up": 1.0, "down": -1.0, "zero": 0.0}[kind] * draw(st.floats(0.1, 2.0)))
            free = draw(st.floats(0.2, 3.0))
            ratios.append({"up": 1 + clip + gap, "down": max(1e-3, 1 - clip - gap), "zero": free}[kind])
        specs.append((s, seq, A, ratios))
    return theta, clip, specs


def blocked_samples(lab, case):
    """The policy, the clip and the PPOSamples of a blocked_case."""
    theta, clip, specs = case
    policy = lab.TabPolicy(S, T, V, copy3(theta))
    samples = []
    for s, seq, A, ratios in specs:
        logp_old = [
            policy.logp_tok(s, t, v) - math.log(r) for (t, v), r in zip(enumerate(seq), ratios, strict=True)
        ]
        samples.append(lab.PPOSample(s, seq, 0.0, logp_old, [0.0] * T, list(A)))
    return policy, clip, samples


ZERO_THETA = [[[0.0] * V for _ in range(T)] for _ in range(S)]
# Ratios just past the bounds of clip 0.1 (a clip of 0.2 would pass them), and a zero advantage.
NEAR_BOUND = (ZERO_THETA, 0.1, [(0, (1, 2), [1.0, -1.0], [1.15, 0.85]), (1, (0, 0), [0.0, 2.0], [1.0, 1.12])])


def base_batch(lab, policy, env_seed, seed):
    """A batch collected from the policy itself (every ratio 1, no advantage 0): every token passes."""
    env = lab.ToyEnv(S, T, V, seed=env_seed)
    critic = [[0.5, -0.5]] * S
    return lab.ppo_collect(policy, policy.copy(), env, critic, random.Random(seed), lab.PPOConfig(batch=4))


@pytest.mark.promise("ppo_grad.clipped_tokens_add_nothing")
@given(case=blocked_case(), env_seed=st.integers(0, 50), seed=st.integers(0, 10**6))
@example(case=NEAR_BOUND, env_seed=0, seed=0)
def test_ppo_grad_ignores_clipped_tokens(student, lab, reference, case, env_seed, seed):
    """Tokens the clip holds at the given clip add nothing: a batch of them alone gives zero (and a batch
    whose tokens pass gives the reference's gradient)."""
    policy, clip, held = blocked_samples(lab, case)
    expect_close(student.ppo_grad(policy, held, clip), zeros(), grad_call(policy, held, clip), abs=1e-12)
    base = base_batch(lab, policy, env_seed, seed)
    g_base = student.ppo_grad(policy, base, clip)
    want = reference.ppo_grad(policy, base, clip)
    expect_close(g_base, want, grad_call(policy, base, clip), rel=1e-9, abs=1e-12)


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("ppo_grad.token_count")
@given(case=blocked_case(), env_seed=st.integers(0, 50), seed=st.integers(0, 10**6))
@example(case=NEAR_BOUND, env_seed=0, seed=0)
def test_ppo_grad_held_tokens_still_count(student, lab, reference, case, env_seed, seed):
    """Appending held tokens only changes the normalisation: n counts every token, held or not."""
    policy, clip, held = blocked_samples(lab, case)
    base = base_batch(lab, policy, env_seed, seed)
    g_base = reference.ppo_grad(policy, base, clip)
    g_all = student.ppo_grad(policy, base + held, clip)
    k = len(base) / (len(base) + len(held))
    want = [[[k * x for x in row] for row in block] for block in g_base]
    what = grad_call(policy, base + held, clip) + f"\n  vs {k:.3f} x the gradient of its first {len(base)}"
    expect_close(g_all, want, what, rel=1e-9, abs=1e-12)


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("ppo_grad.unchanged")
@given(case=blocked_case(), env_seed=st.integers(0, 50), seed=st.integers(0, 10**6))
def test_ppo_grad_changes_no_argument(student, lab, case, env_seed, seed):
    """ppo_grad changes neither the policy nor the samples (their log-probabilities, advantages, ...). (A
    batch of one state moves that state's rows only.)"""
    policy, clip, held = blocked_samples(lab, case)
    base = base_batch(lab, policy, env_seed, seed)
    for s in range(S):
        samples = [sm for sm in base + held if sm.s == s]
        logp = [policy.logp_tok(s, 0, 0), policy.logp_tok(s, 1, 2)]  # ratio 1: it passes
        samples.append(lab.PPOSample(s, (0, 2), 0.0, logp, [0.0, 0.0], [0.7, -0.4]))
        before = repr((policy.theta, samples))
        g = student.ppo_grad(policy, samples, clip)
        what = grad_call(policy, samples, clip)
        expect_true(not student.last_changed, what, f"the call changed its arguments {student.last_changed}")
        expect_true(repr((policy.theta, samples)) == before, what, "the call changed its arguments")
        ok = len(g) == S and all(
            (u == s) == any(abs(x) > 1e-12 for row in b for x in row) for u, b in enumerate(g)
        )
        expect_true(ok, what, f"got {g}: only the rows of state {s} move")
