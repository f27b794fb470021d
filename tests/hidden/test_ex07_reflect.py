"""Exercise 7 (hidden): reflect_update, against the reference and by what its docstring promises."""

import random
import weakref

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from grader.expect import call, expect_equal, expect_true

pytestmark = pytest.mark.exercise(7)


MODULES = ("parse", "answer")
MODULE_OF = {"A": "parse", "B": "parse", "C": "parse", "D": "answer", "E": "answer", "F": "answer"}
RULES = {"A": "units", "B": "negatives", "C": "dates", "D": "abbrev", "E": "currency", "F": "ties"}
TAILS = ("", "the task.", "carefully", "step.", "now", "now...")
# Words that hold a rule word without being it: punctuation attached, or the rule word inside a longer word.
LOOKALIKES = ("dates.", "updates", "units,", "abbreviated", "properties", "(currency)")


@st.composite
def instructions(draw):
    words = draw(
        st.lists(st.sampled_from(sorted(RULES.values()) + list(LOOKALIKES)), unique=True, max_size=4)
    )
    tail = draw(st.sampled_from(TAILS))
    return " ".join(["Solve"] + words + ([tail] if tail else []))


# One trace: (kind, correct, stated[, module]), stated = the rule was in the instruction that produced
# it; module, where given, is the trace's module field when it is not its example's kind's module (a
# trace counts by t.module, whatever its example's kind).
kinds = st.sampled_from(sorted(RULES))
trace_specs = st.lists(
    st.one_of(
        st.tuples(kinds, st.booleans(), st.booleans()),
        st.tuples(kinds, st.booleans(), st.booleans(), st.sampled_from(MODULES)),
    ),
    max_size=10,
)


def module_of(spec):
    """The module field of the trace a spec builds."""
    return spec[3] if len(spec) > 3 else MODULE_OF[spec[0]]


def build(lab, specs):
    traces = []
    for i, spec in enumerate(specs):
        kind, correct, stated = spec[:3]
        m = MODULE_OF[kind]
        prog = lab.Program(
            {x: "Solve " + (RULES[kind] if stated and x == m else "the task.") for x in MODULES}
        )
        ex = lab.Example(i, kind, i % 4)
        out = ex.answer if correct else (ex.answer + 1) % 4
        feedback = lab.feedback_text(prog, ex, correct)
        traces.append(lab.Trace(ex, module_of(spec), out, correct, feedback, f"answer {out}", 30))
    return traces


def asked(specs, module):
    """How often the failures of `module` ask for each rule word."""
    counts = {}
    for spec in specs:
        kind, correct, stated = spec[:3]
        if module_of(spec) == module and not correct and not stated:
            counts[RULES[kind]] = counts.get(RULES[kind], 0) + 1
    return counts


def _allowed(instruction, specs, module):
    """The word lists a value check accepts: the instruction's words, plus the most asked fresh word (any
    of them where several are asked equally often: the tie rule is the ties_alphabetical edge's)."""
    counts = asked(specs, module)
    fresh = {w: c for w, c in counts.items() if w not in instruction.split()}
    if not fresh:
        return [_words(instruction)]
    top = max(fresh.values())
    return [_words(instruction) + [w] for w in sorted(fresh) if fresh[w] == top]


def _lab_noise(instruction, specs):
    """The specs a value check uses: a noise failure only where the instruction names its rule word, as
    in the lab (noise feedback means the rule was stated); noise naming a missing word is the
    noise_asks_nothing edge's."""
    return [s for s in specs if s[1] or not s[2] or RULES[s[0]] in instruction.split()]


def _words(text):
    """An instruction's words, its periods left out: the value checks compare which word is added, and
    leave how the '.' before it is handled to the trailing_dots promise."""
    return text.replace(".", "").split() if isinstance(text, str) else text


_WORKS: weakref.WeakSet = weakref.WeakSet()  # the students whose reflect_update passed _works


def _works(student, reference):
    """A guard of the properties below, which the instruction returned unchanged satisfies too: one
    failure of the parse module that asks for a missing rule word must get that word added at the end
    (every answer the docstring allows does). It pins no tie, dot or module rule, so a mistake costs the
    checks of the promise it breaks, not these."""
    if student in _WORKS:
        return
    for kind in ("A", "C"):
        specs = [(kind, False, False)]
        got, what = reflect(student, "Solve", build(reference, specs), "parse", specs)
        expect_true(
            got.split()[-1:] == [RULES[kind]],
            what,
            f"got {got!r}: the one failure asks for {RULES[kind]!r}, which should end the instruction",
        )
    _WORKS.add(student)


def reflect(student, instruction, traces, module, specs):
    got = student.reflect_update(instruction, traces, module)
    what = call("reflect_update", instruction, f"<traces (kind, correct, rule stated): {specs}>", module)
    expect_true(type(got) is str, what, f"expected a str, got {got!r}")
    return got, what


@pytest.mark.promise("reflect_update.most_asked")
@given(instructions(), trace_specs, st.sampled_from(MODULES))
def test_matches_reference(lab, student, reference, instruction, specs, module):
    """reflect_update gives the reference's instruction (its words; of words asked equally often, any)."""
    specs = _lab_noise(instruction, specs)
    traces = build(lab, specs)
    got, what = reflect(student, instruction, traces, module, specs)
    want = reference.reflect_update(instruction, build(lab, specs), module)
    allowed = _allowed(instruction, specs, module)
    expect_true(
        _words(got) in allowed,
        what,
        f"got {got!r}; the reference gives {want!r} (words of equally asked ones may differ, periods aside)",
    )


@pytest.mark.promise("reflect_update.most_asked")
@given(instructions(), trace_specs, st.sampled_from(MODULES))
def test_adds_the_most_asked_fresh_word(lab, student, instruction, specs, module):
    """The word added is the fresh word that failures ask for most often (ties alphabetical)."""
    specs = _lab_noise(instruction, specs)
    got, what = reflect(student, instruction, build(lab, specs), module, specs)
    allowed = _allowed(instruction, specs, module)
    expect_true(
        _words(got) in allowed,
        what,
        f"got {got!r}; its words (periods aside) should be one of {allowed}",
    )


@pytest.mark.promise("reflect_update.appends_word")
@given(instructions(), trace_specs, st.sampled_from(MODULES))
def test_unchanged_or_one_word_appended(lab, student, reference, instruction, specs, module):
    """The result is the instruction's words unchanged, or them plus one asked-for word at the end."""
    _works(student, reference)
    specs = _lab_noise(instruction, specs)
    got, what = reflect(student, instruction, build(lab, specs), module, specs)
    if _words(got) == _words(instruction):
        return
    word = got.split()[-1] if got.split() else ""
    expect_true(
        _words(got) == _words(instruction) + [word],
        what,
        f"got {got!r}, which is not the words of {instruction!r} and one more",
    )
    expect_true(word in asked(specs, module), what, f"added {word!r}, which no failure of {module} asks for")
    expect_true(word not in instruction.split(), what, f"added {word!r}, which the instruction already has")


@pytest.mark.promise("reflect_update.this_module_only")
@given(instructions(), trace_specs)
def test_other_modules_are_ignored(lab, student, reference, instruction, specs):
    """Traces of the other module do not change the result."""
    _works(student, reference)
    for module in MODULES:
        mine = [s for s in specs if module_of(s) == module]
        got, what = reflect(student, instruction, build(lab, specs), module, specs)
        alone, what_alone = reflect(student, instruction, build(lab, mine), module, mine)
        expect_true(
            got == alone,
            what,
            f"got {got!r}, but without the other module's traces {what_alone} gives {alone!r}",
        )


@pytest.mark.promise("reflect_update.failures_only")
@given(instructions(), trace_specs, st.sampled_from(MODULES))
def test_correct_traces_are_ignored(lab, student, reference, instruction, specs, module):
    """Correct traces do not change the result."""
    _works(student, reference)
    got, what = reflect(student, instruction, build(lab, specs), module, specs)
    fails = [s for s in specs if not s[1]]
    got2, what2 = reflect(student, instruction, build(lab, fails), module, fails)
    expect_true(got == got2, what, f"got {got!r}, but the failures alone {what2} give {got2!r}")


@pytest.mark.promise("reflect_update.order_free")
@given(instructions(), trace_specs, st.sampled_from(MODULES), st.randoms(use_true_random=False))
def test_order_of_the_traces_does_not_matter(lab, student, reference, instruction, specs, module, shuffler):
    """The order of the traces does not change the result."""
    _works(student, reference)
    got, what = reflect(student, instruction, build(lab, specs), module, specs)
    shuffled = list(specs)
    shuffler.shuffle(shuffled)
    got2, what2 = reflect(student, instruction, build(lab, shuffled), module, shuffled)
    expect_true(got == got2, what, f"got {got!r}, but the same traces reordered {what2} give {got2!r}")


@pytest.mark.promise("reflect_update.noise_asks_nothing")
@given(instructions(), st.lists(st.sampled_from(sorted(RULES)), max_size=6), st.sampled_from(MODULES))
@example("Solve", ["A", "C", "C"], "parse")
def test_noise_failures_ask_for_nothing(lab, student, reference, instruction, kinds, module):
    """Failures whose feedback says the rule is stated (noise) leave the instruction unchanged, even one
    that does not name their rule."""
    _works(student, reference)
    specs = [(k, False, True) for k in kinds] + [(k, True, False) for k in kinds]
    got, what = reflect(student, instruction, build(lab, specs), module, specs)
    expect_equal(_words(got), _words(instruction), what + ": the words of the instruction (periods left out)")


@pytest.mark.promise("reflect_update.most_asked")
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


def fails_asking(lab, kinds):
    """Failing traces, one per kind, each asking for its kind's rule word (never stated)."""
    specs = [(k, False, False) for k in kinds]
    return build(lab, specs), specs


@pytest.mark.promise("reflect_update.ties_alphabetical")
@pytest.mark.parametrize(
    "kinds",
    ["AC", "CA", "BAC", "CBA", "EFD", "FDE", "AACC", "CCAA", "BBAAC"],
)
def test_ties_go_to_the_alphabetically_first_word(lab, student, reference, kinds):
    """Equally asked words: the alphabetically first is added, whatever the order they were asked in."""
    module = MODULE_OF[kinds[0]]
    traces, specs = fails_asking(lab, kinds)
    got, what = reflect(student, "Solve", traces, module, specs)
    expect_equal(got, reference.reflect_update("Solve", fails_asking(lab, kinds)[0], module), what)


@pytest.mark.promise("reflect_update.skips_present_words")
@pytest.mark.parametrize(
    ("instruction", "kinds", "module"),
    [
        ("Solve units now.", "AAB", "parse"),
        ("Solve negatives units", "BBBAAC", "parse"),
        ("Solve abbrev currency ties now.", "DEF", "answer"),
        ("Solve currency now", "EEEDF", "answer"),
    ],
)
def test_words_already_there_are_skipped(lab, student, reference, instruction, kinds, module):
    """A word the instruction already has is passed over for the next most asked one (or none)."""
    _works(student, reference)
    traces, specs = fails_asking(lab, kinds)
    got, what = reflect(student, instruction, traces, module, specs)
    expect_equal(got, reference.reflect_update(instruction, fails_asking(lab, kinds)[0], module), what)


@pytest.mark.promise("reflect_update.whole_words")
@pytest.mark.parametrize(
    ("instruction", "kinds", "module"),
    [
        ("Solve updates", "C", "parse"),
        ("Solve dates.", "CA", "parse"),
        ("Check units, then solve", "A", "parse"),
        ("Solve properties", "F", "answer"),
        ("Solve abbreviated (currency)", "DE", "answer"),
    ],
)
def test_present_means_a_whole_word(lab, student, reference, instruction, kinds, module):
    """A rule word is present only as a whole word of instruction.split(): "updates" or "dates." is not
    "dates", so "dates" is still added."""
    traces, specs = fails_asking(lab, kinds)
    got, what = reflect(student, instruction, traces, module, specs)
    expect_equal(got, reference.reflect_update(instruction, fails_asking(lab, kinds)[0], module), what)


@pytest.mark.promise("reflect_update.this_module_only")
@pytest.mark.parametrize(
    ("specs", "module", "word"),
    [
        (
            [("A", False, False, "answer"), ("A", False, False, "answer"), ("D", False, False)],
            "answer",
            "units",
        ),
        (
            [("D", False, False, "parse"), ("D", False, False, "parse"), ("B", False, False)],
            "parse",
            "abbrev",
        ),
        (
            [("C", False, False, "answer"), ("C", False, False, "answer"), ("A", False, False)],
            "parse",
            "units",
        ),
    ],
)
def test_a_trace_counts_for_its_module_field(lab, student, reference, specs, module, word):
    """A failing trace counts for the module its t.module names, whatever its example's kind."""
    _works(student, reference)
    got, what = reflect(student, "Solve", build(lab, specs), module, specs)
    expect_equal(_words(got), ["Solve", word], what + ": the words of the instruction")


@pytest.mark.promise("reflect_update.trailing_dots")
@pytest.mark.parametrize(
    ("instruction", "kinds"),
    [("Solve the task...", "A"), ("Solve..", "CC"), ("Solve. Be careful.", "B"), ("Solve", "A")],
)
def test_every_trailing_dot_goes_before_the_word(lab, student, reference, instruction, kinds):
    """The word is appended to instruction.rstrip("."): every trailing '.' goes, inner ones stay."""
    _works(student, reference)
    traces, specs = fails_asking(lab, kinds)
    got, what = reflect(student, instruction, traces, "parse", specs)
    expect_equal(got, instruction.rstrip(".") + " " + RULES[kinds[0]], what)


@pytest.mark.promise("reflect_update.unchanged_as_was")
@pytest.mark.parametrize(
    ("instruction", "specs", "module"),
    [
        ("Solve the task.", [], "parse"),
        ("Solve the task...", [("A", False, True), ("B", True, False)], "parse"),
        ("Solve units now.", [("A", False, False), ("D", False, False)], "parse"),
        ("Solve ties carefully.", [("F", False, False), ("F", False, False), ("A", False, False)], "answer"),
        ("", [], "answer"),
    ],
)
def test_unchanged_instruction_comes_back_as_it_was(lab, student, reference, instruction, specs, module):
    """No traces, or no failure asking for a missing word: the instruction as it was, trailing '.' and all."""
    _works(student, reference)
    got, what = reflect(student, instruction, build(lab, specs), module, specs)
    expect_equal(got, instruction, what)


@pytest.mark.promise("reflect_update.traces_unchanged")
@example(instruction="Solve the task.", specs=[("B", True, False), ("A", False, False), ("C", False, False)])
@given(instructions(), trace_specs)
def test_traces_are_not_changed(lab, student, reference, instruction, specs):
    """reflect_update leaves the list of traces (and every trace) as it was."""
    _works(student, reference)
    traces = build(lab, specs)
    student.reflect_update(instruction, traces, "parse")
    what = call("reflect_update", instruction, f"<traces (kind, correct, rule stated): {specs}>", "parse")
    expect_true(traces == build(lab, specs) and "1" not in student.last_changed, what, "the traces changed")
