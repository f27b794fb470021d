"""What the hidden gradient checks share: a central-difference gradient of a function of a policy's
logits, and how a policy reads in a failure message."""

H = 1e-5  # the central-difference step


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
