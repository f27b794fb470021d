"""What the hidden suites share: a central-difference gradient of a function of a policy's logits, how a
policy reads in a failure message, a test-side softmax, theta tables (copies, and hypothesis strategies
for them) and test ids that hide a case's inputs."""

import math

from hypothesis import strategies as st

H = 1e-5  # the central-difference step
S, T, V = 2, 2, 3  # the shape of the policies that `thetas` draws


def central_difference(f, policy, h=H):
    """d f / d theta[s][t][u] for every logit, by (f(theta + h) - f(theta - h)) / 2h; theta is restored."""
    g = [[[0.0] * policy.V for _ in range(policy.T)] for _ in range(policy.S)]
    for s in range(policy.S):
        for t in range(policy.T):
            for u in range(policy.V):
                keep = policy.theta[s][t][u]
                policy.theta[s][t][u] = keep + h
                up = f()
                policy.theta[s][t][u] = keep - h
                down = f()
                policy.theta[s][t][u] = keep
                g[s][t][u] = (up - down) / (2 * h)
    return g


def policy_text(p):
    return f"TabPolicy({p.S}, {p.T}, {p.V}, theta={p.theta!r})"


def softmax(xs):
    m = max(xs)
    es = [math.exp(x - m) for x in xs]
    return [e / math.fsum(es) for e in es]


def copy3(x):
    """A copy of a theta table (or of a gradient table) that shares no list with it."""
    return [[list(row) for row in block] for block in x]


def zeros(s=S, t=T, v=V):
    """An s x t x v table of zeros."""
    return [[[0.0] * v for _ in range(t)] for _ in range(s)]


def shaped(flat, s=S, t=T, v=V):
    """The s x t x v table of the flat list `flat`."""
    return [[[flat[(i * t + j) * v + k] for k in range(v)] for j in range(t)] for i in range(s)]


def thetas(lo, hi, s=S, t=T, v=V):
    """Theta tables of shape s x t x v with every logit in [lo, hi]."""
    return st.lists(st.floats(lo, hi), min_size=s * t * v, max_size=s * t * v).map(
        lambda flat: shaped(flat, s, t, v)
    )


def opaque(n, label):
    """Test ids that name a case without showing its inputs."""
    return [f"{label}{i}" for i in range(1, n + 1)]
