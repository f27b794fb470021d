"""Exercise 6: Pareto selection (`_pareto`, `select_candidate`, `pareto_front`).

scores[k][i] is the score of candidate k on instance i. The winners of an instance are the candidates
that reach its best score; a candidate is dominated when every instance it wins has another surviving
winner; dominated candidates are removed one at a time, lowest index first, until none is left.
"""

import random

import pytest

from grader.expect import call, expect_equal

pytestmark = pytest.mark.exercise(6)


def front(student, scores):
    """pareto_front's answer in increasing order: "the set of candidates" may come as a list, tuple or set."""
    got = student.pareto_front(scores)
    return sorted(got) if isinstance(got, list | tuple | set | frozenset) else got


@pytest.mark.promise("_pareto.dominance")
def test_pareto_returns_survivors_and_the_winners_of_each_instance(student):
    """_pareto gives (survivors, wins): wins[i] is the set of candidates that reach the best score on i."""
    scores = [[1.0, 1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    survivors, wins = student._pareto(scores)
    what = call("_pareto", scores)
    # Instance 0 is won by 0 and 1, instance 1 by 0 alone, instance 2 by 2 alone.
    expect_equal([set(w) for w in wins], [{0, 1}, {0}, {2}], what + " (the wins, as sets)")
    # Candidate 1 wins only instance 0, which candidate 0 also wins: it is dominated.
    expect_equal(set(survivors), {0, 2}, what + " (the survivors, as a set)")
    # Instance 0 is won by 0 alone, instance 1 by 1 and 2: 1 is dominated (2 still wins instance 1).
    scores = [[1.0, 0.5], [0.0, 1.0], [0.0, 1.0]]
    survivors, wins = student._pareto(scores)
    what = call("_pareto", scores)
    expect_equal([set(w) for w in wins], [{0}, {1, 2}], what + " (the wins, as sets)")
    expect_equal(set(survivors), {0, 2}, what + " (the survivors, as a set)")


@pytest.mark.promise("_pareto.dominance")
def test_pareto_front_keeps_every_candidate_that_wins_an_instance_alone(student):
    """A candidate that is the only winner of some instance is never removed."""
    cases = [
        ([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], [0, 1, 2]),
        ([[0.2, 0.9], [0.8, 0.4], [0.5, 0.5]], [0, 1]),  # candidate 2 wins nothing
        ([[0.0, 0.3, 0.1], [0.4, 0.0, 0.0], [0.4, 0.3, 0.9]], [2]),  # 0 and 1 only share wins with 2
    ]
    for scores, want in cases:
        expect_equal(front(student, scores), want, call("pareto_front", scores))


@pytest.mark.promise("_pareto.lowest_index_first")
def test_pareto_front_removes_the_lowest_index_first(student):
    """Removal order: lowest index first, then rescan; a removal can save a candidate that shared its wins."""
    cases = [
        # Three candidates tie everywhere: 0 goes (1 still wins), then 1 (2 still wins), 2 stays.
        ([[1.0], [1.0], [1.0]], [2]),
        # 0 goes (1 also wins instance 0); now 1 is alone on instance 0, and 2 goes (1 wins instance 1).
        ([[1.0, 0.0], [1.0, 1.0], [0.0, 1.0]], [1]),
        # Wins {1, 2}, {0, 1}, {0, 2}: every candidate shares all its wins. 0 goes first, which leaves
        # 1 alone on instance 1 and 2 alone on instance 2. (Highest index first would keep [0, 1].)
        ([[0.5, 0.9, 0.2], [0.7, 0.9, 0.1], [0.7, 0.3, 0.2]], [1, 2]),
    ]
    for scores, want in cases:
        expect_equal(front(student, scores), want, call("pareto_front", scores))


@pytest.mark.promise("_pareto.all_zero_tie")
def test_an_instance_where_everyone_scores_zero_is_a_tie_won_by_all(student):
    """An instance on which every candidate scores 0 counts as won by all of them."""
    scores = [[0.0, 1.0], [0.0, 0.0]]
    survivors, wins = student._pareto(scores)
    what = call("_pareto", scores)
    expect_equal([set(w) for w in wins], [{0, 1}, {0}], what + " (the wins, as sets)")
    expect_equal(set(survivors), {0}, what + " (the survivors, as a set)")
    # All zero: both win both instances; 0 is removed first (1 still wins), 1 stays.
    scores = [[0.0, 0.0], [0.0, 0.0]]
    expect_equal(front(student, scores), [1], call("pareto_front", scores))
    # The all-zero instance second, candidate 0 best on the first: 0 wins both and 1 is dominated.
    scores = [[1.0, 0.0], [0.0, 0.0]]
    survivors, wins = student._pareto(scores)
    what = call("_pareto", scores)
    expect_equal([set(w) for w in wins], [{0}, {0, 1}], what + " (the wins, as sets)")
    expect_equal(set(survivors), {0}, what + " (the survivors, as a set)")


@pytest.mark.promise("select_candidate.draw")
def test_select_candidate_samples_survivors_by_their_win_counts(student):
    """select_candidate draws once with rng.choices over the sorted survivors, weighted by wins."""
    # Survivors 0 (wins instances 0, 1, 3) and 1 (wins 2, 3); candidate 2 wins only the all-zero
    # instance 3, shared, so it is dominated. So the draw is rng.choices([0, 1], [3, 2])[0].
    scores = [[1.0, 1.0, 0.0, 0.0], [0.0, 0.0, 1.0, 0.0], [0.0, 0.0, 0.0, 0.0]]
    rng = random.Random(0)
    got = student.select_candidate(scores, rng)
    what = call("select_candidate", scores, "random.Random(0)")
    expect_equal(got, 1, what)
    # One draw only: the rng moves on by exactly one random() call.
    expect_equal(rng.random(), 0.7579544029403025, what + ", then rng.random()")
    got = [student.select_candidate(scores, random.Random(seed)) for seed in range(1, 6)]
    expect_equal(
        got, [0, 1, 0, 0, 1], call("select_candidate", scores, "random.Random(seed)") + " for seeds 1..5"
    )


@pytest.mark.promise("select_candidate.draw")
def test_select_candidate_favours_the_candidate_with_more_wins(student):
    """Candidate 1 wins 5 instances, candidate 0 one: rng.choices([0, 1], [1, 5]) picks 1 with chance 5/6."""
    scores = [[1.0, 0.0, 0.0, 0.0, 0.0, 0.0], [0.0, 1.0, 1.0, 1.0, 1.0, 1.0]]
    got = [student.select_candidate(scores, random.Random(seed)) for seed in range(10)]
    # random.Random(1).random() is 0.134 < 1/6: the only seed here that picks candidate 0.
    expect_equal(
        got,
        [1, 0, 1, 1, 1, 1, 1, 1, 1, 1],
        call("select_candidate", scores, "random.Random(seed)") + " for seeds 0..9",
    )


@pytest.mark.promise("select_candidate.single_survivor")
def test_select_candidate_returns_the_only_survivor(student):
    """With one survivor, select_candidate always returns it."""
    scores = [[1.0, 0.5], [1.0, 0.5], [1.0, 0.5]]
    got = [student.select_candidate(scores, random.Random(seed)) for seed in range(4)]
    expect_equal(
        got, [2, 2, 2, 2], call("select_candidate", scores, "random.Random(seed)") + " for seeds 0..3"
    )
