"""Exercise 6 (hidden): Pareto selection, against the reference and by its invariants."""

import random
import weakref

import pytest
from hypothesis import assume, example, given
from hypothesis import strategies as st

from grader.expect import call, expect_equal, expect_form, expect_true

pytestmark = pytest.mark.exercise(6)


LEVELS = (0.0, 0.0, 0.5, 1.0)  # few distinct values: many ties, many all-zero instances


def tables(levels=LEVELS, max_cand=6, max_inst=6):
    """Score tables scores[k][i] with at least one candidate and one instance."""
    return st.integers(1, max_cand).flatmap(
        lambda n: st.integers(1, max_inst).flatmap(
            lambda m: st.lists(
                st.lists(st.sampled_from(levels), min_size=m, max_size=m), min_size=n, max_size=n
            )
        )
    )


# Value checks: negative scores too, and no instance whose best score is 0 (an instance where everyone
# scores 0 is the all_zero_tie edge's, drawn there); no near-ties (the exact_comparison edge's).
SIGNED = (-1.0, -0.5, 0.0, 0.0, 0.5, 1.0)


def _no_zero_best(scores):
    """The table with 0.25 for candidate 0 on every instance whose best score is 0."""
    out = [list(row) for row in scores]
    for i in range(len(out[0])):
        if max(row[i] for row in out) == 0.0:
            out[0][i] = 0.25
    return out


def signed_tables(max_cand=6, max_inst=6):
    return tables(SIGNED, max_cand, max_inst).map(_no_zero_best)


def _solo_table(n_cand, solos):
    """n_cand candidates; candidate k of `solos` wins solos[k] instances alone, the others win nothing."""
    n_inst = sum(solos.values())
    rows = [[0.5] * n_inst for _ in range(n_cand)]
    i = 0
    for k, count in solos.items():
        for _ in range(count):
            rows[k][i] = 1.0
            i += 1
    return rows


def winners(scores):
    n_inst = len(scores[0])
    return [{k for k, row in enumerate(scores) if row[i] == max(r[i] for r in scores)} for i in range(n_inst)]


def front_of(student, scores):
    got = student.pareto_front(scores)
    what = call("pareto_front", scores)
    # "The set of candidates": a list, tuple or set of distinct indices, in any order.
    expect_true(
        isinstance(got, list | tuple | set | frozenset)
        and all(type(k) is int for k in got)
        and len(set(got)) == len(got),
        what,
        f"expected the distinct candidate indices, got {got!r}",
    )
    return sorted(got), what


_WORKS: weakref.WeakSet = weakref.WeakSet()  # the students whose pareto_front passed _works


def _works(student, reference):
    """A guard of the front properties below, which a fixed front, an empty one or every candidate
    satisfies in part: when every candidate wins an instance alone, every candidate survives (two and
    three of them), and a candidate that wins only instances another also wins goes (where no removal
    order matters). A mistake in the removal order costs the checks of the promise it breaks, not these."""
    if student in _WORKS:
        return
    three = [[0.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    for scores, want in (([[1.0, 0.0], [0.0, 1.0]], [0, 1]), (three, [0, 1, 2])):
        got, what = front_of(student, scores)
        expect_true(got == want, what, f"front {got}, but every candidate wins an instance alone")
    # And one that every reading of the removal rule agrees on: candidate 0 wins only what 1 also wins.
    for scores, want in (
        ([[1.0, 0.5], [1.0, 0.7]], [1]),
        ([[0.5, 0.5, 1.0], [1.0, 0.2, 1.0], [0.1, 0.6, -1.0]], [1, 2]),
    ):
        got, what = front_of(student, scores)
        expect_true(got == want, what, f"front {got}, but candidate 0 wins nothing that another does not")
    _WORKS.add(student)


_SELECTS: weakref.WeakSet = weakref.WeakSet()  # the students whose select_candidate passed _works_select


def _works_select(student):
    """A guard of select_candidate's properties below, which a fixed pick satisfies in part: with one
    survivor, that one is drawn (three tables, three different survivors). It pins no draw."""
    if student in _SELECTS:
        return
    for scores, want in (([[1.0], [0.5]], 0), ([[0.5], [1.0]], 1), ([[0.2], [0.1], [0.9]], 2)):
        got = student.select_candidate(scores, random.Random(0))
        expect_equal(got, want, call("select_candidate", scores, "random.Random(0)") + " (the only survivor)")
    _SELECTS.add(student)


@pytest.mark.promise("_pareto.dominance")
@given(signed_tables())
def test_front_matches_reference(student, reference, scores):
    """pareto_front and _pareto give the reference's survivors and wins."""
    got, what = front_of(student, scores)
    expect_equal(got, reference.pareto_front(scores), what)
    survivors, wins = student._pareto(scores)
    want_survivors, want_wins = reference._pareto(scores)
    expect_equal(set(survivors), want_survivors, call("_pareto", scores) + " (survivors, as a set)")
    expect_equal([set(w) for w in wins], want_wins, call("_pareto", scores) + " (wins, as sets)")


@pytest.mark.promise("_pareto.dominance")
@given(tables(levels=(-0.5, 0.0, 0.25, 0.5, 0.75, 1.0), max_cand=8, max_inst=8).map(_no_zero_best))
def test_front_matches_reference_on_larger_tables(student, reference, scores):
    """pareto_front gives the reference's front on larger tables."""
    got, what = front_of(student, scores)
    expect_equal(got, reference.pareto_front(scores), what)


@pytest.mark.promise("_pareto.wins")
@given(signed_tables())
def test_wins_are_the_candidates_reaching_the_best_score(student, scores):
    """wins[i] is the set of candidates that reach the best score on instance i."""
    survivors, wins = student._pareto(scores)
    what = call("_pareto", scores)
    expect_equal([set(w) for w in wins], winners(scores), what + " (wins, as sets)")


@pytest.mark.promise("pareto_front.survivors")
@given(signed_tables())
def test_pareto_front_lists_the_survivors(student, reference, scores):
    """pareto_front gives _pareto's survivors."""
    _works(student, reference)
    survivors, _ = student._pareto(scores)
    front, what = front_of(student, scores)
    expect_true(
        set(survivors) == set(front),
        what,
        f"the survivors {set(survivors)} of _pareto differ from pareto_front's {front}",
    )


@pytest.mark.promise("pareto_front.sorted_list")
@given(tables())
@example([[0.5, 1.0], [1.0, 0.5], [1.0, 1.0], [0.0, 0.0]])
@example(_solo_table(12, {2: 1, 9: 1, 11: 1}))
def test_pareto_front_is_a_sorted_list(student, reference, scores):
    """pareto_front returns a list of int candidate indices in increasing order."""
    _works(student, reference)
    got = student.pareto_front(scores)
    what = call("pareto_front", scores)
    expect_form(got, [0], what)
    expect_true(got == sorted(got), what, f"got {got!r}, not in increasing order")


@pytest.mark.promise("_pareto.one_at_a_time")
@given(tables())
def test_front_is_never_empty(student, reference, scores):
    """The front is never empty."""
    _works(student, reference)
    got, what = front_of(student, scores)
    expect_true(len(got) > 0, what, "the front is empty")


@pytest.mark.promise("_pareto.one_at_a_time")
@given(tables())
def test_every_best_score_is_kept(student, reference, scores):
    """Every instance's best score is still reached by some survivor."""
    _works(student, reference)
    got, what = front_of(student, scores)
    for i, w in enumerate(winners(scores)):
        expect_true(
            w & set(got),
            what,
            f"front {got}: no survivor reaches the best score of instance {i} (won by {w})",
        )


@pytest.mark.promise("_pareto.winners_only")
@given(tables())
def test_survivors_win_something(student, reference, scores):
    """Every survivor wins at least one instance."""
    _works(student, reference)
    got, what = front_of(student, scores)
    won = set().union(*winners(scores))
    expect_true(set(got) <= won, what, f"front {got} holds candidates that win no instance (winners: {won})")


@pytest.mark.promise("_pareto.dominance")
@given(signed_tables())
def test_unique_winners_survive(student, reference, scores):
    """A candidate that is the only winner of some instance survives."""
    _works(student, reference)
    got, what = front_of(student, scores)
    for i, w in enumerate(winners(scores)):
        if len(w) == 1:
            expect_true(w <= set(got), what, f"front {got} lacks {w}, the only winner of instance {i}")


@pytest.mark.promise("_pareto.dominance")
@given(signed_tables())
def test_no_survivor_is_dominated(student, reference, scores):
    """No survivor is dominated by the other survivors (removal stops only when none is left)."""
    _works(student, reference)
    got, what = front_of(student, scores)
    wins, alive = winners(scores), set(got)
    for k in got:
        mine = [i for i, w in enumerate(wins) if k in w]
        alone = [i for i in mine if not (wins[i] & alive) - {k}]
        expect_true(
            alone, what, f"front {got}: survivor {k} has no instance that it alone of the survivors wins"
        )


@pytest.mark.promise("_pareto.dominance")
@given(signed_tables(), st.randoms(use_true_random=False))
def test_instance_order_does_not_matter(student, reference, scores, shuffler):
    """Permuting the instances does not change the front."""
    _works(student, reference)
    got, what = front_of(student, scores)
    order = list(range(len(scores[0])))
    shuffler.shuffle(order)
    permuted = [[row[i] for i in order] for row in scores]
    got2, what2 = front_of(student, permuted)
    expect_true(
        got2 == got, what2, f"front {got2}, but {what} (the same instances in another order) gives {got}"
    )


@pytest.mark.promise("_pareto.all_zero_tie")
@given(tables(), st.integers(0, 5))
def test_a_tie_won_by_all_changes_nothing(student, reference, scores, where):
    """An extra instance on which every candidate scores 0 does not change the front."""
    _works(student, reference)
    got, what = front_of(student, scores)
    at = min(where, len(scores[0]))
    padded = [row[:at] + [0.0] + row[at:] for row in scores]
    got2, what2 = front_of(student, padded)
    expect_true(got2 == got, what2, f"front {got2}, but without the all-zero instance {what} gives {got}")


@pytest.mark.promise("_pareto.all_zero_tie")
@given(signed_tables(max_inst=4), st.lists(st.integers(0, 4), min_size=1, max_size=3))
@example([[1.0, 0.5], [0.5, 1.0], [0.5, 0.5]], [2])
@example([[-1.0], [-0.5]], [0, 1])
def test_an_all_zero_instance_is_won_by_all(student, reference, scores, places):
    """An instance on which every candidate scores 0 is won by every candidate (wins[i] holds them
    all), and _pareto's survivors are the reference's."""
    table = [list(row) for row in scores]
    for p in places:
        at = min(p, len(table[0]))
        table = [row[:at] + [0.0] + row[at:] for row in table]
    survivors, wins = student._pareto(table)
    what = call("_pareto", table)
    zero = [i for i in range(len(table[0])) if all(row[i] == 0.0 for row in table)]
    everyone = set(range(len(table)))
    expect_equal(
        [set(wins[i]) for i in zero], [everyone for _ in zero], what + " (the wins of the all-zero instances)"
    )
    expect_equal(set(survivors), reference._pareto(table)[0], what + " (survivors, as a set)")


@pytest.mark.promise("_pareto.dominance")
@given(tables(levels=(-1.0, 0.0, 0.25, 0.5, 0.75, 1.0)).map(_no_zero_best), st.data())
def test_relabeling_maps_the_front_when_no_wins_are_all_shared(student, scores, data):
    """When every winner wins some instance alone, the front is all winners, under any relabeling."""
    n = len(scores)
    solo = sorted(data.draw(st.sets(st.integers(0, n - 1)), label="candidates given a solo instance"))
    scores = [row + [2.0 if j == k else 0.0 for j in solo] for k, row in enumerate(scores)]
    wins = winners(scores)
    won = set().union(*wins)
    alone = {next(iter(w)) for w in wins if len(w) == 1}
    assume(alone == won)  # else some winner shares all its wins: the front may depend on the labels
    got, what = front_of(student, scores)
    expect_true(
        got == sorted(won), what, f"front {got}, but every winner {sorted(won)} wins an instance alone"
    )
    order = data.draw(st.permutations(range(n)), label="new order of the candidates")
    relabeled = [scores[k] for k in order]  # new candidate j is old candidate order[j]
    got2, what2 = front_of(student, relabeled)
    want = sorted(order.index(k) for k in got)
    expect_true(
        got2 == want, what2, f"front {got2}; {what} gives {got}, which maps to {want} after relabeling"
    )


@pytest.mark.promise("_pareto.lowest_index_first")
@given(tables(max_cand=4), st.integers(1, 3), st.data())
def test_of_identical_candidates_only_the_last_can_survive(student, reference, scores, copies, data):
    """Of identical candidates, only the one with the highest index can survive (lowest index goes first)."""
    _works(student, reference)
    k = data.draw(st.integers(0, len(scores) - 1), label="copied candidate")
    places = sorted(data.draw(st.lists(st.integers(0, len(scores)), min_size=copies, max_size=copies)))
    table = [list(r) for r in scores]
    for shift, p in enumerate(places):
        table.insert(p + shift, list(scores[k]))
    same = [j for j, row in enumerate(table) if row == scores[k]]
    got, what = front_of(student, table)
    early = [j for j in same[:-1] if j in got]
    expect_true(
        not early, what, f"front {got} keeps {early}, but candidate {same[-1]} is identical and comes later"
    )


@pytest.mark.promise("_pareto.lowest_index_first")
@pytest.mark.parametrize("n", [3, 4, 5, 6, 7])
def test_removal_goes_lowest_index_first(student, reference, n):
    """Dominated candidates are removed lowest index first, rescanning after each removal."""
    # A cycle: instance i is won by candidates i and i+1 (mod n), so everyone starts dominated.
    scores = [[1.0 if k in (i, (i + 1) % n) else 0.5 for i in range(n)] for k in range(n)]
    got, what = front_of(student, scores)
    expect_equal(got, reference.pareto_front(scores), what)
    # Identical rows in front of a better one.
    scores = [[1.0, 0.5]] * (n - 1) + [[1.0, 0.7]]
    got, what = front_of(student, scores)
    expect_equal(got, reference.pareto_front(scores), what)


@pytest.mark.promise("_pareto.lowest_index_first")
def test_front_with_many_candidates(student, reference):
    """pareto_front finds the front of a larger table, whatever the order of its candidates."""
    # Candidates k and k + 6 win instance k % 6 together: of each pair the later one survives.
    scores = [[1.0 if i == k % 6 else 0.0 for i in range(6)] for k in range(12)]
    for order in (list(range(12)), list(range(12))[::-1], [5, 11, 0, 7, 2, 9, 4, 1, 10, 3, 8, 6]):
        table = [scores[k] for k in order]
        got, what = front_of(student, table)
        expect_equal(got, reference.pareto_front(table), what)


@pytest.mark.promise("select_candidate.draw")
@given(tables(), st.integers(0, 2**32 - 1))
@example([[-1.0, -0.5, 0.0], [-0.5, -1.0, 0.0], [-0.5, -2.0, 0.0]], 7)  # negative scores: the best is -0.5
def test_select_candidate_matches_reference(student, reference, scores, seed):
    """select_candidate draws what the reference draws and leaves the rng in the same state."""
    rng_a, rng_b = random.Random(seed), random.Random(seed)
    got = student.select_candidate(scores, rng_a)
    want = reference.select_candidate(scores, rng_b)
    what = call("select_candidate", scores, f"random.Random({seed})")
    expect_equal(got, want, what)
    expect_true(
        rng_a.getstate() == rng_b.getstate(), what, "the rng is not in the reference's state after the call"
    )


@pytest.mark.promise("select_candidate.draw")
@pytest.mark.parametrize(
    "scores",
    [
        [[1.0, 0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 1.0, 1.0, 1.0]],
        [[1.0, 0.0, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0], [0.0, 0.0, 0.5, 0.5], [0.0, 0.0, 0.5, 0.5]],
    ],
    ids=["counts-1-1-3", "counts-3-3-4"],
)
def test_select_candidate_matches_reference_draw_after_draw(student, reference, scores):
    """select_candidate draws what the reference draws, draw after draw from one rng."""
    rng_a, rng_b = random.Random(7), random.Random(7)
    for n in range(30):
        got = student.select_candidate(scores, rng_a)
        want = reference.select_candidate(scores, rng_b)
        what = call("select_candidate", scores, "random.Random(7)") + f", draw {n + 1}"
        expect_equal(got, want, what)
        expect_true(
            rng_a.getstate() == rng_b.getstate(),
            what,
            "the rng is not in the reference's state after the call",
        )


@pytest.mark.promise("select_candidate.survivors_only")
@given(tables(), st.integers(0, 2**32 - 1))
def test_select_candidate_returns_survivors(student, reference, scores, seed):
    """select_candidate only returns candidates of the front."""
    _works_select(student)
    front, _ = front_of(student, scores)
    rng = random.Random(seed)
    for _ in range(4):
        got = student.select_candidate(scores, rng)
        expect_true(
            got in front,
            call("select_candidate", scores, "rng"),
            f"returned {got!r}, not in the front {front}",
        )


# Tables whose survivors share wins (ties, instances where all score 0) and win alone, with the win counts
# of their survivors: weighting by the wins alone, by score, or drawing uniformly draws otherwise.
WEIGHTED = [
    # 0, 1, 2 each win one instance alone; 1 and 2 tie on ten more: counts 1, 11, 11.
    (
        [[1.0, 0.0, 0.0] + [0.0] * 10, [0.0, 1.0, 0.0] + [0.5] * 10, [0.0, 0.0, 1.0] + [0.5] * 10],
        {0: 1, 1: 11, 2: 11},
    ),
]


def _draws(student, scores, seed, n):
    rng, seen = random.Random(seed), {}
    for _ in range(n):
        k = student.select_candidate(scores, rng)
        seen[k] = seen.get(k, 0) + 1
    return seen


@pytest.mark.promise("select_candidate.weights")
@pytest.mark.parametrize("case", range(len(WEIGHTED)), ids=["shared-ties"])
def test_select_candidate_draws_by_win_counts(student, case):
    """Each survivor is drawn with a probability proportional to the instances it wins, shared ones
    and ties where everyone scores 0 included."""
    scores, count = WEIGHTED[case]
    n, total = 150, sum(count.values())
    seen = _draws(student, scores, 1000 + case, n)
    what = call("select_candidate", scores, "rng") + f" drawn {n} times"
    expect_true(set(seen) <= set(count), what, f"drew {sorted(seen)}, but the front is {sorted(count)}")
    for k in count:
        p, freq = count[k] / total, seen.get(k, 0) / n
        expect_true(
            abs(freq - p) <= 4.5 * (p * (1 - p) / n) ** 0.5,
            what,
            f"candidate {k} came {seen.get(k, 0)} times ({freq:.3f}); its wins: {count[k]} of {total}",
        )


@pytest.mark.promise("select_candidate.weights")
def test_select_candidate_weights_are_win_counts(student):
    """select_candidate picks each survivor with probability proportional to the instances it wins."""
    # Instances 0-7: candidate 0 alone; 8: candidate 1 alone; 9: candidate 2 alone; 10-13: everyone scores 0.
    # Candidate 3 wins only the all-zero instances, shared, so it is dominated. Win counts 12, 5, 5.
    count = {0: 12, 1: 5, 2: 5}
    zeros = [0.0] * 4
    scores = [
        [1.0] * 8 + [0.0, 0.0] + zeros,
        [0.0] * 8 + [1.0, 0.0] + zeros,
        [0.0] * 8 + [0.0, 1.0] + zeros,
        [0.5] * 8 + [0.5, 0.5] + zeros,
    ]
    total = sum(count.values())
    rng, n = random.Random(20240605), 200
    seen = {}
    for _ in range(n):
        k = student.select_candidate(scores, rng)
        seen[k] = seen.get(k, 0) + 1
    what = call("select_candidate", scores, "rng") + f" drawn {n} times"
    expect_true(set(seen) <= set(count), what, f"drew {sorted(seen)}, but the front is {sorted(count)}")
    for k in count:
        p = count[k] / total
        freq = seen.get(k, 0) / n
        tol = 4.5 * (p * (1 - p) / n) ** 0.5
        expect_true(
            abs(freq - p) <= tol,
            what,
            f"candidate {k} came {seen.get(k, 0)} times ({freq:.3f}); "
            f"its share of wins is {count[k]}/{total} = {p:.3f}",
        )


@pytest.mark.promise("_pareto.exact_comparison")
@pytest.mark.parametrize(
    "scores",
    [
        [[1.0, 0.0], [1.0 - 1e-12, 1.0]],
        [[0.5, 0.5], [0.5 + 1e-12, 0.0], [0.0, 0.5 - 1e-15]],
        [[0.3, 1e-12], [0.3 + 1e-13, 0.0], [0.0, 0.0]],
        [[0.7, 0.2], [0.7 - 1e-10, 0.9], [-0.5, 0.9 + 1e-10]],
        [[-0.25, 1.0], [-0.25 - 1e-10, 0.0], [-1.0, 1.0 - 1e-13]],
    ],
    ids=["near-tie-below", "near-tie-above", "near-zero", "1e-10-apart", "negative-1e-10-apart"],
)
def test_scores_are_compared_exactly(student, reference, scores):
    """Scores are compared exactly: a score 1e-12 below the best does not reach it."""
    survivors, wins = student._pareto(scores)
    want_survivors, want_wins = reference._pareto(scores)
    what = call("_pareto", scores)
    expect_equal([set(w) for w in wins], want_wins, what + " (wins, as sets)")
    expect_equal(set(survivors), want_survivors, what + " (survivors, as a set)")


@pytest.mark.promise("select_candidate.draw")
@pytest.mark.parametrize(
    "scores",
    [
        _solo_table(10, {2: 3, 9: 1}),
        _solo_table(11, {1: 1, 8: 2, 10: 4}),
        _solo_table(18, {3: 2, 12: 1, 17: 3}),
    ],
    ids=["survivors-2-9", "survivors-1-8-10", "survivors-3-12-17"],
)
def test_select_candidate_draws_over_sorted_survivors(student, reference, scores):
    """The draw is over the survivors in increasing order, also past the indices where a set's order
    stops looking sorted."""
    for seed in range(8):
        rng_a, rng_b = random.Random(seed), random.Random(seed)
        got = student.select_candidate(scores, rng_a)
        want = reference.select_candidate(scores, rng_b)
        what = call("select_candidate", scores, f"random.Random({seed})")
        expect_equal(got, want, what)
        expect_true(
            rng_a.getstate() == rng_b.getstate(),
            what,
            "the rng is not in the reference's state after the call",
        )


@pytest.mark.promise("select_candidate.single_survivor")
@pytest.mark.parametrize(
    "scores",
    [
        [[1.0, 0.5, 0.0], [1.0, 0.5, 0.0], [1.0, 0.5, 0.0]],
        [[0.2, 0.3], [0.9, 0.8], [0.1, 0.8]],
        [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]],
        [[0.7]],
    ],
    ids=["identical", "one-best", "all-zero", "one-candidate"],
)
def test_select_candidate_with_one_survivor_returns_it(student, reference, scores):
    """With one survivor, select_candidate always returns it."""
    _works_select(student)
    want = reference.pareto_front(scores)
    for seed in range(3):
        got = student.select_candidate(scores, random.Random(seed))
        expect_equal(got, want[0], call("select_candidate", scores, f"random.Random({seed})"))


@pytest.mark.promise("_pareto.scores_unchanged")
@example(scores=[[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [1.0, 0.0, 0.5]])
@given(tables())
def test_scores_are_not_changed(student, reference, scores):
    """_pareto, pareto_front and select_candidate leave scores as they were."""
    _works(student, reference)
    before = [list(row) for row in scores]
    for name, args in (("_pareto", ()), ("pareto_front", ()), ("select_candidate", (random.Random(0),))):
        getattr(student, name)(scores, *args)
        what = call(name, before, *(["random.Random(0)"] if args else []))
        expect_true(scores == before and "0" not in student.last_changed, what, "the scores changed")
