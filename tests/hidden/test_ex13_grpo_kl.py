"""Exercise 13, GRPO with KL (hidden): `kl_k3` by its properties and exact enumeration, `grpo_grad` against
central differences of the given `grpo_objective` and against the reference on collected groups."""

import math
import random

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_pinned, expect_true

from .gradients import S, T, V, central_difference, copy3, opaque, policy_text, thetas

pytestmark = pytest.mark.exercise(13)


MARGIN = 1e-4  # no ratio this close to 1 +- clip
LOGP = st.floats(-8.0, 0.0)


def grad_call(policy, ref, groups, cfg):
    return f"grpo_grad({policy_text(policy)}, {policy_text(ref)}, groups={groups!r}, {cfg!r})"


def margin(policy, groups, clip):
    rs = [
        math.exp(policy.logp_tok(gr.s, t, v) - lpo[t])
        for gr in groups
        for q, lpo in zip(gr.seqs, gr.logp_old, strict=True)
        for t, v in enumerate(q)
    ]
    return min(min(abs(r - 1 - clip), abs(r - 1 + clip)) for r in rs)


def _pin_kl(student, reference):
    """Each kl_k3 property below also pins two values: 0.0 or a constant satisfies most of them."""
    expect_pinned(student, reference, "kl_k3", (math.log(0.5), math.log(0.125)), (-1.0, -2.0), (-2.0, -0.5))


def _pin_grpo(student, reference):
    """Pins grpo_grad on two cases: some collected batches have no signal, and a zero table passes them."""
    third = math.log(1 / 3)
    policy, ref = (
        reference.TabPolicy(1, 2, 3),
        reference.TabPolicy(1, 2, 3, [[[0.5, 0.0, -0.5], [0.0, 0.2, 0.0]]]),
    )
    group = reference.Group(0, [(0, 1), (2, 1)], [1.0, 0.0], [0.5, -0.5], [[third] * 2, [third] * 2])
    cases = [
        (policy, ref, [group], reference.GRPOConfig(beta=0.0)),
        (policy, ref, [group], reference.GRPOConfig()),
    ]
    expect_pinned(student, reference, "grpo_grad", *cases)


def log_softmax(xs):
    m = max(xs)
    z = m + math.log(math.fsum(math.exp(x - m) for x in xs))
    return [x - z for x in xs]


# ---- kl_k3 --------------------------------------------------------------------------------------------


@given(logp_ref=LOGP, logp=LOGP)
def test_kl_k3_is_never_negative(student, reference, logp_ref, logp):
    """K3 is never negative."""
    _pin_kl(student, reference)
    got = student.kl_k3(logp_ref, logp)
    expect_true(got >= -1e-12, f"kl_k3({logp_ref!r}, {logp!r}) = {got!r} is negative")


@given(logp=st.floats(-20.0, 0.0))
def test_kl_k3_is_zero_when_the_log_probs_agree(student, reference, logp):
    """K3 is 0 when the two log-probabilities agree."""
    _pin_kl(student, reference)
    expect_close(student.kl_k3(logp, logp), 0.0, call("kl_k3", logp, logp), abs=1e-12)


@given(logp_ref=LOGP, gap=st.floats(1e-3, 6.0), sign=st.sampled_from([1.0, -1.0]))
def test_kl_k3_is_positive_when_the_log_probs_differ(student, reference, logp_ref, gap, sign):
    """K3 is strictly positive when the two log-probabilities differ."""
    _pin_kl(student, reference)
    logp = logp_ref + sign * gap
    got = student.kl_k3(logp_ref, logp)
    expect_true(got > 0.0, f"kl_k3({logp_ref!r}, {logp!r}) = {got!r} is not positive")


@given(logp_ref=LOGP, logp=LOGP)
def test_kl_k3_matches_reference(student, reference, logp_ref, logp):
    """K3 = rho - log(rho) - 1 with rho = pi_ref / pi, as the reference computes it."""
    want = reference.kl_k3(logp_ref, logp)
    expect_close(student.kl_k3(logp_ref, logp), want, call("kl_k3", logp_ref, logp), rel=1e-7, abs=1e-12)


@given(
    logits=st.integers(2, 6).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(-3, 3), min_size=n, max_size=n),
            st.lists(st.floats(-3, 3), min_size=n, max_size=n),
        )
    )
)
def test_kl_k3_is_unbiased(student, logits):
    """The mean of k3 under pi, by exact enumeration, is KL(pi || pi_ref)."""
    logp, logp_ref = log_softmax(logits[0]), log_softmax(logits[1])
    terms = [student.kl_k3(r, lp) for r, lp in zip(logp_ref, logp, strict=True)]
    got = math.fsum(math.exp(lp) * k for lp, k in zip(logp, terms, strict=True))
    want = math.fsum(math.exp(lp) * (lp - r) for lp, r in zip(logp, logp_ref, strict=True))
    what = f"sum of pi(x) * kl_k3(log pi_ref(x), log pi(x)) for log pi = {logp}, log pi_ref = {logp_ref}"
    expect_close(got, want, what, rel=1e-9, abs=1e-9)


# ---- grpo_grad ----------------------------------------------------------------------------------------


@st.composite
def hand_groups(draw, lab, policy, lengths, blocked_clip=None):
    """1-2 groups of 1-3 responses with advantages and logp_old drawn; with blocked_clip, every ratio is
    outside the clip on the side that holds the surrogate (or A = 0)."""
    groups = []
    for _ in range(draw(st.integers(1, 2))):
        s = draw(st.integers(0, S - 1))
        seqs, adv, logp_old = [], [], []
        for _ in range(draw(st.integers(1, 3))):
            n = draw(st.sampled_from(lengths))
            q = tuple(draw(st.integers(0, V - 1)) for _ in range(n))
            a = draw(st.one_of(st.just(0.0), st.floats(-2.0, 2.0)))
            if blocked_clip is None:
                shifts = [draw(st.floats(-0.7, 0.7)) for _ in q]
            elif a > 0:
                shifts = [math.log(1 + blocked_clip + draw(st.floats(0.01, 1.0))) for _ in q]
            elif a < 0:
                shifts = [math.log(1 - blocked_clip - draw(st.floats(0.01, 0.5))) for _ in q]
            else:
                shifts = [draw(st.floats(-0.7, 0.7)) for _ in q]
            seqs.append(q)
            adv.append(a)
            logp_old.append(
                [policy.logp_tok(s, t, v) - d for (t, v), d in zip(enumerate(q), shifts, strict=True)]
            )
        groups.append(lab.Group(s, seqs, [0.0] * len(seqs), adv, logp_old))
    return groups


CONFIG = dict(
    beta=st.sampled_from([0.0, 0.04, 0.3]),
    clip=st.sampled_from([0.1, 0.2, 0.3]),
    length_norm=st.booleans(),
    std_norm=st.booleans(),
)


@given(data=st.data(), theta=thetas(-2.0, 2.0), ref_theta=thetas(-2.0, 2.0), **CONFIG)
def test_grpo_grad_is_the_gradient_of_grpo_objective(
    student, lab, reference, data, theta, ref_theta, beta, clip, length_norm, std_norm
):
    """grpo_grad equals the central-difference gradient of grpo_objective (away from clip boundaries)."""
    policy, ref = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, ref_theta)
    groups = data.draw(hand_groups(lab, policy, lengths=[T]))
    cfg = lab.GRPOConfig(clip=clip, beta=beta, length_norm=length_norm, std_norm=std_norm)
    assume(margin(policy, groups, clip) > MARGIN)
    want = central_difference(lambda: reference.grpo_objective(policy, ref, groups, cfg), policy)
    got = student.grpo_grad(policy, ref, groups, cfg)
    expect_close(got, want, grad_call(policy, ref, groups, cfg), rel=1e-5, abs=1e-6)


@given(data=st.data(), theta=thetas(-2.0, 2.0), ref_theta=thetas(-2.0, 2.0), **CONFIG)
def test_grpo_grad_keeps_the_kl_term_when_the_clip_blocks(
    student, lab, reference, data, theta, ref_theta, beta, clip, length_norm, std_norm
):
    """Where the clip holds every surrogate, the gradient is the KL term's alone (0 when beta is 0)."""
    policy, ref = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, ref_theta)
    groups = data.draw(hand_groups(lab, policy, lengths=[T], blocked_clip=clip))
    cfg = lab.GRPOConfig(clip=clip, beta=beta, length_norm=length_norm, std_norm=std_norm)
    want = central_difference(lambda: reference.grpo_objective(policy, ref, groups, cfg), policy)
    got = student.grpo_grad(policy, ref, groups, cfg)
    expect_close(got, want, grad_call(policy, ref, groups, cfg), rel=1e-5, abs=1e-6)


@given(data=st.data(), theta=thetas(-2.0, 2.0), ref_theta=thetas(-2.0, 2.0), **CONFIG)
def test_grpo_grad_weights_each_response_by_its_length(
    student, lab, reference, data, theta, ref_theta, beta, clip, length_norm, std_norm
):
    """Responses of different lengths are weighted as in grpo_objective (1/len(q) with length_norm)."""
    policy, ref = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, ref_theta)
    groups = data.draw(hand_groups(lab, policy, lengths=[1, T]))
    cfg = lab.GRPOConfig(clip=clip, beta=beta, length_norm=length_norm, std_norm=std_norm)
    assume(margin(policy, groups, clip) > MARGIN)
    want = central_difference(lambda: reference.grpo_objective(policy, ref, groups, cfg), policy)
    got = student.grpo_grad(policy, ref, groups, cfg)
    expect_close(got, want, grad_call(policy, ref, groups, cfg), rel=1e-5, abs=1e-6)


START = [[[0.0, 0.3, -0.4], [0.6, 0.0, 0.2]], [[0.1, -0.5, 0.3], [-0.2, 0.0, 0.4]]]


def trained_case(lab, reference, seed, cfg):
    """A policy after a few reference GRPO iterations (its start is the reference policy), a fresh set of
    groups from it, and the policy one reference step later."""
    env = lab.ToyEnv(S, T, V, seed=seed)
    policy = lab.TabPolicy(S, T, V, copy3(START))
    ref = policy.copy()
    rng = random.Random(seed)
    reference.grpo_train(policy, env, rng, iters=4, cfg=cfg)
    groups = lab.grpo_collect(policy, env, rng, cfg)
    lab.apply_grad(policy, reference.grpo_grad(policy, ref, groups, cfg), 1.5)
    return policy, ref, groups


@pytest.mark.parametrize("seed", [1, 2, 3, 4, 5], ids=opaque(5, "run"))
@pytest.mark.parametrize(
    "kw",
    [dict(), dict(beta=0.0), dict(beta=0.5, length_norm=False), dict(clip=0.05, std_norm=False)],
    ids=opaque(4, "config"),
)
def test_grpo_grad_matches_reference_on_collected_groups(student, lab, reference, seed, kw):
    """grpo_grad matches the reference on groups collected from a trained policy, and changes no argument."""
    _pin_grpo(student, reference)
    cfg = lab.GRPOConfig(group=4, prompts=3, **kw)
    policy, ref, groups = trained_case(lab, reference, seed, cfg)
    assert margin(policy, groups, cfg.clip) > 1e-6, "test input too close to a clip boundary"
    before = repr((policy.theta, ref.theta, groups, cfg))
    want = reference.grpo_grad(policy, ref, groups, cfg)
    got = student.grpo_grad(policy, ref, groups, cfg)
    what = grad_call(policy, ref, groups, cfg)
    expect_close(got, want, what, rel=1e-9, abs=1e-12)
    expect_true(
        repr((policy.theta, ref.theta, groups, cfg)) == before, f"{what} changed one of its arguments"
    )
