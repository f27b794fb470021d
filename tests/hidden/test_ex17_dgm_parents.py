"""Exercise 17 (DGM parents), hidden checks: dgm_weights against its formula and the reference, and
choose_parent against the reference (result and rng state) and as a sampler."""

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_equal, expect_pinned, expect_true

pytestmark = pytest.mark.exercise(17)

FEATURES = ("edit_tool", "view_tool", "retry", "planner", "test_runner", "memory_notes")
score = st.one_of(st.sampled_from([0.0, 0.2, 0.25, 0.5, 0.7, 0.9, 1.0]), st.floats(0.0, 1.0))
lam = st.floats(0.0, 30.0)
alpha0 = st.floats(0.0, 1.0)
seed = st.integers(0, 2**32 - 1)


@st.composite
def archives(draw, min_size=1, max_size=8):
    """Archives of variants with distinct ids (not always their positions) whose parents are earlier ids,
    an id outside the archive, or None."""
    n = draw(st.integers(min_size, max_size))
    ids = draw(
        st.one_of(st.just(list(range(n))), st.lists(st.integers(0, 30), min_size=n, max_size=n, unique=True))
    )
    out = []
    for k, i in enumerate(ids):
        parent = draw(st.one_of(st.none(), st.sampled_from(ids[:k] + [99]))) if k else None
        features = frozenset(draw(st.lists(st.sampled_from(FEATURES), max_size=3)))
        out.append((i, features, draw(score), parent))
    return out


def build(lab, rows):
    return [lab.AgentVariant(*row) for row in rows]


def _pin(student, reference):
    """Each dgm_weights property below also pins two archives' weights: zeros satisfy them."""
    rows = [
        (0, frozenset({"edit_tool"}), 0.2, None),
        (1, frozenset({"retry"}), 0.6, 0),
        (2, frozenset(), 0.9, 1),
    ]
    archive = build(reference, rows)
    expect_pinned(student, reference, "dgm_weights", (archive,), (archive[:2], 4.0, 0.3), rel=1e-12, abs=0.0)


def formula(archive, lam=10.0, alpha0=0.5):
    out = []
    for a in archive:
        children = sum(1 for b in archive if b.parent == a.id)
        out.append(1.0 / (1.0 + math.exp(-lam * (a.score - alpha0))) / (1 + children))
    return out


def rng_text(s):
    return f"random.Random({s})"


# -- dgm_weights -----------------------------------------------------------------------------------------


@given(archives(), lam, alpha0)
def test_weights_follow_the_formula(student, lab, rows, lam, alpha0):
    """Each weight is sigmoid(lam (score - alpha0)) / (1 + number of archived children), in archive order."""
    archive = build(lab, rows)
    expect_close(
        student.dgm_weights(archive, lam, alpha0),
        formula(archive, lam, alpha0),
        call("dgm_weights", archive, lam, alpha0),
        rel=1e-9,
        abs=0.0,
    )


@given(archives(), lam, alpha0)
def test_weights_match_the_reference(student, reference, lab, rows, lam, alpha0):
    """The weights are the reference's, with the default lam and alpha0 and with them given by keyword."""
    archive = build(lab, rows)
    expect_close(
        student.dgm_weights(archive),
        reference.dgm_weights(archive),
        call("dgm_weights", archive),
        rel=1e-9,
        abs=0.0,
    )
    expect_close(
        student.dgm_weights(archive, alpha0=alpha0, lam=lam),
        reference.dgm_weights(archive, lam=lam, alpha0=alpha0),
        call("dgm_weights", archive, alpha0=alpha0, lam=lam),
        rel=1e-9,
        abs=0.0,
    )


@given(archives(), st.data())
def test_weights_follow_the_archive_order(student, reference, lab, rows, data):
    """Reordering the archive reorders the weights the same way (one weight per variant)."""
    _pin(student, reference)
    archive = build(lab, rows)
    order = data.draw(st.permutations(range(len(archive))))
    shuffled = [archive[i] for i in order]
    base = student.dgm_weights(archive)
    expect_equal(len(base), len(archive), f"len({call('dgm_weights', archive)})")
    expect_close(
        student.dgm_weights(shuffled),
        [base[i] for i in order],
        call("dgm_weights", shuffled),
        rel=1e-12,
        abs=0.0,
    )


@given(archives(max_size=6), st.data())
def test_a_first_child_halves_the_weight(student, reference, lab, rows, data):
    """When a variant without children gets its first child, its weight halves and the others stay."""
    _pin(student, reference)
    archive = build(lab, rows)
    childless = [k for k, a in enumerate(archive) if not any(b.parent == a.id for b in archive)]
    k = data.draw(st.sampled_from(childless))
    new_id = max(max(a.id for a in archive), 99) + 1
    child = lab.AgentVariant(new_id, frozenset({"retry"}), data.draw(score), archive[k].id)
    before = student.dgm_weights(archive)
    after = student.dgm_weights(archive + [child])
    want = [w / 2 if i == k else w for i, w in enumerate(before)]
    expect_close(after[:-1], want, call("dgm_weights", archive + [child]), rel=1e-12, abs=0.0)


# -- choose_parent --------------------------------------------------------------------------------------


@given(archives(), seed, st.sampled_from(["dgm", "greedy", "uniform"]))
def test_choice_and_rng_state_match_the_reference(student, reference, lab, rows, s, mode):
    """choose_parent picks the reference's parent and leaves the rng in the reference's state."""
    archive = build(lab, rows)
    mine, theirs = random.Random(s), random.Random(s)
    what = call("choose_parent", archive, rng_text(s), mode)
    expect_equal(
        student.choose_parent(archive, mine, mode), reference.choose_parent(archive, theirs, mode), what
    )
    expect_true(
        mine.getstate() == theirs.getstate(),
        f"the rng state after {what} differs from the reference's",
        f"next random(): expected {theirs.random()!r}, got {mine.random()!r}",
    )


@given(archives())
def test_greedy_takes_the_best_score_and_then_the_highest_id(student, lab, rows):
    """Greedy returns a variant of the archive with the best score, the highest id among ties."""
    archive = build(lab, rows)
    got = student.choose_parent(archive, random.Random(0), "greedy")
    best = max(a.score for a in archive)
    want = max(a.id for a in archive if a.score == best)
    expect_equal(
        got, next(a for a in archive if a.id == want), call("choose_parent", archive, rng_text(0), "greedy")
    )


@given(archives(), seed, st.sampled_from(["dgm", "uniform"]))
def test_the_choice_is_a_member_of_the_archive(student, lab, rows, s, mode):
    """Dgm and uniform return a variant of the archive."""
    archive = build(lab, rows)
    got = student.choose_parent(archive, random.Random(s), mode)
    expect_true(
        got in archive,
        f"{call('choose_parent', archive, rng_text(s), mode)} is not in the archive",
        f"got {got!r}",
    )


@given(st.text(max_size=8).filter(lambda m: m not in ("dgm", "greedy", "uniform")), seed)
def test_an_unknown_mode_raises_value_error(student, lab, mode, s):
    """An unknown mode raises ValueError."""
    archive = build(lab, [(0, frozenset(), 0.2, None), (1, frozenset({"retry"}), 0.25, 0)])
    with pytest.raises(ValueError):
        student.choose_parent(archive, random.Random(s), mode)


def test_dgm_draws_follow_the_normalised_weights(student, lab):
    """Over many draws, dgm mode picks each variant about as often as its normalised weight says."""
    archive = build(
        lab,
        [
            (0, frozenset(), 0.2, None),
            (1, frozenset({"edit_tool"}), 0.28, 0),
            (2, frozenset({"view_tool", "planner"}), 0.67, 1),
            (3, frozenset({"retry"}), 0.55, 0),
            (4, frozenset({"planner"}), 0.45, None),
        ],
    )
    weights = formula(archive)
    probs = [w / sum(weights) for w in weights]
    rng, n = random.Random(2), 250
    counts = [0] * len(archive)
    for _ in range(n):
        counts[archive.index(student.choose_parent(archive, rng, "dgm"))] += 1
    freqs = [c / n for c in counts]
    expect_close(
        freqs,
        probs,
        f"frequencies over {n} draws of {call('choose_parent', archive, 'rng', 'dgm')}",
        rel=0.0,
        abs=0.07,
    )
