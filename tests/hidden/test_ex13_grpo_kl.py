"""Exercise 13, GRPO with KL (hidden): `kl_k3` by its properties and exact enumeration, `grpo_grad` against
central differences of the given `grpo_objective` and against the reference on collected groups."""

import math
import random

import pytest
from hypothesis import assume, example, given, settings
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_true

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


def log_softmax(xs):
    m = max(xs)
    z = m + math.log(math.fsum(math.exp(x - m) for x in xs))
    return [x - z for x in xs]


def scaled(g, k):
    return [[[k * x for x in row] for row in block] for block in g]


def nonzero(g):
    return any(abs(x) > 1e-9 for block in g for row in block for x in row)


def expect_one_state(g, s, what):
    """The gradient of a batch of state s only moves the rows of state s: the others stay 0. Beside a check
    of unchanged arguments, this makes an answer that does no work fail it."""
    ok = len(g) == S and all(
        (u == s) == any(abs(x) > 1e-12 for row in b for x in row) for u, b in enumerate(g)
    )
    expect_true(ok, what, f"got {g}: only the rows of state {s} move")


# ---- kl_k3 --------------------------------------------------------------------------------------------

LOG_HALF, LOG_QUARTER = math.log(0.5), math.log(0.25)


@pytest.mark.promise("kl_k3.formula")
@given(logp_ref=LOGP, logp=LOGP)
@example(logp_ref=LOG_HALF, logp=LOG_QUARTER)  # rho = 2: the reference's log-probability comes first
@example(logp_ref=LOG_QUARTER, logp=LOG_HALF)  # rho = 1/2
def test_kl_k3_matches_reference(student, reference, logp_ref, logp):
    """K3 = rho - log(rho) - 1 with rho = pi_ref / pi, as the reference computes it."""
    want = reference.kl_k3(logp_ref, logp)
    expect_close(student.kl_k3(logp_ref, logp), want, call("kl_k3", logp_ref, logp), rel=1e-7, abs=1e-12)


@pytest.mark.promise("kl_k3.zero_when_equal")
@given(logp=st.floats(-20.0, 0.0))
@example(logp=0.0)
@example(logp=math.log(1 / 3))
def test_kl_k3_is_zero_when_the_log_probs_agree(student, logp):
    """K3 is 0 when the two log-probabilities agree (and not 0 one nat apart)."""
    expect_close(student.kl_k3(logp, logp), 0.0, call("kl_k3", logp, logp), abs=1e-12)
    got = student.kl_k3(logp, logp - 1.0)
    expect_true(abs(got) > 1e-3, call("kl_k3", logp, logp - 1.0), f"got {got!r}: these do not agree")


@pytest.mark.promise("kl_k3.very_negative")
@given(logp_ref=st.floats(-5000.0, -746.0), gap=st.floats(-6.0, 6.0))
@example(logp_ref=-800.0, gap=math.log(2.0))  # exp() of either is 0: only their difference has rho
def test_kl_k3_of_very_negative_log_probs(student, reference, logp_ref, gap):
    """Log-probabilities far below -745, whose exp() underflows to 0, still give K3 of their difference."""
    logp = logp_ref + gap
    want = reference.kl_k3(logp_ref, logp)
    expect_close(student.kl_k3(logp_ref, logp), want, call("kl_k3", logp_ref, logp), rel=1e-7, abs=1e-12)


@pytest.mark.promise("kl_k3.positive")
@given(
    logp_ref=LOGP,
    gap=st.one_of(st.floats(1e-3, 0.1), st.floats(0.1, 6.0)),
    sign=st.sampled_from([1.0, -1.0]),
)
@example(logp_ref=-1.0, gap=1.0, sign=1.0)  # pi > pi_ref: the log ratio alone would be negative
@example(logp_ref=-1.0, gap=1.0, sign=-1.0)
@example(logp_ref=-2.0, gap=1e-3, sign=1.0)
def test_kl_k3_is_positive_when_the_log_probs_differ(student, logp_ref, gap, sign):
    """K3 is strictly positive when the two log-probabilities differ, either way round (never negative),
    and grows with the gap."""
    logp, farther = logp_ref + sign * gap, logp_ref + 2 * sign * gap
    got, wider = student.kl_k3(logp_ref, logp), student.kl_k3(logp_ref, farther)
    expect_true(got > 0.0, call("kl_k3", logp_ref, logp), f"got {got!r}: expected a positive number")
    expect_true(
        wider > got, call("kl_k3", logp_ref, farther), f"got {wider!r}, not more than {got!r} at half the gap"
    )


@pytest.mark.promise("kl_k3.unbiased")
@given(
    logits=st.integers(2, 6).flatmap(
        lambda n: st.tuples(
            st.lists(st.floats(-3, 3), min_size=n, max_size=n),
            st.lists(st.floats(-3, 3), min_size=n, max_size=n),
        )
    )
)
@example(logits=([0.0, 0.0, math.log(2.0)], [math.log(2.0), 0.0, 0.0]))
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
def hand_groups(draw, lab, policy, lengths, blocked_clip=None, n_groups=(1, 2), zero_adv=False):
    """n_groups (1-2) groups of 1-3 responses with advantages and logp_old drawn; with blocked_clip, every
    ratio is outside the clip on the side that holds the surrogate (or A = 0); with zero_adv, every A is 0."""
    groups = []
    for _ in range(draw(st.integers(*n_groups))):
        s = draw(st.integers(0, policy.S - 1))
        seqs, adv, logp_old = [], [], []
        for _ in range(draw(st.integers(1, 3))):
            n = draw(st.sampled_from(lengths))
            q = tuple(draw(st.integers(0, policy.V - 1)) for _ in range(n))
            a = 0.0 if zero_adv else draw(st.one_of(st.just(0.0), st.floats(-2.0, 2.0)))
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


@pytest.mark.promise("grpo_grad.surrogate")
@given(
    data=st.data(),
    theta=thetas(-2.0, 2.0),
    ref_theta=thetas(-2.0, 2.0),
    clip=st.sampled_from([0.1, 0.2, 0.3]),
    length_norm=st.booleans(),
)
def test_grpo_grad_is_the_gradient_of_grpo_objective(
    student, lab, reference, data, theta, ref_theta, clip, length_norm
):
    """With beta = 0, grpo_grad equals the central-difference gradient of grpo_objective (away from clip
    boundaries) on a group of 1-3 responses: the clipped surrogate's gradient."""
    policy, ref = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, ref_theta)
    groups = data.draw(hand_groups(lab, policy, lengths=[T], n_groups=(1, 1)))
    cfg = lab.GRPOConfig(clip=clip, beta=0.0, length_norm=length_norm)
    assume(margin(policy, groups, clip) > MARGIN)
    want = central_difference(lambda: reference.grpo_objective(policy, ref, groups, cfg), policy)
    got = student.grpo_grad(policy, ref, groups, cfg)
    expect_close(got, want, grad_call(policy, ref, groups, cfg), rel=1e-5, abs=1e-6)


@pytest.mark.promise("grpo_grad.kl_term")
@given(
    data=st.data(),
    theta=thetas(-2.0, 2.0),
    ref_theta=thetas(-2.0, 2.0),
    beta=st.sampled_from([0.04, 0.3, 1.0]),
    length_norm=st.booleans(),
)
def test_grpo_grad_kl_term_is_the_gradient_of_the_kl_penalty(
    student, lab, reference, data, theta, ref_theta, beta, length_norm
):
    """With every advantage 0 (no surrogate gradient), grpo_grad equals the central-difference gradient of
    grpo_objective's KL penalty: -beta * (1 - rho) per token, rho = pi_ref / pi."""
    policy, ref = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, ref_theta)
    groups = data.draw(hand_groups(lab, policy, lengths=[T], n_groups=(1, 1), zero_adv=True))
    cfg = lab.GRPOConfig(beta=beta, length_norm=length_norm)
    want = central_difference(lambda: reference.grpo_objective(policy, ref, groups, cfg), policy)
    got = student.grpo_grad(policy, ref, groups, cfg)
    expect_close(got, want, grad_call(policy, ref, groups, cfg), rel=1e-5, abs=1e-6)


@st.composite
def free_groups(draw, lab, policy):
    """1-2 groups of 1-3 responses of T tokens, each with a nonzero advantage and every ratio within 0.05
    of 1 (inside any clip in play): every token's surrogate passes, so the whole formula is in play."""
    groups = []
    for _ in range(draw(st.integers(1, 2))):
        s = draw(st.integers(0, policy.S - 1))
        rs = [draw(free_response(policy, policy.T)) for _ in range(draw(st.integers(1, 3)))]
        seqs, adv = [q for q, _, _ in rs], [a for _, a, _ in rs]
        lpos = [logp_old(policy, s, q, d) for q, _, d in rs]
        groups.append(lab.Group(s, seqs, [0.0] * len(rs), adv, lpos))
    return groups


@pytest.mark.promise("grpo_grad.formula")
@given(
    data=st.data(),
    theta=thetas(-2.0, 2.0),
    ref_theta=thetas(-2.0, 2.0),
    beta=st.sampled_from([0.04, 0.3, 1.0]),
    length_norm=st.booleans(),
)
def test_grpo_grad_is_the_gradient_of_the_whole_objective(
    student, lab, reference, data, theta, ref_theta, beta, length_norm
):
    """With beta > 0 and nonzero advantages, grpo_grad equals the central-difference gradient of
    grpo_objective: the surrogate and the KL penalty together."""
    policy, ref = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, ref_theta)
    groups = data.draw(free_groups(lab, policy))
    cfg = lab.GRPOConfig(beta=beta, length_norm=length_norm)
    want = central_difference(lambda: reference.grpo_objective(policy, ref, groups, cfg), policy)
    got = student.grpo_grad(policy, ref, groups, cfg)
    expect_close(got, want, grad_call(policy, ref, groups, cfg), rel=1e-5, abs=1e-6)


def with_adv(lab, groups, adv_of):
    """The groups with advantages adv_of(group) (everything else shared, not copied)."""
    return [lab.Group(gr.s, gr.seqs, gr.rewards, adv_of(gr), gr.logp_old) for gr in groups]


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("grpo_grad.kl_when_clipped")
@given(
    data=st.data(),
    theta=thetas(-2.0, 2.0),
    ref_theta=thetas(-2.0, 2.0),
    clip=st.sampled_from([0.1, 0.2, 0.3]),
    beta=st.sampled_from([0.04, 0.3]),
    length_norm=st.booleans(),
)
def test_grpo_grad_keeps_the_kl_term_when_the_clip_blocks(
    student, lab, data, theta, ref_theta, clip, beta, length_norm
):
    """Where the clip holds every surrogate, the KL term is still there: the gradient is the one of the same
    groups with every advantage 0, is not 0, and doubles with beta."""
    policy, ref = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, ref_theta)
    groups = data.draw(hand_groups(lab, policy, lengths=[T], blocked_clip=clip))
    cfg = lab.GRPOConfig(clip=clip, beta=beta, length_norm=length_norm)
    twice = lab.GRPOConfig(clip=clip, beta=2 * beta, length_norm=length_norm)
    gaps = [
        abs(policy.logp_tok(gr.s, t, v) - ref.logp_tok(gr.s, t, v))
        for gr in groups
        for q in gr.seqs
        for t, v in enumerate(q)
    ]
    assume(max(gaps) > 1e-3)  # the policy differs from its reference where the groups look
    zero_adv = with_adv(lab, groups, lambda gr: [0.0] * len(gr.seqs))
    g_zero = student.grpo_grad(policy, ref, zero_adv, cfg)
    what = grad_call(policy, ref, zero_adv, cfg)
    expect_true(nonzero(g_zero), what, f"got {g_zero}: the KL term of a policy unlike its reference is not 0")
    got = student.grpo_grad(policy, ref, groups, cfg)
    what = grad_call(policy, ref, groups, cfg) + "\n  vs the same with every advantage 0"
    expect_close(got, g_zero, what, rel=1e-9, abs=1e-12)
    got = student.grpo_grad(policy, ref, groups, twice)
    what = grad_call(policy, ref, groups, twice) + f"\n  vs twice the gradient at beta={beta!r}"
    expect_close(got, scaled(g_zero, 2.0), what, rel=1e-9, abs=1e-12)


LONG = (2, 3, 3)  # policies with T = 3: responses of 1, 2 and 3 tokens


@st.composite
def free_response(draw, policy, length):
    """(q, A, shifts): a response of `length` tokens with a nonzero advantage, and per token the log-ratio
    log pi - log pi_old, within 0.05 of 0 (every ratio inside any clip in play)."""
    q = tuple(draw(st.integers(0, policy.V - 1)) for _ in range(length))
    a = draw(st.sampled_from([1.0, -1.0])) * draw(st.floats(0.1, 2.0))
    return q, a, [draw(st.floats(-0.05, 0.05)) for _ in q]


def logp_old(policy, s, q, shifts):
    return [policy.logp_tok(s, t, v) - d for (t, v), d in zip(enumerate(q), shifts, strict=True)]


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("grpo_grad.length_norm")
@given(
    data=st.data(),
    theta=thetas(-2.0, 2.0, *LONG),
    ref_theta=thetas(-2.0, 2.0, *LONG),
    beta=st.sampled_from([0.0, 0.04, 0.3]),
    short=st.sampled_from([1, 2]),
)
def test_grpo_grad_weights_each_response_by_its_length(student, lab, data, theta, ref_theta, beta, short):
    """With length_norm every token of a response weighs 1/len(q), its own length (a response may be
    shorter than T): a response alone gives the gradient without length_norm divided by its length, and in
    a group of responses of different lengths each one is scaled by its own length."""
    policy, ref = lab.TabPolicy(*LONG, theta), lab.TabPolicy(*LONG, ref_theta)
    s = data.draw(st.integers(0, LONG[0] - 1))
    responses = [data.draw(free_response(policy, n)) for n in (short, LONG[1])]
    norm, plain = lab.GRPOConfig(beta=beta), lab.GRPOConfig(beta=beta, length_norm=False)
    for q, a, shifts in responses:
        alone = [lab.Group(s, [q], [0.0], [a], [logp_old(policy, s, q, shifts)])]
        g_plain = student.grpo_grad(policy, ref, alone, plain)
        expect_true(nonzero(g_plain), grad_call(policy, ref, alone, plain), f"got {g_plain}: expected signal")
        got = student.grpo_grad(policy, ref, alone, norm)
        what = grad_call(policy, ref, alone, norm) + f"\n  vs 1/{len(q)} x the same without length_norm"
        expect_close(got, scaled(g_plain, 1 / len(q)), what, rel=1e-9, abs=1e-12)
    # Both in one group, surrogate only: length_norm is the same as dividing each advantage by its length.
    seqs = [q for q, _, _ in responses]
    lpos = [logp_old(policy, s, q, shifts) for q, _, shifts in responses]
    together = lab.Group(s, seqs, [0.0, 0.0], [a for _, a, _ in responses], lpos)
    each = lab.Group(s, seqs, [0.0, 0.0], [a / len(q) for q, a, _ in responses], lpos)
    norm, plain = lab.GRPOConfig(beta=0.0), lab.GRPOConfig(beta=0.0, length_norm=False)
    got = student.grpo_grad(policy, ref, [together], norm)
    want = student.grpo_grad(policy, ref, [each], plain)
    what = grad_call(policy, ref, [together], norm) + (
        "\n  vs the same without length_norm and each advantage divided by its response's length"
    )
    expect_close(got, want, what, rel=1e-9, abs=1e-12)


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("grpo_grad.group_mean")
@given(
    data=st.data(),
    theta=thetas(-2.0, 2.0),
    ref_theta=thetas(-2.0, 2.0),
    sizes=st.sampled_from([(1, 3), (2, 1), (3, 2), (1, 2)]),
    length_norm=st.booleans(),
)
def test_grpo_grad_is_a_mean_over_responses_then_groups(
    student, lab, reference, data, theta, ref_theta, sizes, length_norm
):
    """Each token's term is divided by its group's size times the number of groups (surrogate only): a
    response with advantage 0 joining a group of k scales it by k / (k + 1), and a second group, of
    another size, whose advantages are all 0 halves it."""
    policy, ref = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, ref_theta)
    k, m = sizes
    s, s2 = data.draw(st.integers(0, S - 1)), data.draw(st.integers(0, S - 1))
    responses = [data.draw(free_response(policy, T)) for _ in range(k + m + 1)]

    def group(state, rs, zero):
        adv = [0.0 if zero else a for _, a, _ in rs]
        return lab.Group(
            state,
            [q for q, _, _ in rs],
            [0.0] * len(rs),
            adv,
            [logp_old(policy, state, q, d) for q, _, d in rs],
        )

    cfg = lab.GRPOConfig(beta=0.0, length_norm=length_norm)
    first = group(s, responses[:k], False)
    g = student.grpo_grad(policy, ref, [first], cfg)
    expect_close(g, reference.grpo_grad(policy, ref, [first], cfg), grad_call(policy, ref, [first], cfg))
    silent = group(s, responses[k : k + 1], True)
    joined = lab.Group(
        s, first.seqs + silent.seqs, [0.0] * (k + 1), first.adv + [0.0], first.logp_old + silent.logp_old
    )
    what = (
        grad_call(policy, ref, [joined], cfg)
        + f"\n  vs {k}/{k + 1} x the gradient of its first {k} responses"
    )
    expect_close(
        student.grpo_grad(policy, ref, [joined], cfg), scaled(g, k / (k + 1)), what, rel=1e-9, abs=1e-12
    )
    other = group(s2, responses[k + 1 :], True)
    what = grad_call(policy, ref, [first, other], cfg) + "\n  vs 1/2 x the gradient of its first group alone"
    expect_close(
        student.grpo_grad(policy, ref, [first, other], cfg), scaled(g, 0.5), what, rel=1e-9, abs=1e-12
    )


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("grpo_grad.advantages_as_given")
@given(
    data=st.data(),
    theta=thetas(-2.0, 2.0),
    ref_theta=thetas(-2.0, 2.0),
    rewards=st.sampled_from(["equal", "random"]),
    std_norm=st.booleans(),
)
def test_grpo_grad_uses_the_advantages_as_given(
    student, lab, reference, data, theta, ref_theta, rewards, std_norm
):
    """The advantages are gr.adv as given: other rewards and the other std_norm change nothing, and twice
    the advantages give twice the (surrogate) gradient."""
    policy, ref = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, ref_theta)
    s = data.draw(st.integers(0, S - 1))
    responses = [data.draw(free_response(policy, T)) for _ in range(data.draw(st.integers(2, 4)))]
    n = len(responses)
    seqs, adv = [q for q, _, _ in responses], [a for _, a, _ in responses]
    lpos = [logp_old(policy, s, q, d) for q, _, d in responses]
    mine = (
        [1.0] * n if rewards == "equal" else [data.draw(st.sampled_from([0.0, 1.0, 0.5])) for _ in range(n)]
    )
    theirs = [0.0, 1.0] + [0.0] * (n - 2)
    cfg = lab.GRPOConfig(beta=0.0, std_norm=std_norm)
    other = lab.GRPOConfig(beta=0.0, std_norm=not std_norm)
    groups = [lab.Group(s, seqs, mine, adv, lpos)]
    g = student.grpo_grad(policy, ref, groups, cfg)
    expect_close(g, reference.grpo_grad(policy, ref, groups, cfg), grad_call(policy, ref, groups, cfg))
    moved = [lab.Group(s, seqs, theirs, adv, lpos)]
    what = grad_call(policy, ref, moved, other) + "\n  vs the same with other rewards and std_norm"
    expect_close(student.grpo_grad(policy, ref, moved, other), g, what, rel=1e-9, abs=1e-12)
    doubled = [lab.Group(s, seqs, mine, [2 * a for a in adv], lpos)]
    what = grad_call(policy, ref, doubled, cfg) + "\n  vs twice the gradient with half these advantages"
    expect_close(student.grpo_grad(policy, ref, doubled, cfg), scaled(g, 2.0), what, rel=1e-9, abs=1e-12)


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


SURROGATE, KL_TERM = pytest.mark.promise("grpo_grad.surrogate"), pytest.mark.promise("grpo_grad.kl_term")
WHOLE = pytest.mark.promise("grpo_grad.formula")
COLLECTED = [
    pytest.param(dict(beta=0.0, clip=0.05, std_norm=False), False, marks=SURROGATE),
    pytest.param(dict(), False, marks=WHOLE),  # the default config: beta 0.04 beside the advantages
    pytest.param(dict(beta=0.5, length_norm=False), False, marks=WHOLE),
    pytest.param(dict(beta=0.2, std_norm=False), False, marks=WHOLE),
    pytest.param(dict(beta=0.5, length_norm=False), True, marks=KL_TERM),
]


@pytest.mark.parametrize("seed", [1, 4, 7], ids=opaque(3, "run"))
@pytest.mark.parametrize("kw, kl_only", COLLECTED, ids=opaque(len(COLLECTED), "config"))
def test_grpo_grad_matches_reference_on_collected_groups(student, lab, reference, seed, kw, kl_only):
    """grpo_grad matches the reference on groups collected from a trained policy: the whole gradient
    (beta > 0 beside the advantages), its surrogate with beta = 0, its KL term with every advantage 0."""
    cfg = lab.GRPOConfig(group=4, prompts=3, **kw)
    policy, ref, groups = trained_case(lab, reference, seed, cfg)
    if kl_only:
        groups = with_adv(lab, groups, lambda gr: [0.0] * len(gr.seqs))
    assert margin(policy, groups, cfg.clip) > 1e-6, "test input too close to a clip boundary"
    want = reference.grpo_grad(policy, ref, groups, cfg)
    assert nonzero(want), "test input without signal (every group's rewards equal)"
    got = student.grpo_grad(policy, ref, groups, cfg)
    expect_close(got, want, grad_call(policy, ref, groups, cfg), rel=1e-9, abs=1e-12)


@settings(max_examples=3)  # several calls per example, each answer checked against the others
@pytest.mark.promise("grpo_grad.unchanged")
@given(
    data=st.data(), theta=thetas(-2.0, 2.0), ref_theta=thetas(-2.0, 2.0), beta=st.sampled_from([0.0, 0.04])
)
def test_grpo_grad_changes_no_argument(student, lab, data, theta, ref_theta, beta):
    """grpo_grad changes no argument: not the policy, the reference, the groups (their advantages and old
    log-probabilities) or the config. (A group of one state moves that state's rows, not the other's.)"""
    policy, ref = lab.TabPolicy(S, T, V, theta), lab.TabPolicy(S, T, V, ref_theta)
    cfg = lab.GRPOConfig(beta=beta)
    for s in range(S):
        responses = [data.draw(free_response(policy, n)) for n in (1, T)]
        seqs, adv = [q for q, _, _ in responses], [a for _, a, _ in responses]
        groups = [lab.Group(s, seqs, [0.0, 0.0], adv, [logp_old(policy, s, q, d) for q, _, d in responses])]
        before = repr((policy.theta, ref.theta, groups, cfg))
        g = student.grpo_grad(policy, ref, groups, cfg)
        what = grad_call(policy, ref, groups, cfg)
        expect_true(not student.last_changed, what, f"the call changed its arguments {student.last_changed}")
        expect_true(
            repr((policy.theta, ref.theta, groups, cfg)) == before, what, "the call changed its arguments"
        )
        expect_one_state(g, s, what)
