"""Exercise 14, SFT from filtered rollouts: `sft_grad` and `filter_rollouts`.

`sft_grad` is the gradient of the mean token log-likelihood: every token v of every (s, seq) in the data
adds (onehot(v) - probs(s, t)) / (len(data) * len(seq)). `filter_rollouts` is rejection sampling: keep
the (s, seq) of each (s, seq, R) whose reward R >= min_reward, in their order.
"""

import pytest

from grader.expect import call, expect_close, expect_equal

pytestmark = pytest.mark.exercise(14)

THETA = [[[0.5, -0.2, 0.1], [0.0, 1.0, -1.0]], [[-0.3, 0.4, 0.0], [0.2, 0.2, -0.6]]]
LOG3 = 1.0986122886681098  # log(3)


def policy_text(p):
    return f"TabPolicy({p.S}, {p.T}, {p.V}, theta={p.theta!r})"


def grad_call(policy, data):
    return f"sft_grad({policy_text(policy)}, {data!r})"


# ---- sft_grad -----------------------------------------------------------------------------------------


@pytest.mark.promise("sft_grad.formula")
def test_sft_grad_uniform_policy(student, lab):
    """Two responses of two tokens: weight 1/4 per token. Position 0 sees token 1 twice:
    2/4 * ([0, 1, 0] - 1/3); position 1 sees tokens 2 and 0: 1/4 * ([1, 0, 1] - 2/3). State 1 has no data."""
    policy = lab.TabPolicy(2, 2, 3)
    data = [(0, (1, 2)), (0, (1, 0))]
    want = [[[-1 / 6, 1 / 3, -1 / 6], [1 / 12, -1 / 6, 1 / 12]], [[0.0] * 3, [0.0] * 3]]
    expect_close(student.sft_grad(policy, data), want, grad_call(policy, data), abs=1e-12)
    data = [(1, (0, 2))]  # one response in state 1: weight 1/2 per token
    want = [[[0.0] * 3, [0.0] * 3], [[1 / 3, -1 / 6, -1 / 6], [-1 / 6, -1 / 6, 1 / 3]]]
    expect_close(student.sft_grad(policy, data), want, grad_call(policy, data), abs=1e-12)


@pytest.mark.promise("sft_grad.formula")
def test_sft_grad_one_response(student, lab):
    """One response, weight 1/2 per token: g[0][t] = (onehot(seq[t]) - probs(0, t)) / 2."""
    policy = lab.TabPolicy(2, 2, 3, [[row[:] for row in block] for block in THETA])
    data = [(0, (0, 1))]
    want = [
        [
            [0.26925618830563713, -0.11458398582823295, -0.15467220247740418],
            [-0.12236423552739882, 0.1673795221125891, -0.04501528658519023],
        ],
        [[0.0] * 3, [0.0] * 3],
    ]
    expect_close(student.sft_grad(policy, data), want, grad_call(policy, data), abs=1e-12)


@pytest.mark.promise("sft_grad.formula")
def test_sft_grad_three_responses(student, lab):
    """Three responses over both states, weight 1/6 per token."""
    policy = lab.TabPolicy(2, 2, 3, [[row[:] for row in block] for block in THETA])
    data = [(0, (0, 1)), (1, (2, 0)), (0, (0, 2))]
    want = [
        [
            [0.1795041255370914, -0.07638932388548864, -0.10311480165160278],
            [-0.08157615701826587, -0.05508031859160725, 0.13665647560987318],
        ],
        [
            [-0.03819466194274432, -0.07691460389812094, 0.11510926584086525],
            [0.09862081855547344, -0.06804584811119321, -0.030574970444280244],
        ],
    ]
    expect_close(student.sft_grad(policy, data), want, grad_call(policy, data), abs=1e-12)


@pytest.mark.promise("sft_grad.formula")
def test_sft_grad_vanishes_at_the_data_frequencies(student, lab):
    """probs = [1/4, 3/4] (logits [0, log 3]) and the data has token 1 three times in four: the policy
    already fits the data, the gradient is 0."""
    policy = lab.TabPolicy(1, 1, 2, [[[0.0, LOG3]]])
    data = [(0, (1,)), (0, (0,)), (0, (1,)), (0, (1,))]
    expect_close(student.sft_grad(policy, data), [[[0.0, 0.0]]], grad_call(policy, data), abs=1e-12)
    data = [(0, (1,)), (0, (0,))]  # token 1 in half of the data: the gradient pushes token 0 up by 1/4
    expect_close(student.sft_grad(policy, data), [[[0.25, -0.25]]], grad_call(policy, data), abs=1e-12)


@pytest.mark.promise("sft_grad.per_response_weight")
def test_sft_grad_responses_of_different_lengths(student, lab):
    """A response may be shorter than T. Each response's tokens share 1 / len(data): the one-token
    response's token weighs 1/2, each token of the two-token one 1/4. Position 0 sees token 1 with 3/4 in
    all: 3/4 * ([0, 1, 0] - 1/3); position 1 sees token 2 with 1/4: 1/4 * ([0, 0, 1] - 1/3)."""
    policy = lab.TabPolicy(2, 2, 3)
    data = [(0, (1,)), (0, (1, 2))]
    want = [[[-1 / 4, 1 / 2, -1 / 4], [-1 / 12, -1 / 12, 1 / 6]], [[0.0] * 3, [0.0] * 3]]
    expect_close(student.sft_grad(policy, data), want, grad_call(policy, data), abs=1e-12)


# ---- filter_rollouts ----------------------------------------------------------------------------------

ROLLOUTS = [
    (0, (1, 2), 1.0),
    (1, (0, 0), 0.0),
    (2, (2, 1), 1.0),
    (0, (0, 1), 0.5),
    (1, (1, 1), 2.0),
    (0, (1, 2), 1.0),
]


def pairs(got):
    """The kept pairs as tuples (a student may build them as lists)."""
    try:
        return [tuple(p) for p in got]
    except TypeError:
        return got


@pytest.mark.promise("filter_rollouts.default_threshold")
def test_filter_rollouts_default_keeps_reward_one(student):
    """Default min_reward = 1.0: R = 1.0 passes (>=), R = 2.0 too, R = 0.5 and 0.0 do not; R is dropped.
    A response that passes twice is kept twice (each is a training example)."""
    got = student.filter_rollouts(ROLLOUTS)
    want = [(0, (1, 2)), (2, (2, 1)), (1, (1, 1)), (0, (1, 2))]
    expect_equal(pairs(got), want, call("filter_rollouts", ROLLOUTS))
    got = student.filter_rollouts(ROLLOUTS[1:4])
    expect_equal(pairs(got), [(2, (2, 1))], call("filter_rollouts", ROLLOUTS[1:4]))


@pytest.mark.promise("filter_rollouts.threshold")
def test_filter_rollouts_lower_threshold_keeps_the_boundary(student):
    """min_reward = 0.5: the rollout with R = 0.5 is kept, in its place."""
    got = student.filter_rollouts(ROLLOUTS, 0.5)
    want = [(0, (1, 2)), (2, (2, 1)), (0, (0, 1)), (1, (1, 1)), (0, (1, 2))]
    expect_equal(pairs(got), want, call("filter_rollouts", ROLLOUTS, 0.5))


@pytest.mark.promise("filter_rollouts.threshold")
def test_filter_rollouts_zero_threshold_keeps_everything(student):
    """min_reward = 0.0 keeps everything, the rollout with reward 0.0 too."""
    got = student.filter_rollouts(ROLLOUTS, min_reward=0.0)
    want = [(s, seq) for s, seq, _ in ROLLOUTS]
    expect_equal(pairs(got), want, call("filter_rollouts", ROLLOUTS, min_reward=0.0))


@pytest.mark.promise("filter_rollouts.empty")
def test_filter_rollouts_can_keep_nothing(student):
    """min_reward = 3.0 keeps nothing, and no rollouts give nothing: an empty list."""
    expect_equal(
        pairs(student.filter_rollouts(ROLLOUTS, min_reward=3.0)), [], call("filter_rollouts", ROLLOUTS, 3.0)
    )
    expect_equal(pairs(student.filter_rollouts([])), [], call("filter_rollouts", []))
    some = [(2, (2, 1), 1.0), (3, (0, 2), 0.5)]  # and not always: R = 1.0 passes 0.75
    expect_equal(
        pairs(student.filter_rollouts(some, 0.75)), [(2, (2, 1))], call("filter_rollouts", some, 0.75)
    )
