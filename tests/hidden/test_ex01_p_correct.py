"""Exercise 1: p_correct (hidden checks: reference comparisons and properties)."""

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from grader.expect import expect_close, expect_pinned

pytestmark = pytest.mark.exercise(1)

KINDS = ("A", "B", "C", "D", "E", "F")
RULE_WORDS = ("units", "negatives", "dates", "abbrev", "currency", "ties")
FILLERS = ("Solve", "the", "task", "now", "please", "carefully", "persona", "step")
# Near-misses of rule words: not whole words equal to one (the words are value.split()).
NEAR_MISSES = (
    "units.",
    "Units",
    "subunits",
    "dates,",
    "DATES",
    "abbrev:",
    "ties!",
    "currency.",
    "negativesx",
)
WORDS = RULE_WORDS + FILLERS + NEAR_MISSES
FILLER = "please"  # a word that is no rule word and no conflict keyword
CONFLICT_KEYS = (("negatives", "C"), ("abbrev", "F"))  # the keys of lab.CONFLICTS

instruction_words = st.lists(st.sampled_from(WORDS), max_size=14)
demo_specs = st.lists(st.tuples(st.sampled_from(KINDS), st.booleans()), max_size=10)
param_specs = st.fixed_dictionaries(
    {
        "base": st.floats(0.0, 1.0),
        "instr_gain": st.floats(0.0, 0.6),
        "demo_gain": st.floats(0.0, 0.3),
        "bad_demo_pen": st.floats(0.0, 0.3),
        "length_pen": st.floats(0.0, 0.1),
        "free_words": st.integers(0, 12),
        "demo_len_pen": st.floats(0.0, 0.1),
        "free_demos": st.integers(0, 8),
        "floor": st.floats(0.0, 0.3),
        "cap": st.floats(0.7, 1.0),
    }
)


def _demos(lab, specs):
    return tuple(lab.Demo(i, kind, i % 4, ok) for i, (kind, ok) in enumerate(specs))


def _program(lab, parse_words, answer_words, demo_specs=()):
    return lab.Program(
        {"parse": " ".join(parse_words), "answer": " ".join(answer_words)}, _demos(lab, demo_specs)
    )


def _pin(student, reference):
    """Each property below also pins two accuracies: a constant within [floor, cap] satisfies them."""
    prog = reference.Program(
        {"parse": "Solve units", "answer": "Solve carefully"}, _demos(reference, [("D", True)])
    )
    expect_pinned(
        student, reference, "p_correct", (prog, "A"), (prog, "D"), (prog, "C", reference.ToyParams(base=0.6))
    )


def _unclipped(lab, **fields):
    """ToyParams whose floor and cap never bind, so differences show the raw model."""
    return lab.ToyParams(floor=-100.0, cap=100.0, **fields)


def _distinct(words, *left_out):
    """The words of a value check's instruction: each once (how a repeated word counts is the
    repeated_words edge's), without `left_out`."""
    return list(dict.fromkeys(w for w in words if w not in left_out))


def _within_cap(specs):
    """The demo specs a value check uses: at most two correct and two wrong demos of each kind (what a
    third one does is the demo_cap edge's)."""
    seen, out = {}, []
    for kind, ok in specs:
        if seen.get((kind, ok), 0) < 2:
            seen[(kind, ok)] = seen.get((kind, ok), 0) + 1
            out.append((kind, ok))
    return out


def _module_words(lab, kind, own, other):
    """(parse words, answer words) with `own` in the kind's module and `other` in the other one."""
    return (own, other) if lab.MODULE_OF[kind] == "parse" else (other, own)


# The value check's words: rule words, fillers and conflict keywords, no near-miss of a rule word (whether
# "units." or "Units" names "units" is the rule_word_whole_word edge's, drawn there).
PLAIN_WORDS = RULE_WORDS + FILLERS


def _expect_demo_effect(student, lab, kind, demo_specs, want, params):
    """p_correct of a program with `demo_specs` minus that of the same program without demos is `want`."""
    base = _program(lab, ["Solve"], ["Solve"], [])
    prog = _program(lab, ["Solve"], ["Solve"], demo_specs)
    diff = student.p_correct(prog, kind, params) - student.p_correct(base, kind, params)
    expect_close(
        diff,
        want,
        f"p_correct(prog, {kind!r}, params) - p_correct(no demos)\n  prog = {prog!r}\n  params = {params!r}",
        rel=1e-9,
        abs=1e-9,
    )


def _expect_length_penalty(student, lab, kind, own, added, params):
    """The kind's instruction `own`, then `own + added`: p_correct falls by length_pen for every word
    of the longer one beyond free_words that the shorter one did not already pay for."""
    short = _program(lab, *_module_words(lab, kind, own, ["Solve"]))
    long = _program(lab, *_module_words(lab, kind, own + added, ["Solve"]))
    n, pen, free = len(own), params.length_pen, params.free_words
    want = -pen * (max(0, n + len(added) - free) - max(0, n - free))
    diff = student.p_correct(long, kind, params) - student.p_correct(short, kind, params)
    expect_close(
        diff,
        want,
        f"p_correct(long, {kind!r}) - p_correct(short, {kind!r})\n"
        f"  long = {long!r}\n  short = {short!r}\n  params = {params!r}",
        rel=1e-9,
        abs=1e-9,
    )


@pytest.mark.promise("p_correct.formula")
@given(
    st.lists(st.sampled_from(PLAIN_WORDS), max_size=14),
    st.lists(st.sampled_from(PLAIN_WORDS), max_size=14),
    demo_specs,
    st.one_of(st.none(), param_specs),
)
def test_matches_reference_model(student, lab, reference, parse_words, answer_words, specs, fields):
    """The accuracy of every kind matches the reference model (programs, demos and parameters vary),
    where the model's value lies within [floor, cap]"""
    specs, parse_words, answer_words = _within_cap(specs), _distinct(parse_words), _distinct(answer_words)
    prog = _program(lab, parse_words, answer_words, specs)
    extra = () if fields is None else (lab.ToyParams(**fields),)
    ref_params = reference.ToyParams() if fields is None else reference.ToyParams(**fields)
    ref_prog = reference.Program(dict(prog.instructions), _demos(reference, specs))
    # Where the bounds bind, what the clip does is the clipped edge's: those kinds are left out here.
    raw = {
        kind: reference.p_correct(ref_prog, kind, _unclipped(reference, **_model_fields(fields)))
        for kind in KINDS
    }
    kinds = [kind for kind in KINDS if ref_params.floor < raw[kind] < ref_params.cap]
    got = {kind: student.p_correct(prog, kind, *extra) for kind in kinds}
    want = {kind: reference.p_correct(ref_prog, kind, ref_params) for kind in kinds}
    expect_close(
        got,
        want,
        f"p_correct(prog, kind{', params' if extra else ''}) for each kind\n"
        f"  prog = {prog!r}\n  params = {extra}",
        rel=1e-9,
        abs=1e-12,
    )


def _model_fields(fields):
    """The fields of ToyParams but its bounds."""
    return {k: v for k, v in (fields or {}).items() if k not in ("floor", "cap")}


@st.composite
def clip_bounds(draw):
    """(floor, cap) with floor <= cap, drawn so that they often bind on the model's values."""
    floor = draw(st.one_of(st.sampled_from((0.0, 0.35, 0.5, 0.75)), st.floats(0.0, 0.8)))
    cap = draw(st.one_of(st.sampled_from((floor, 0.35, 0.75, 1.0)), st.floats(floor, 1.0)))
    return floor, max(floor, cap)


@pytest.mark.promise("p_correct.clipped")
@given(st.sampled_from(KINDS), instruction_words, instruction_words, demo_specs, clip_bounds())
@example("A", ["units"], ["abbrev"], [("A", True), ("A", True)], (0.35, 0.35))
@example("B", ["units"] * 12, ["Solve"], [], (0.5, 0.9))
def test_clipped_to_floor_and_cap(student, lab, kind, parse_words, answer_words, specs, bounds):
    """The result is the model's value clipped to [params.floor, params.cap] (the same value with floor
    and cap that never bind, clipped)"""
    floor, cap = bounds
    prog = _program(lab, parse_words, answer_words, specs)
    params = lab.ToyParams(floor=floor, cap=cap)
    raw = student.p_correct(prog, kind, _unclipped(lab))
    p = student.p_correct(prog, kind, params)
    expect_close(
        p,
        min(cap, max(floor, raw)),
        f"p_correct(prog, {kind!r}, params), with p_correct(prog, {kind!r}, unclipped params) = {raw!r}\n"
        f"  prog = {prog!r}\n  params = {params!r}",
        rel=1e-9,
        abs=1e-12,
    )


@pytest.mark.promise("p_correct.rule_word")
@given(st.sampled_from(KINDS), instruction_words, instruction_words, demo_specs, st.floats(0.0, 0.6))
def test_rule_word_adds_instr_gain(student, lab, kind, own, other, specs, gain):
    """Naming the kind's rule word in the kind's module adds exactly instr_gain (before clipping)"""
    rule = lab.RULES[kind]
    own = _distinct(
        [w for w in own if w != rule and w not in NEAR_MISSES], FILLER
    )  # near-misses: their own check
    params = _unclipped(lab, instr_gain=gain)
    without = _program(lab, *_module_words(lab, kind, own + [FILLER], other), specs)
    with_rule = _program(lab, *_module_words(lab, kind, own + [rule], other), specs)
    p0 = student.p_correct(without, kind, params)
    p1 = student.p_correct(with_rule, kind, params)
    expect_close(
        p1 - p0,
        gain,
        f"p_correct(with rule) - p_correct(without), kind {kind!r}\n"
        f"  with = {with_rule!r}\n  without = {without!r}\n  params = {params!r}",
        rel=1e-9,
        abs=1e-9,
    )


@pytest.mark.promise("p_correct.demos")
@given(
    st.sampled_from(KINDS),
    st.integers(0, 5),
    st.integers(0, 5),
    demo_specs,
    st.floats(0.0, 0.3),
    st.floats(0.0, 0.3),
)
def test_good_and_bad_demos_of_the_kind_count(student, lab, kind, good, bad, others, gain, pen):
    """Good demos of the kind add demo_gain and wrong ones cost bad_demo_pen (two of each at most here),
    and demos of other kinds do not count"""
    good, bad = min(good, 2), min(bad, 2)  # a third is the demo_cap edge's
    params = _unclipped(lab, demo_gain=gain, bad_demo_pen=pen, free_demos=100)
    others = [(k, ok) for k, ok in others if k != kind]
    mine = [(kind, True)] * good + [(kind, False)] * bad
    _expect_demo_effect(student, lab, kind, others + mine, min(good, 2) * gain - min(bad, 2) * pen, params)


@pytest.mark.promise("p_correct.demo_cap")
@given(
    st.sampled_from(KINDS),
    st.integers(0, 4),
    st.integers(0, 4),
    st.booleans(),
    st.floats(0.01, 0.3),
    st.floats(0.01, 0.3),
)
@example("A", 1, 0, True, 0.1, 0.1)
@example("E", 0, 2, False, 0.1, 0.1)
def test_at_most_two_good_and_two_bad_demos_count(student, lab, kind, good, bad, more_good, gain, pen):
    """At most two good and two wrong demos of the kind count: a third and more change nothing"""
    good, bad = (good + 3, bad) if more_good else (good, bad + 3)
    params = _unclipped(lab, demo_gain=gain, bad_demo_pen=pen, free_demos=100)
    demos = [(kind, True)] * good + [(kind, False)] * bad
    _expect_demo_effect(student, lab, kind, demos, min(good, 2) * gain - min(bad, 2) * pen, params)


@pytest.mark.promise("p_correct.conflicts")
@given(st.sampled_from(CONFLICT_KEYS), instruction_words, instruction_words)
@example(("negatives", "C"), [], ["negatives", "abbrev"])
@example(("abbrev", "F"), ["abbrev"], ["Solve"])
def test_conflict_costs_only_its_kind(student, lab, conflict, own, other):
    """A conflicting keyword costs its penalty on its kind only (its own kind still gains)"""
    keyword, hurt = conflict
    pen = lab.CONFLICTS[conflict]
    helped = lab.KIND_OF_WORD[keyword]
    own = _distinct(
        [w for w in own if w != keyword and w not in NEAR_MISSES], FILLER
    )  # near-misses: their own check
    params = _unclipped(lab)
    without = _program(lab, *_module_words(lab, hurt, own + [FILLER], other))
    with_kw = _program(lab, *_module_words(lab, hurt, own + [keyword], other))
    for kind in KINDS:
        want = -pen if kind == hurt else params.instr_gain if kind == helped else 0.0
        diff = student.p_correct(with_kw, kind, params) - student.p_correct(without, kind, params)
        expect_close(
            diff,
            want,
            f"p_correct(with {keyword!r}, {kind!r}) - p_correct(without, {kind!r})\n"
            f"  with = {with_kw!r}\n  without = {without!r}",
            rel=1e-9,
            abs=1e-9,
        )


@pytest.mark.promise("p_correct.length_penalty")
@given(st.sampled_from(KINDS), instruction_words, st.integers(0, 6), st.integers(0, 12), st.floats(0.0, 0.1))
@example("A", ["units", "Solve", "the", "task", "now", "carefully", "step", "dates", "ties"], 1, 10, 0.02)
def test_length_penalty_per_word_beyond_free_words(student, lab, kind, own, extra, free, pen):
    """Every instruction word of the kind's module beyond free_words costs length_pen"""
    own = _distinct(own)
    params = _unclipped(lab, length_pen=pen, free_words=free)
    pads = [f"pad{i}" for i in range(extra)]  # words that are no rule word, no keyword, none of own
    _expect_length_penalty(student, lab, kind, own, pads, params)


@pytest.mark.promise("p_correct.repeated_words")
@given(st.sampled_from(KINDS), instruction_words, st.integers(2, 6), st.integers(0, 12), st.floats(0.01, 0.1))
@example("A", ["units"] * 9, 1, 10, 0.02)
@example("D", ["Solve", "abbrev", "abbrev"], 3, 4, 0.05)
def test_repeated_words_count_for_the_length(student, lab, kind, own, extra, free, pen):
    """A repeated word of the kind's instruction counts for the length penalty as often as it is there"""
    params = _unclipped(lab, length_pen=pen, free_words=free)
    _expect_length_penalty(student, lab, kind, own, [FILLER] * extra, params)


@pytest.mark.promise("p_correct.demo_length_penalty")
@given(st.sampled_from(KINDS), demo_specs, st.integers(0, 6), st.integers(0, 8), st.floats(0.0, 0.1))
@example("B", [("B", True), ("B", False)], 2, 3, 0.04)
def test_demo_length_penalty_beyond_free_demos(student, lab, kind, specs, extra, free, pen):
    """Every demo beyond free_demos costs demo_len_pen, whatever its kind"""
    params = _unclipped(lab, demo_len_pen=pen, free_demos=free)
    other_kind = next(k for k in KINDS if k != kind)
    few = _program(lab, ["Solve"], ["Solve"], specs)
    many = _program(lab, ["Solve"], ["Solve"], [(other_kind, True)] * extra + list(specs))
    n = len(specs)
    want = -pen * (max(0, n + extra - free) - max(0, n - free))
    diff = student.p_correct(many, kind, params) - student.p_correct(few, kind, params)
    expect_close(
        diff,
        want,
        f"p_correct(many demos, {kind!r}) - p_correct(fewer demos, {kind!r})\n"
        f"  many = {many!r}\n  few = {few!r}\n  params = {params!r}",
        rel=1e-9,
        abs=1e-9,
    )


@pytest.mark.promise("p_correct.only_own_module")
@given(st.sampled_from(KINDS), instruction_words, instruction_words, instruction_words, demo_specs)
@example("C", ["dates"], ["negatives", "dates"], ["Solve"], [])
@example("F", ["ties"], ["abbrev", "ties"], ["Solve"], [])
def test_only_the_kinds_module_matters(student, reference, lab, kind, own, other_a, other_b, specs):
    """Only the instruction of the kind's own module changes its accuracy"""
    _pin(student, reference)
    a = _program(lab, *_module_words(lab, kind, own, other_a), specs)
    b = _program(lab, *_module_words(lab, kind, own, other_b), specs)
    expect_close(
        student.p_correct(b, kind),
        student.p_correct(a, kind),
        f"p_correct(prog, {kind!r}) changed with the other module's instruction\n  a = {a!r}\n  b = {b!r}",
        rel=1e-12,
        abs=1e-12,
    )


@pytest.mark.promise("p_correct.rule_word_whole_word")
@given(
    st.sampled_from(KINDS),
    instruction_words,
    st.sampled_from(("{}.", "{},", "{}!", "sub{}", "{}x")),
    st.booleans(),
    st.floats(0.1, 0.6),
)
@example("A", ["Solve"], "{}.", False, 0.4)
@example("D", ["Solve"], "{}.", True, 0.4)
def test_rule_word_counts_only_as_a_whole_word(student, lab, kind, own, shape, upper, gain):
    """Only the rule word itself, as a whole word of value.split(), adds instr_gain: 'units.', 'Units' or
    'subunits' do not (each replaces a filler word, so the length penalty is the same)"""
    rule = lab.RULES[kind]
    near = rule.capitalize() if upper else shape.format(rule)
    own = _distinct([w for w in own if w.strip(".,:!").lower() != rule and rule not in w], FILLER)
    params = _unclipped(lab, instr_gain=gain)
    progs = {
        word: _program(lab, *_module_words(lab, kind, own + [word], ["Solve"]))
        for word in (FILLER, near, rule)
    }
    got = {word: student.p_correct(prog, kind, params) for word, prog in progs.items()}
    expect_close(
        [got[near] - got[FILLER], got[rule] - got[near]],
        [0.0, gain],
        f"[p(with {near!r}) - p(with {FILLER!r}), p(with {rule!r}) - p(with {near!r})], p = p_correct(prog, "
        f"{kind!r}, params)\n  programs = {list(progs.values())!r}\n  params = {params!r}",
        rel=1e-9,
        abs=1e-9,
    )
