"""Exercise 10: reinforce_grad(policy, batch, baseline="mean", weights=None).

g = sum over samples i of w_i * (R_i - b) * grad log pi(response_i | s_i), with w_i = 1/len(batch) by
default. baseline="mean": b = sum_i w_i * R_i (each sample's own reward included); any other baseline: b = 0.
grad log pi(response | s) adds onehot(v_t) - probs(s, t) at every position t of the response.
"""

import pytest

from grader.expect import call, expect_close

pytestmark = pytest.mark.exercise(10)

THETA = [[[0.0, 0.0], [1.0, -1.0]], [[0.5, 0.0], [0.0, 0.0]], [[0.0, 0.3], [-0.2, 0.0]]]
BATCH = [(0, (0, 1), 1.0), (0, (1, 1), 0.0), (1, (0, 0), 1.0), (0, (0, 0), 0.0)]


def policy(lab):
    return lab.TabPolicy(n_states=3, T=2, V=2, theta=[[row[:] for row in st] for st in THETA])


def zeros():
    return [[[0.0, 0.0], [0.0, 0.0]] for _ in range(3)]


def what(*args, **kw):
    return call("reinforce_grad", f"TabPolicy(n_states=3, T=2, V=2, theta={THETA})", *args, **kw)


@pytest.mark.promise("reinforce_grad.formula")
def test_one_sample_without_baseline(lab, student):
    """One sample, no baseline: R * (onehot - probs) at each position of its state; other states get zeros."""
    batch = [(2, (1, 0), 2.0)]
    got = student.reinforce_grad(policy(lab), batch, "none")
    want = zeros()
    # t = 0: softmax([0, 0.3]) = [0.4256, 0.5744], so 2 * ([0, 1] - p)
    # t = 1: softmax([-0.2, 0]) = [0.4502, 0.5498], so 2 * ([1, 0] - p)
    want[2] = [[-0.851114966376682, 0.8511149663766819], [1.099667994624956, -1.099667994624956]]
    expect_close(got, want, what(batch, "none"), rel=1e-9, abs=1e-12)
    batch = [(1, (0, 1), 3.0)]  # state 1: softmax([0.5, 0]) at t = 0, the uniform [0.5, 0.5] at t = 1
    got = student.reinforce_grad(policy(lab), batch, "none")
    want = zeros()
    want[1] = [[1.132622006394436, -1.1326220063944363], [-1.5, 1.5]]
    expect_close(got, want, what(batch, "none"), rel=1e-9, abs=1e-12)


@pytest.mark.promise("reinforce_grad.formula")
def test_batch_without_baseline(lab, student):
    """Four samples with weight 1/4 each, b = 0: the samples with reward 0 add nothing."""
    got = student.reinforce_grad(policy(lab), BATCH, "none")
    want = [
        [[0.125, -0.125], [-0.22019926949447058, 0.2201992694944706]],
        [[0.09438516719953635, -0.09438516719953637], [0.125, -0.125]],
        [[0.0, 0.0], [0.0, 0.0]],
    ]
    expect_close(got, want, what(BATCH, "none"), rel=1e-9, abs=1e-12)


@pytest.mark.promise("reinforce_grad.mean_baseline")
def test_batch_with_mean_baseline(lab, student):
    """The default baseline is the mean reward, 0.5 here: rewards 1 push up, rewards 0 push down."""
    got = student.reinforce_grad(policy(lab), BATCH)
    want = [
        [[0.0625, -0.0625], [-0.01490036525276471, 0.014900365252764693]],
        [[0.047192583599768176, -0.04719258359976818], [0.0625, -0.0625]],
        [[0.0, 0.0], [0.0, 0.0]],
    ]
    expect_close(got, want, what(BATCH), rel=1e-9, abs=1e-12)


@pytest.mark.promise("reinforce_grad.mean_baseline")
def test_weights_replace_one_over_n(lab, student):
    """weights=[0.5, 0.25, 0.25, 0]: the baseline is the weighted mean 0.75, the sum is weighted too."""
    weights = [0.5, 0.25, 0.25, 0.0]
    got = student.reinforce_grad(policy(lab), BATCH, "mean", weights)
    want = [
        [[0.15625, -0.15625], [0.05504981737361765, -0.055049817373617665]],
        [[0.023596291799884088, -0.02359629179988409], [0.03125, -0.03125]],
        [[0.0, 0.0], [0.0, 0.0]],
    ]
    expect_close(got, want, what(BATCH, "mean", weights), rel=1e-9, abs=1e-12)


@pytest.mark.promise("reinforce_grad.equal_rewards_zero")
def test_equal_rewards_with_mean_baseline_give_zero(lab, student):
    """Every reward equals the mean baseline, so every R - b is 0 and so is the gradient; with the last
    reward 0 instead, the baseline is 2/3 and the gradient is not 0."""
    batch = [(0, (0, 1), 1.0), (1, (1, 1), 1.0), (1, (0, 1), 1.0)]
    got = student.reinforce_grad(policy(lab), batch)
    expect_close(got, zeros(), what(batch), abs=1e-12)
    batch = [(0, (0, 1), 1.0), (1, (1, 1), 1.0), (1, (0, 1), 0.0)]
    want = [
        [[0.05555555555555556, -0.05555555555555556], [-0.09786634199754249, 0.0978663419975425]],
        [[-0.15306007431090504, 0.15306007431090504], [0.055555555555555546, -0.055555555555555546]],
        [[0.0, 0.0], [0.0, 0.0]],
    ]
    expect_close(student.reinforce_grad(policy(lab), batch), want, what(batch), rel=1e-9, abs=1e-12)
