"""Exercise 17 (DGM parents): dgm_weights(archive, lam, alpha0) and choose_parent(archive, rng, mode).

dgm_weights: w_i = sigmoid(lam * (score_i - alpha0)) / (1 + n_i), n_i = the number of archived variants whose
parent is variant i's id. choose_parent: "dgm" draws rng.choices(archive, dgm_weights(archive)), "greedy"
takes the max by (score, id), "uniform" draws rng.choice(archive), anything else raises ValueError.
"""

import random

import pytest

from grader.expect import call, expect_close, expect_equal

pytestmark = pytest.mark.exercise(17)

E, R, P = "edit_tool", "retry", "planner"


def small_archive(lab):
    """Variant 0 has two children (1 and 3), variant 1 has one child (2)."""
    A = lab.AgentVariant
    return [
        A(0, frozenset(), 0.2),
        A(1, frozenset({E}), 0.28, 0),
        A(2, frozenset({E, R}), 0.33, 1),
        A(3, frozenset({R}), 0.25, 0),
    ]


@pytest.mark.promise("dgm_weights.children_discount")
def test_dgm_weights_of_a_small_archive(student, lab):
    """One weight per variant, in archive order; e.g. variant 0: sigmoid(10 * (0.2 - 0.5)) / (1 + 2).
    Variants 0 and 1 alone: variant 0 has one child, sigmoid(-3) / 2; variant 1 none, sigmoid(-2.2)."""
    archive = small_archive(lab)
    want = [0.01580862439252226, 0.04987524455984259, 0.15446526508353475, 0.07585818002124355]
    expect_close(student.dgm_weights(archive), want, call("dgm_weights", archive), rel=1e-9)
    archive = archive[:2]  # variants 0 and 1 alone: variant 0 has one child here, variant 1 none
    want = [0.02371293658878339, 0.09975048911968518]
    expect_close(student.dgm_weights(archive), want, call("dgm_weights", archive), rel=1e-9)


@pytest.mark.promise("dgm_weights.sigmoid")
def test_dgm_weights_use_lam_and_alpha0(student, lab):
    """lam and alpha0 are used: variant 0 gets sigmoid(2 * (0.2 - 0.3)) / 3."""
    archive = small_archive(lab)
    want = [0.15005533422917405, 0.2450006665600173, 0.5149955016194101, 0.47502081252106]
    expect_close(
        student.dgm_weights(archive, lam=2.0, alpha0=0.3),
        want,
        call("dgm_weights", archive, lam=2.0, alpha0=0.3),
        rel=1e-9,
    )


@pytest.mark.promise("dgm_weights.children_discount")
def test_dgm_weight_halves_with_the_first_child(student, lab):
    """A variant's weight halves when its first child joins the archive: the count is 1 + n_i."""
    A = lab.AgentVariant
    archive = [A(0, frozenset(), 0.2)]
    expect_close(student.dgm_weights(archive), [0.04742587317756678], call("dgm_weights", archive), rel=1e-9)
    archive.append(A(1, frozenset({E}), 0.28, 0))
    expect_close(
        student.dgm_weights(archive),
        [0.02371293658878339, 0.09975048911968518],
        call("dgm_weights", archive),
        rel=1e-9,
    )


@pytest.mark.promise("dgm_weights.children_by_id")
def test_dgm_weights_count_children_by_id(student, lab):
    """Children are counted by the parent's id, not by its position in the archive."""
    A = lab.AgentVariant
    archive = [
        A(4, frozenset(), 0.6),
        A(2, frozenset({R}), 0.45, 4),
        A(7, frozenset({R, E}), 0.7, 2),
        A(1, frozenset({P}), 0.17, 4),
    ]
    want = [0.2436861928766683, 0.1887703343990727, 0.8807970779778823, 0.03557118927263618]
    expect_close(student.dgm_weights(archive), want, call("dgm_weights", archive), rel=1e-9)


@pytest.mark.promise("choose_parent.greedy_tie_highest_id")
def test_choose_parent_greedy_takes_the_best_score_then_the_highest_id(student, lab):
    """Greedy: the max by (score, id), so a tie on score goes to the higher id; it draws no random numbers."""
    A = lab.AgentVariant
    for archive, want_id in (
        ([A(0, frozenset(), 0.5), A(1, frozenset({E}), 0.7, 0), A(3, frozenset({R}), 0.7, 0)], 3),
        ([A(2, frozenset({E}), 0.9), A(0, frozenset(), 0.1), A(5, frozenset({R}), 0.3, 2)], 2),
    ):
        rng = random.Random(1)
        got = student.choose_parent(archive, rng, "greedy")
        expect_equal(
            got,
            archive[[a.id for a in archive].index(want_id)],
            call("choose_parent", archive, "random.Random(1)", "greedy"),
        )
        expect_equal(
            rng.random(), random.Random(1).random(), "rng.random() after choose_parent(..., 'greedy')"
        )


@pytest.mark.promise("choose_parent.uniform_draw")
def test_choose_parent_uniform_draws_with_rng_choice(student, lab):
    """Uniform: rng.choice(archive); the rng then continues as after that one call."""
    archive = small_archive(lab)
    for seed, want_id, next_random in ((1, 1, 0.5692038748222122), (2, 0, 0.09158478740507359)):
        rng = random.Random(seed)
        what = call("choose_parent", archive, f"random.Random({seed})", "uniform")
        expect_equal(student.choose_parent(archive, rng, "uniform"), archive[want_id], what)
        expect_equal(rng.random(), next_random, f"rng.random() after {what}")


@pytest.mark.promise("choose_parent.dgm_draw")
def test_choose_parent_dgm_draws_with_the_weights(student, lab):
    """Dgm: rng.choices(archive, dgm_weights(archive)), one draw; the rng then continues as after it."""
    archive = small_archive(lab)
    for seed, want_id, next_random in ((1, 1, 0.8474337369372327), (2, 3, 0.9478274870593494)):
        rng = random.Random(seed)
        what = call("choose_parent", archive, f"random.Random({seed})", "dgm")
        expect_equal(student.choose_parent(archive, rng, "dgm"), archive[want_id], what)
        expect_equal(rng.random(), next_random, f"rng.random() after {what}")


@pytest.mark.promise("choose_parent.unknown_mode")
def test_choose_parent_rejects_an_unknown_mode(student, lab):
    """An unknown mode raises ValueError."""
    archive = small_archive(lab)
    for mode in ("best", "DGM", ""):
        with pytest.raises(ValueError):
            student.choose_parent(archive, random.Random(0), mode)
