"""Exercise 2: bootstrap_demos, bootstrapped few-shot demos (visible examples).

One rollout per training example, in training order (rollout draws rng.random() and, on a miss, one
rng.randrange(3)); a passing trace becomes Demo(ex.id, ex.kind, trace.output, trace.correct) while its
kind has fewer than max_per_kind demos.
"""

import random

import pytest

from grader.expect import expect_equal

pytestmark = pytest.mark.exercise(2)


def _train(lab):
    """Ten literal examples (ids 10..19): four of kind A, three of D, one each of B, C and E."""
    rows = [
        (0, "A", 1),
        (1, "D", 3),
        (2, "A", 0),
        (3, "B", 2),
        (4, "A", 2),
        (5, "E", 1),
        (6, "D", 0),
        (7, "A", 3),
        (8, "C", 1),
        (9, "D", 2),
    ]
    return [lab.Example(i + 10, kind, answer) for i, kind, answer in rows]


def _program(lab):
    # parse: 2 words, answer: 4 words; no demos. A rollout costs len(words) + 25 tokens:
    # 27 on a parse kind (A, B, C), 29 on an answer kind (D, E, F).
    return lab.Program({"parse": "Solve units", "answer": "Solve the task now."})


def _demo(lab, i, kind, answer, correct=True):
    return lab.Demo(i, kind, answer, correct)


def _what(prog, train, seed, args="", **kw):
    """How the call reads in a message (the rng is shown as the seed it was made from)."""
    extra = "".join(f", {k}={v!r}" for k, v in kw.items())
    return (
        f"bootstrap_demos(prog, train, random.Random({seed}){args}{extra})\n"
        f"  prog = {prog!r}\n  train = {train!r}"
    )


@pytest.mark.promise("bootstrap_demos.passing_within_cap")
def test_keeps_passing_traces_in_training_order(student, lab):
    """Seed 23: the rollouts on ids 10..19 pass as 0 0 1 1 1 0 1 1 1 0; id 17 (a third passing A) is
    dropped by max_per_kind=2 (the meter is the promise of test_a_model_that_is_never_right)."""
    prog, train, rng, meter = _program(lab), _train(lab), random.Random(23), lab.Meter()
    what = _what(prog, train, 23, meter=lab.Meter())
    got = student.bootstrap_demos(prog, train, rng, meter=meter)
    want = [
        _demo(lab, 12, "A", 0),
        _demo(lab, 13, "B", 2),
        _demo(lab, 14, "A", 2),
        _demo(lab, 16, "D", 0),
        _demo(lab, 18, "C", 1),
    ]
    expect_equal(got, want, what)
    # rng state: exactly the reference's draws (one random() per example, one randrange(3) per miss)
    expect_equal(rng.random(), 0.10589975927601813, what + ": rng.random() after the call")


@pytest.mark.promise("bootstrap_demos.passing_within_cap")
def test_max_per_kind(student, lab):
    """Seed 23 again, max_per_kind=1: the first passing trace of each kind only."""
    prog, train, rng, meter = _program(lab), _train(lab), random.Random(23), lab.Meter()
    what = _what(prog, train, 23, meter=lab.Meter(), max_per_kind=1)
    got = student.bootstrap_demos(prog, train, rng, meter=meter, max_per_kind=1)
    want = [_demo(lab, 12, "A", 0), _demo(lab, 13, "B", 2), _demo(lab, 16, "D", 0), _demo(lab, 18, "C", 1)]
    expect_equal(got, want, what)
    expect_equal(rng.random(), 0.10589975927601813, what + ": rng.random() after the call")


def _keep_all_seed_23(lab):
    """The demos of seed 23 with keep_all=True (failing traces with their output and correct=False)."""
    return [
        _demo(lab, 10, "A", 3, False),
        _demo(lab, 11, "D", 0, False),
        _demo(lab, 12, "A", 0),
        _demo(lab, 13, "B", 2),
        _demo(lab, 15, "E", 0, False),
        _demo(lab, 16, "D", 0),
        _demo(lab, 18, "C", 1),
    ]


@pytest.mark.promise("bootstrap_demos.keep_all")
def test_keep_all_keeps_failing_traces(student, lab):
    """keep_all=True skips the filter: failing traces are kept too; max_per_kind still applies (ids 14,
    17, 19 are third or later of their kind). The demos' (id, kind) are compared here."""
    prog, train, rng, meter = _program(lab), _train(lab), random.Random(23), lab.Meter()
    what = _what(prog, train, 23, meter=lab.Meter(), keep_all=True)
    got = student.bootstrap_demos(prog, train, rng, meter=meter, keep_all=True)
    want = _keep_all_seed_23(lab)
    expect_equal([(d.id, d.kind) for d in got], [(d.id, d.kind) for d in want], what + " (id, kind)")
    expect_equal(rng.random(), 0.10589975927601813, what + ": rng.random() after the call")


@pytest.mark.promise("bootstrap_demos.kept_failures")
def test_kept_failures_carry_their_output(student, lab):
    """Seed 23 with keep_all=True again: a failing trace is kept with its own wrong output and
    correct=False (id 10's trace answered 3, its example's answer is 1)."""
    prog, train = _program(lab), _train(lab)
    what = _what(prog, train, 23, keep_all=True)
    got = student.bootstrap_demos(prog, train, random.Random(23), keep_all=True)
    expect_equal(got, _keep_all_seed_23(lab), what)


@pytest.mark.promise("bootstrap_demos.rollouts_and_rng")
def test_a_model_that_is_always_right(student, lab):
    """ToyParams(floor=1.0, cap=1.0) makes every rollout pass: the demos are the first two examples of
    each kind, with their answers; each rollout draws one rng.random() and nothing else."""
    prog, train, rng, meter = _program(lab), _train(lab), random.Random(11), lab.Meter()
    params = lab.ToyParams(floor=1.0, cap=1.0)
    what = _what(prog, train, 11, f", {params!r}, Meter()")
    got = student.bootstrap_demos(prog, train, rng, params, meter)
    want = [
        _demo(lab, 10, "A", 1),
        _demo(lab, 11, "D", 3),
        _demo(lab, 12, "A", 0),
        _demo(lab, 13, "B", 2),
        _demo(lab, 15, "E", 1),
        _demo(lab, 16, "D", 0),
        _demo(lab, 18, "C", 1),
    ]
    expect_equal(got, want, what)
    # the value random.Random(11) gives after ten random() calls
    expect_equal(rng.random(), 0.09412345622921847, what + ": rng.random() after the call")


@pytest.mark.promise("bootstrap_demos.one_rollout_per_example")
def test_a_model_that_is_never_right(student, lab):
    """ToyParams(floor=0.0, cap=0.0) makes every rollout fail: no demos, but still one rollout (and its
    tokens) per training example; with keep_all the failures come back (their ids and kinds compared)."""
    prog, train, params = _program(lab), _train(lab), lab.ToyParams(floor=0.0, cap=0.0)
    rng, meter = random.Random(11), lab.Meter()
    what = _what(prog, train, 11, f", {params!r}, Meter()")
    expect_equal(student.bootstrap_demos(prog, train, rng, params, meter), [], what)
    expect_equal((meter.rollouts, meter.tokens), (10, 278), what + ": (meter.rollouts, meter.tokens) after")
    expect_equal(rng.random(), 0.6539225335338404, what + ": rng.random() after the call")

    rng, meter = random.Random(11), lab.Meter()
    what = _what(prog, train[:5], 11, f", {params!r}, Meter()", keep_all=True)
    got = student.bootstrap_demos(prog, train[:5], rng, params, meter, keep_all=True)
    want = [(10, "A"), (11, "D"), (12, "A"), (13, "B")]
    expect_equal([(d.id, d.kind) for d in got], want, what + " (id, kind)")
    expect_equal((meter.rollouts, meter.tokens), (5, 137), what + ": (meter.rollouts, meter.tokens) after")
    expect_equal(rng.random(), 0.7929768725199526, what + ": rng.random() after the call")
