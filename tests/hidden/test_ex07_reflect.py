"""Exercise 7 (hidden): reflect_update, against the reference and by what its docstring promises."""

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from grader.expect import call, expect_equal, expect_pinned, expect_true

pytestmark = pytest.mark.exercise(7)


MODULES = ("parse", "answer")
MODULE_OF = {"A": "parse", "B": "parse", "C": "parse", "D": "answer", "E": "answer", "F": "answer"}
RULES = {"A": "units", "B": "negatives", "C": "dates", "D": "abbrev", "E": "currency", "F": "ties"}
TAILS = ("", "the task.", "carefully", "step.", "now")


@st.composite
def instructions(draw):
    words = draw(st.lists(st.sampled_from(sorted(RULES.values())), unique=True, max_size=4))
    tail = draw(st.sampled_from(TAILS))
    return " ".join(["Solve"] + words + ([tail] if tail else []))


# One trace: (kind, correct, stated), stated = the rule was in the instruction that produced it.
trace_specs = st.lists(st.tuples(st.sampled_from(sorted(RULES)), st.booleans(), st.booleans()), max_size=10)


def build(lab, specs):
    traces = []
    for i, (kind, correct, stated) in enumerate(specs):
        m = MODULE_OF[kind]
        prog = lab.Program(
            {x: "Solve " + (RULES[kind] if stated and x == m else "the task.") for x in MODULES}
        )
        ex = lab.Example(i, kind, i % 4)
        out = ex.answer if correct else (ex.answer + 1) % 4
        traces.append(
            lab.Trace(ex, m, out, correct, lab.feedback_text(prog, ex, correct), f"answer {out}", 30)
        )
    return traces


def asked(specs, module):
    """How often the failures of `module` ask for each rule word."""
    counts = {}
    for kind, correct, stated in specs:
        if MODULE_OF[kind] == module and not correct and not stated:
            counts[RULES[kind]] = counts.get(RULES[kind], 0) + 1
    return counts


def _pin(student, reference):
    """Each property below also pins two updates: the instruction unchanged satisfies most of them."""
    asks = build(
        reference, [("A", False, False), ("C", False, False), ("A", False, False), ("B", True, False)]
    )
    other = build(reference, [("D", False, False), ("F", False, False), ("A", False, False)])
    expect_pinned(
        student, reference, "reflect_update", ("Solve the task.", asks, "parse"), ("Solve", other, "answer")
    )


def reflect(student, instruction, traces, module, specs):
    got = student.reflect_update(instruction, traces, module)
    what = call("reflect_update", instruction, f"<traces (kind, correct, rule stated): {specs}>", module)
    expect_true(type(got) is str, what, f"expected a str, got {got!r}")
    return got, what


@given(instructions(), trace_specs, st.sampled_from(MODULES))
def test_matches_reference(lab, student, reference, instruction, specs, module):
    """reflect_update gives the reference's instruction."""
    traces = build(lab, specs)
    got, what = reflect(student, instruction, traces, module, specs)
    expect_equal(got, reference.reflect_update(instruction, build(lab, specs), module), what)


@given(instructions(), trace_specs, st.sampled_from(MODULES))
def test_adds_the_most_asked_fresh_word(lab, student, instruction, specs, module):
    """The word added is the fresh word that failures ask for most often (ties alphabetical)."""
    got, what = reflect(student, instruction, build(lab, specs), module, specs)
    counts = asked(specs, module)
    fresh = sorted((w for w in counts if w not in instruction.split()), key=lambda w: (-counts[w], w))
    want = instruction.rstrip(".") + " " + fresh[0] if fresh else instruction
    expect_equal(got, want, what)


@given(instructions(), trace_specs, st.sampled_from(MODULES))
def test_unchanged_or_one_word_appended(lab, student, reference, instruction, specs, module):
    """The result is the instruction unchanged, or it without its trailing '.' plus one asked-for word."""
    _pin(student, reference)
    got, what = reflect(student, instruction, build(lab, specs), module, specs)
    if got == instruction:
        return
    base = instruction.rstrip(".") + " "
    word = got[len(base) :]
    expect_true(got.startswith(base), what, f"got {got!r}, which does not start with {base!r}")
    expect_true(word in asked(specs, module), what, f"added {word!r}, which no failure of {module} asks for")
    expect_true(word not in instruction.split(), what, f"added {word!r}, which the instruction already has")


@given(instructions(), trace_specs)
def test_other_modules_are_ignored(lab, student, reference, instruction, specs):
    """Traces of the other module do not change the result."""
    _pin(student, reference)
    for module in MODULES:
        mine = [s for s in specs if MODULE_OF[s[0]] == module]
        got, what = reflect(student, instruction, build(lab, specs), module, specs)
        alone, what_alone = reflect(student, instruction, build(lab, mine), module, mine)
        expect_true(
            got == alone,
            what,
            f"got {got!r}, but without the other module's traces {what_alone} gives {alone!r}",
        )


@given(instructions(), trace_specs, st.sampled_from(MODULES), st.randoms(use_true_random=False))
def test_only_failures_count_and_order_does_not_matter(
    lab, student, reference, instruction, specs, module, shuffler
):
    """Correct traces and the order of the traces do not change the result."""
    _pin(student, reference)
    got, what = reflect(student, instruction, build(lab, specs), module, specs)
    fails = [s for s in specs if not s[1]]
    shuffler.shuffle(fails)
    got2, what2 = reflect(student, instruction, build(lab, fails), module, fails)
    expect_true(got == got2, what, f"got {got!r}, but the failures alone, reordered, {what2} give {got2!r}")


@given(instructions(), st.lists(st.sampled_from(sorted(RULES)), max_size=6), st.sampled_from(MODULES))
def test_noise_failures_ask_for_nothing(lab, student, reference, instruction, kinds, module):
    """Failures whose feedback says the rule is stated (noise) leave the instruction unchanged."""
    _pin(student, reference)
    specs = [(k, False, True) for k in kinds] + [(k, True, False) for k in kinds]
    got, what = reflect(student, instruction, build(lab, specs), module, specs)
    expect_equal(got, instruction, what)


def test_rollout_traces_match_reference(lab, student, reference):
    """On traces from real rollouts, reflect_update gives the reference's instruction."""
    data = lab.make_dataset(40, seed=5)
    for seed in range(6):
        rng = random.Random(seed)
        prog = lab.Program({"parse": "Solve dates", "answer": "Solve the task."})
        for step in range(4):
            module = MODULES[step % 2]
            batch = rng.sample(data, 5)
            traces = [lab.rollout(prog, ex, rng) for ex in batch]
            text = prog.instructions[module]
            got = student.reflect_update(text, traces, module)
            want = reference.reflect_update(text, traces, module)
            feedback = [t.feedback for t in traces]
            expect_equal(
                got, want, call("reflect_update", text, f"<traces with feedback {feedback}>", module)
            )
            prog = prog.with_instruction(module, want)
