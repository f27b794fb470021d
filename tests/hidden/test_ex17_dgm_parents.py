"""Exercise 17 (DGM parents), hidden checks: dgm_weights against its formula and the reference, and
choose_parent against the reference (result and rng state) and as a sampler."""

import math
import random

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from grader.expect import call, expect_close, expect_equal, expect_pinned, expect_true

pytestmark = pytest.mark.exercise(17)

FEATURES = ("edit_tool", "view_tool", "retry", "planner", "test_runner", "memory_notes")
score = st.one_of(st.sampled_from([0.0, 0.2, 0.25, 0.5, 0.7, 0.9, 1.0]), st.floats(0.0, 1.0))
lam = st.floats(0.0, 30.0)
alpha0 = st.floats(0.0, 1.0)
seed = st.integers(0, 2**32 - 1)


@st.composite
def archives(draw, min_size=1, max_size=8, parents="earlier"):
    """Archives of variants with distinct ids (not always their positions, and past 8 ids now and then).
    Each parent is None or, by `parents`: "earlier", an earlier variant's id; "anywhere", another
    variant's id (a child may stand before its parent); "unknown", also an id outside the archive;
    "none", always None (no variant has a child)."""
    n = draw(st.integers(min_size, max_size))
    ids = draw(
        st.one_of(st.just(list(range(n))), st.lists(st.integers(0, 30), min_size=n, max_size=n, unique=True))
    )
    out = []
    for k, i in enumerate(ids):
        choices = {
            "earlier": ids[:k],
            "anywhere": [j for j in ids if j != i],
            "unknown": [j for j in ids if j != i] + [99, 100],
            "none": [],
        }[parents]
        parent = draw(st.one_of(st.none(), st.sampled_from(choices))) if choices else None
        features = frozenset(draw(st.lists(st.sampled_from(FEATURES), max_size=3)))
        out.append((i, features, draw(score), parent))
    return out


def build(lab, rows):
    return [lab.AgentVariant(*row) for row in rows]


def _pin(student, reference):
    """The dgm_weights properties below hold for zeros too, so each also asks for some work, and only that:
    a childless variant scoring alpha0 weighs sigmoid(0) = 0.5 (true of every formula that gets the
    sigmoid's middle right, whatever it does with children, ids or lam)."""
    archive = build(reference, [(0, frozenset(), 0.5, None)])
    twins = build(reference, [(0, frozenset(), 0.5, None), (4, frozenset({"retry"}), 0.5, None)])
    expect_pinned(student, reference, "dgm_weights", (archive,), (twins,), rel=1e-12, abs=0.0)


def formula(archive, lam=10.0, alpha0=0.5):
    out = []
    for a in archive:
        children = sum(1 for b in archive if b.parent == a.id)
        out.append(1.0 / (1.0 + math.exp(-lam * (a.score - alpha0))) / (1 + children))
    return out


def own_weights(student, reference, archive):
    """The weights choose_parent's dgm mode draws with: the submission's dgm_weights (a mistake there is
    dgm_weights's, not choose_parent's), or the reference's where those are no weights (not a list of
    non-negative numbers, one per variant, with a positive sum)."""
    try:
        w = student.dgm_weights(archive)
        ok = (
            isinstance(w, list)
            and len(w) == len(archive)
            and all(isinstance(x, int | float) and x >= 0 for x in w)
            and 0 < sum(w) < math.inf
        )
    except Exception:  # noqa: BLE001 - no weights from the submission: the reference's stand in
        ok = False
    return w if ok else reference.dgm_weights(archive)


def rng_text(s):
    return f"random.Random({s})"


# -- dgm_weights -----------------------------------------------------------------------------------------


@pytest.mark.promise("dgm_weights.children_discount")
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


@pytest.mark.promise("dgm_weights.sigmoid")
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


@pytest.mark.promise("dgm_weights.new_list_in_order")
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


@pytest.mark.promise("dgm_weights.children_discount")
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


@pytest.mark.promise("dgm_weights.sigmoid")
@given(archives(parents="none"), lam, alpha0)
@example([(0, frozenset(), 0.5, None)], 10.0, 0.5)  # score == alpha0: sigmoid(0) = 0.5
@example([(3, frozenset(), 0.0, None), (1, frozenset(), 1.0, None)], 30.0, 0.0)
def test_childless_weights_are_the_sigmoid(student, lab, rows, lam, alpha0):
    """A variant without children weighs sigmoid(lam (score - alpha0)), lam and alpha0 given by keyword."""
    archive = build(lab, rows)
    want = [1.0 / (1.0 + math.exp(-lam * (a.score - alpha0))) for a in archive]
    expect_close(
        student.dgm_weights(archive, lam=lam, alpha0=alpha0),
        want,
        call("dgm_weights", archive, lam=lam, alpha0=alpha0),
        rel=1e-9,
        abs=0.0,
    )


# A child listed before its parent, and the children of the variant with id 0.
CHILD_FIRST = [
    (2, frozenset({"retry"}), 0.3, 0),
    (0, frozenset(), 0.2, None),
    (5, frozenset({"edit_tool"}), 0.28, 0),
    (7, frozenset({"planner"}), 0.6, 5),
]


@pytest.mark.promise("dgm_weights.children_by_id")
@given(archives(min_size=2, parents="anywhere"), st.data())
@example(CHILD_FIRST, None)
def test_children_are_counted_by_id_wherever_they_stand(student, lab, rows, data):
    """n_i counts the variants whose parent is variant i's id, before or after it in the archive."""
    archive = build(lab, rows)
    if data is not None:  # the archive in another order: children often before their parents
        archive = [archive[i] for i in data.draw(st.permutations(range(len(archive))))]
    expect_close(
        student.dgm_weights(archive), formula(archive), call("dgm_weights", archive), rel=1e-9, abs=0.0
    )


@pytest.mark.promise("dgm_weights.unknown_parent")
@given(archives(parents="unknown"), st.data())
@example([(0, frozenset(), 0.2, None), (1, frozenset({"retry"}), 0.6, 42)], None)
def test_an_unknown_parent_counts_for_nobody(student, lab, rows, data):
    """A parent id that is no variant's counts for nobody: the weights are the formula's, no error."""
    archive = build(lab, rows)
    if data is not None:  # one more variant whose parent is outside the archive
        orphan = data.draw(st.integers(31, 98))
        archive.append(lab.AgentVariant(200, frozenset({"planner"}), data.draw(score), orphan))
    expect_close(
        student.dgm_weights(archive), formula(archive), call("dgm_weights", archive), rel=1e-9, abs=0.0
    )


@pytest.mark.promise("dgm_weights.archive_unchanged")
@given(archives())
def test_the_archive_is_not_changed(student, reference, lab, rows):
    """dgm_weights leaves the archive as it was (same variants, same order)."""
    _pin(student, reference)
    archive = build(lab, rows)
    before = list(archive)
    student.dgm_weights(archive)
    expect_true(
        archive == before and not student.last_changed,
        f"{call('dgm_weights', before)} changed the archive",
        "the archive after the call differs from the one given",
    )


# -- choose_parent --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "mode",
    [
        pytest.param("dgm", marks=pytest.mark.promise("choose_parent.dgm_draw")),
        pytest.param("uniform", marks=pytest.mark.promise("choose_parent.uniform_draw")),
        pytest.param("greedy", marks=pytest.mark.promise("choose_parent.greedy_no_draw")),
    ],
)
@given(archives(min_size=2), seed)
def test_choice_and_rng_state_match_the_reference(student, reference, lab, mode, rows, s):
    """choose_parent picks the reference's parent and leaves the rng in the reference's state."""
    archive = build(lab, rows)
    mine, theirs = random.Random(s), random.Random(s)
    what = call("choose_parent", archive, rng_text(s), mode)
    got = student.choose_parent(archive, mine, mode)
    if mode == "dgm":  # the draw with the submission's own dgm_weights: a mistake there costs points once
        want = theirs.choices(archive, own_weights(student, reference, archive))[0]
    else:
        want = reference.choose_parent(archive, theirs, mode)
    if mode == "greedy":  # here only that it takes a best score and draws nothing (ties: a check of its own)
        expect_true(
            got in archive and got.score == want.score,
            f"{what} should return a variant with the best score, {want.score!r}",
            f"got {got!r}",
        )
    else:
        expect_equal(got, want, what)
    expect_true(
        mine.getstate() == theirs.getstate(),
        f"the rng state after {what} differs from the reference's",
        f"next random(): expected {theirs.random()!r}, got {mine.random()!r}",
    )


@pytest.mark.promise("choose_parent.single_variant")
@given(archives(min_size=1, max_size=1), seed)
def test_a_one_variant_archive_still_makes_the_draw(student, reference, lab, rows, s):
    """With one variant every mode returns it, and dgm and uniform still make their one draw."""
    archive = build(lab, rows)
    for mode in ("dgm", "uniform", "greedy"):
        mine, theirs = random.Random(s), random.Random(s)
        what = call("choose_parent", archive, rng_text(s), mode)
        expect_equal(student.choose_parent(archive, mine, mode), archive[0], what)
        reference.choose_parent(archive, theirs, mode)
        expect_true(
            mine.getstate() == theirs.getstate(),
            f"the rng state after {what} differs from the reference's (the mode's draw is made)",
            f"next random(): expected {theirs.random()!r}, got {mine.random()!r}",
        )


@st.composite
def distinct_scores(draw):
    """Archives whose scores all differ (no tie)."""
    rows = draw(archives())
    scores = draw(st.lists(score, min_size=len(rows), max_size=len(rows), unique=True))
    return [(i, f, sc, parent) for (i, f, _, parent), sc in zip(rows, scores, strict=True)]


@pytest.mark.promise("choose_parent.greedy_best")
@given(distinct_scores())
def test_greedy_takes_the_best_score(student, lab, rows):
    """Greedy returns the variant with the best score."""
    archive = build(lab, rows)
    got = student.choose_parent(archive, random.Random(0), "greedy")
    want = max(archive, key=lambda a: a.score)
    expect_equal(got, want, call("choose_parent", archive, rng_text(0), "greedy"))


@st.composite
def tied_archives(draw):
    """Archives where several variants share the best score, their ids in any order."""
    rows = draw(archives(min_size=2))
    best = draw(st.sampled_from([0.5, 0.7, 1.0]))
    tied = draw(st.lists(st.sampled_from(range(len(rows))), min_size=2, unique=True))
    return [
        (i, f, best if k in tied else min(sc, best - 0.1), parent)
        for k, (i, f, sc, parent) in enumerate(rows)
    ]


@pytest.mark.promise("choose_parent.greedy_tie_highest_id")
@given(tied_archives())
@example([(5, frozenset(), 0.7, None), (2, frozenset({"retry"}), 0.7, 5), (0, frozenset(), 0.2, None)])
def test_greedy_takes_the_best_score_and_then_the_highest_id(student, lab, rows):
    """Greedy returns a variant of the archive with the best score, the highest id among ties."""
    archive = build(lab, rows)
    got = student.choose_parent(archive, random.Random(0), "greedy")
    best = max(a.score for a in archive)
    want = max(a.id for a in archive if a.score == best)
    expect_equal(
        got, next(a for a in archive if a.id == want), call("choose_parent", archive, rng_text(0), "greedy")
    )


@pytest.mark.promise("choose_parent.unknown_mode")
@given(st.text(max_size=8).filter(lambda m: m not in ("dgm", "greedy", "uniform")), seed)
@example("DGM", 0)  # the names are case-sensitive
@example("Greedy", 1)
@example("uniform ", 2)  # a trailing space is another name
@example("", 3)
def test_an_unknown_mode_raises_value_error(student, lab, mode, s):
    """An unknown mode raises ValueError: another spelling or case of a mode's name, the empty string."""
    archive = build(lab, [(0, frozenset(), 0.2, None), (1, frozenset({"retry"}), 0.25, 0)])
    with pytest.raises(ValueError):
        student.choose_parent(archive, random.Random(s), mode)


@pytest.mark.promise("choose_parent.dgm_draw")
def test_dgm_draws_follow_the_normalised_weights(student, reference, lab):
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
    weights = own_weights(student, reference, archive)
    probs = [w / sum(weights) for w in weights]
    rng, n = random.Random(2), 120
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
