"""Exercise 2: bootstrap_demos (hidden checks: reference comparisons and properties)."""

import random

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from grader.expect import expect_equal, expect_pinned, expect_true

pytestmark = pytest.mark.exercise(2)

KINDS = ("A", "B", "C", "D", "E", "F")
WORDS = ("units", "negatives", "dates", "abbrev", "currency", "ties", "Solve", "the", "task.", "step")

seeds = st.integers(0, 2**32 - 1)
examples = st.tuples(st.sampled_from(KINDS), st.integers(0, 3))
# Empty and one-example trains often; kinds repeat (one or two kinds) so that caps fill up; an example
# listed twice or more (an int j in a spec: its j-th new example again, the same object).
train_specs = st.one_of(
    st.lists(examples, max_size=1),
    st.lists(st.tuples(st.sampled_from(("A", "D")), st.integers(0, 3)), max_size=10),
    st.lists(examples, max_size=14),
    st.lists(examples, min_size=1, max_size=6).flatmap(
        lambda xs: st.lists(st.integers(0, len(xs) - 1), min_size=1, max_size=4).flatmap(
            lambda ds: st.permutations(xs + ds).filter(lambda t: not isinstance(t[0], int))
        )
    ),
)
program_specs = st.tuples(
    st.lists(st.sampled_from(WORDS), max_size=6),
    st.lists(st.sampled_from(WORDS), max_size=6),
    st.lists(st.tuples(st.sampled_from(KINDS), st.booleans()), max_size=3),
)
param_specs = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {
            "base": st.floats(0.0, 1.0),
            "instr_gain": st.floats(0.0, 0.5),
            "floor": st.floats(0.0, 0.3),
            "cap": st.floats(0.7, 1.0),
        }
    ),
)
meter_specs = st.one_of(st.none(), st.tuples(st.integers(0, 5), st.integers(0, 200)))


def _train(mod, specs):
    """The training list of a spec: (kind, answer) a new example (ids are not the positions, so that
    Demo.id must come from the example), an int j the spec's j-th new example again (the same object)."""
    made = {i: mod.Example(100 + 3 * i, *spec) for i, spec in enumerate(specs) if not isinstance(spec, int)}
    new = list(made.values())
    return [new[spec % len(new)] if isinstance(spec, int) else made[i] for i, spec in enumerate(specs)]


def _program(mod, spec):
    parse, answer, demos = spec
    return mod.Program(
        {"parse": " ".join(parse), "answer": " ".join(answer)},
        tuple(mod.Demo(i, kind, 0, ok) for i, (kind, ok) in enumerate(demos)),
    )


def _params(mod, spec):
    return mod.ToyParams() if spec is None else mod.ToyParams(**spec)


def _meter(mod, spec):
    return None if spec is None else mod.Meter(None, *spec)


def _what(prog, train, seed, params, meter, max_per_kind, keep_all):
    return (
        f"bootstrap_demos(prog, train, random.Random({seed}), {params!r}, {meter!r}, "
        f"max_per_kind={max_per_kind}, keep_all={keep_all})\n  prog = {prog!r}\n  train = {train!r}"
    )


def _run(student, lab, seed, tspec, pspec, parspec, mspec, max_per_kind, keep_all):
    """Call the student; returns (demos, rng, meter, train, prog, params, what)."""
    train, prog, params, meter = (
        _train(lab, tspec),
        _program(lab, pspec),
        _params(lab, parspec),
        _meter(lab, mspec),
    )
    what = _what(prog, train, seed, params, _meter(lab, mspec), max_per_kind, keep_all)
    rng = random.Random(seed)
    demos = student.bootstrap_demos(
        prog, train, rng, params, meter, max_per_kind=max_per_kind, keep_all=keep_all
    )
    return list(demos), rng, meter, train, prog, what


def _reference_demos(reference, seed, tspec, pspec, parspec, max_per_kind, keep_all):
    """The reference's demos on the same specs (its own objects), without a meter."""
    return reference.bootstrap_demos(
        _program(reference, pspec),
        _train(reference, tspec),
        random.Random(seed),
        _params(reference, parspec),
        max_per_kind=max_per_kind,
        keep_all=keep_all,
    )


def _tokens(lab, prog, ex):
    """What one rollout charges (the given rollout's formula)."""
    return len(prog.words(lab.MODULE_OF[ex.kind])) + 20 * len(prog.demos) + 15 + 10


def _pin(student, reference):
    """The properties below also pin two runs' demos (and rng states): no demos at all, or a call that
    changes nothing, satisfies them. One example per kind: no kind fills up."""
    prog = reference.Program({"parse": "Solve units", "answer": "Solve the task."})
    train = [reference.Example(i + 7, kind, i % 4) for i, kind in enumerate(KINDS)]
    expect_pinned(
        student,
        reference,
        "bootstrap_demos",
        (prog, train, random.Random(23)),
        (prog, train, random.Random(5)),
    )


@pytest.mark.promise("bootstrap_demos.rollouts_and_rng")
@given(seeds, train_specs, program_specs, param_specs, meter_specs, st.integers(0, 3), st.booleans())
@example(3, [("A", 1), ("B", 2), 0, 1, 0], ([], [], []), {"floor": 1.0, "cap": 1.0}, (0, 0), 3, False)
def test_matches_reference(student, lab, reference, seed, tspec, pspec, parspec, mspec, per_kind, keep_all):
    """Which demos are kept (their ids and kinds), the rng state and the meter after the call match the
    reference (the fields of a failing trace kept under keep_all are the kept_failures promise's)"""
    got, rng, meter, _, _, what = _run(student, lab, seed, tspec, pspec, parspec, mspec, per_kind, keep_all)
    ref_rng, ref_meter = random.Random(seed), _meter(reference, mspec)
    want = reference.bootstrap_demos(
        _program(reference, pspec),
        _train(reference, tspec),
        ref_rng,
        _params(reference, parspec),
        ref_meter,
        max_per_kind=per_kind,
        keep_all=keep_all,
    )
    expect_equal([(d.id, d.kind) for d in got], [(d.id, d.kind) for d in want], what + "\n  (id, kind)")
    expect_true(
        rng.getstate() == ref_rng.getstate(),
        what,
        "the rng state after the call differs from the reference's (other random draws)",
    )
    if meter is not None:
        expect_equal(
            (meter.rollouts, meter.tokens),
            (ref_meter.rollouts, ref_meter.tokens),
            what + ": (meter.rollouts, meter.tokens) after",
        )


@pytest.mark.promise("bootstrap_demos.passing_within_cap")
@given(seeds, train_specs, program_specs, param_specs, st.integers(1, 3))
@example(0, [("A", i % 4) for i in range(8)], ([], [], []), None, 2)  # misses before the cap fills
def test_keeps_only_passing_traces_within_the_cap_in_order(
    student, reference, lab, seed, tspec, pspec, parspec, per_kind
):
    """Only passing traces are kept, at most max_per_kind per kind (failures do not count), in training
    order: the reference's demos (max_per_kind=0 is the zero-cap edge's)"""
    _pin(student, reference)
    got, _, _, train, _, what = _run(student, lab, seed, tspec, pspec, parspec, None, per_kind, False)
    want = _reference_demos(reference, seed, tspec, pspec, parspec, per_kind, False)
    expect_equal(
        [(d.id, d.kind, d.answer, d.correct) for d in got],
        [(d.id, d.kind, d.answer, d.correct) for d in want],
        what + "\n  (id, kind, answer, correct)",
    )
    # Each demo is a passing trace of a later training example than the demo before it (an example
    # listed twice may give two demos).
    rest = iter(train)
    for d in got:
        ex = next((ex for ex in rest if ex.id == d.id), None)
        expect_true(ex is not None, what, f"{d!r}: no later training example has its id (order): {got!r}")
        expect_true(
            d.correct is True and d.answer == ex.answer and d.kind == ex.kind,
            what,
            f"{d!r} is not a passing trace of {ex!r}",
        )
    for kind in KINDS:
        n = sum(1 for d in got if d.kind == kind)
        expect_true(n <= per_kind, what, f"{n} demos of kind {kind}, max_per_kind={per_kind}: {got!r}")


@pytest.mark.promise("bootstrap_demos.one_rollout_per_example")
@given(seeds, train_specs, program_specs, param_specs, meter_specs, st.integers(0, 3), st.booleans())
@example(1, [("A", 0)] * 5, ([], [], []), {"floor": 1.0, "cap": 1.0}, (2, 7), 1, False)
@example(2, [("B", 3), 0, ("C", 1), 0], ([], [], []), None, (0, 0), 2, True)
def test_one_rollout_per_training_example(
    student, lab, seed, tspec, pspec, parspec, mspec, per_kind, keep_all
):
    """One rollout per training example is charged on the meter, with the rollout's tokens"""
    mspec = mspec or (0, 0)
    _, _, meter, train, prog, what = _run(
        student, lab, seed, tspec, pspec, parspec, mspec, per_kind, keep_all
    )
    want = (mspec[0] + len(train), mspec[1] + sum(_tokens(lab, prog, ex) for ex in train))
    expect_equal((meter.rollouts, meter.tokens), want, what + ": (meter.rollouts, meter.tokens) after")


@pytest.mark.promise("bootstrap_demos.keep_all")
@given(seeds, train_specs, program_specs, param_specs, st.integers(1, 3))
@example(2, [("A", 0)] * 5 + [("D", 1)] * 2, ([], [], []), {"base": 0.5, "floor": 0.0, "cap": 1.0}, 2)
def test_keep_all_keeps_the_first_examples_of_each_kind(student, lab, seed, tspec, pspec, parspec, per_kind):
    """With keep_all the first max_per_kind examples of each kind are kept, failing ones with correct=False"""
    got, _, _, train, _, what = _run(student, lab, seed, tspec, pspec, parspec, None, per_kind, True)
    seen, want_ids = {}, []
    for ex in train:
        if seen.get(ex.kind, 0) < per_kind:
            seen[ex.kind] = seen.get(ex.kind, 0) + 1
            want_ids.append(ex.id)
    expect_equal([d.id for d in got], want_ids, what + ": the ids of the demos")
    by_id = {ex.id: ex for ex in train}
    for d in got:
        expect_true(d.kind == by_id[d.id].kind, what, f"{d!r} does not have the kind of {by_id[d.id]!r}")


@pytest.mark.promise("bootstrap_demos.kept_failures")
@given(seeds, train_specs, program_specs, param_specs, st.integers(1, 3))
@example(2, [("A", 0)] * 5 + [("D", 1)] * 2, ([], [], []), {"base": 0.5, "floor": 0.0, "cap": 1.0}, 2)
def test_kept_failures_carry_their_output(student, lab, reference, seed, tspec, pspec, parspec, per_kind):
    """Under keep_all every demo is Demo(ex.id, ex.kind, t.output, t.correct): a failing trace keeps its
    own wrong output and correct=False, as the reference's"""
    got, _, _, _, _, what = _run(student, lab, seed, tspec, pspec, parspec, None, per_kind, True)
    want = _reference_demos(reference, seed, tspec, pspec, parspec, per_kind, True)
    expect_equal(
        [(d.id, d.kind, d.answer, d.correct) for d in got],
        [(d.id, d.kind, d.answer, d.correct) for d in want],
        what + "\n  (id, kind, answer, correct)",
    )
    expect_equal(got, [lab.Demo(d.id, d.kind, d.answer, d.correct) for d in want], what + " (Demo objects)")


@pytest.mark.promise("bootstrap_demos.passing_within_cap")
@given(seeds, train_specs, st.integers(1, 3))
@example(5, [("A", 2), 0, ("D", 1), 0, 2], 3)
def test_a_model_that_is_always_right(student, lab, seed, tspec, per_kind):
    """When every rollout passes, the demos are the first examples of each kind with their answers, and
    each rollout draws one random number"""
    params = {"floor": 1.0, "cap": 1.0}
    spec = ([], [], [])
    got, rng, _, train, _, what = _run(student, lab, seed, tspec, spec, params, None, per_kind, False)
    seen, want = {}, []
    for ex in train:
        if seen.get(ex.kind, 0) < per_kind:
            seen[ex.kind] = seen.get(ex.kind, 0) + 1
            want.append(lab.Demo(ex.id, ex.kind, ex.answer, True))
    expect_equal(got, want, what)
    replay = random.Random(seed)
    for _ in train:
        replay.random()
    expect_true(
        rng.getstate() == replay.getstate(),
        what,
        f"the rng should have drawn exactly {len(train)} random() values (one per rollout)",
    )


@pytest.mark.promise("bootstrap_demos.zero_cap_or_empty")
@given(seeds, train_specs, program_specs, st.booleans())
@example(0, [("A", 1), ("A", 2), ("B", 0)], ([], [], []), False)
@settings(max_examples=4)  # two calls per example; the @example is the plain case
def test_no_demos_from_a_zero_cap_or_an_empty_train(student, lab, reference, seed, tspec, pspec, keep_all):
    """max_per_kind=0 (with a model that is always right) and an empty train give [], after one rollout
    per example all the same"""
    params = {"floor": 1.0, "cap": 1.0}
    for spec, per_kind in ((tspec, 0), ([], 2)):
        got, rng, meter, train, _, what = _run(
            student, lab, seed, spec, pspec, params, (0, 0), per_kind, keep_all
        )
        replay = random.Random(seed)
        for _ in train:
            replay.random()
        expect_equal(got, [], what)
        expect_true(
            meter.rollouts == len(train) and rng.getstate() == replay.getstate(),
            what,
            f"{len(train)} rollouts (one random() each) should still be made: meter {meter!r}",
        )


@pytest.mark.promise("bootstrap_demos.unchanged")
@given(seeds, train_specs, program_specs, st.integers(0, 3), st.booleans())
@example(4, [("A", 0), ("B", 1), ("A", 2)], (["Solve", "units"], ["Solve"], [("A", True)]), 1, False)
@settings(max_examples=3)  # the @example walks the whole path; a change shows at once
def test_prog_and_train_are_not_changed(student, reference, lab, seed, tspec, pspec, per_kind, keep_all):
    """prog and train are not changed by the call"""
    _pin(student, reference)
    train, prog = _train(lab, tspec), _program(lab, pspec)
    before = (list(train), dict(prog.instructions), prog.demos)
    what = _what(prog, train, seed, None, None, per_kind, keep_all)
    student.bootstrap_demos(prog, train, random.Random(seed), max_per_kind=per_kind, keep_all=keep_all)
    changed = [name for name in ("0", "1", "prog", "train") if name in student.last_changed]
    expect_true(
        (list(train), dict(prog.instructions), prog.demos) == before and not changed,
        what,
        f"the call changed its arguments {changed or '(prog or train)'}",
    )
