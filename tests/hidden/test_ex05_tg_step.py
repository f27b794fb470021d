"""Exercise 5: tg_step (hidden checks: reference comparisons and properties)."""

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from grader.expect import expect_equal, expect_pinned, expect_true

pytestmark = pytest.mark.exercise(5)

RULE_WORDS = ("units", "negatives", "dates", "abbrev", "currency", "ties")
FILLERS = ("Solve", "the", "step", "now")

# A gradient as the critic writes it: distinct rule words, most asked first (any order here).
gradients = st.lists(st.sampled_from(RULE_WORDS), min_size=1, max_size=4, unique=True).map(
    lambda ws: "consider naming: " + ", ".join(ws)
)
# A value: one or more words, maybe ending in "task." (its '.' on a filler word: whether the rule words
# ending in '.' are named is the edge promise fresh_word_is_whole_word's, drawn there).
values = st.tuples(
    st.lists(st.sampled_from(RULE_WORDS + FILLERS), min_size=1, max_size=5),
    st.sampled_from(("", "task.")),
).map(lambda t: " ".join(t[0] + [t[1]]) if t[1] else " ".join(t[0]))
var_specs = st.tuples(values, st.booleans(), st.lists(gradients, max_size=4))
graph_specs = st.lists(
    st.tuples(st.sampled_from(("parse", "answer", "plan", "check", "route")), var_specs),
    min_size=1,
    max_size=4,
    unique_by=lambda t: t[0],
)


def _graph(mod, spec):
    return [(module, mod.TGVar(value, module, grad, list(grads))) for module, (value, grad, grads) in spec]


def _pin(student, reference):
    """The properties below that a step doing nothing (or clearing the gradients only) satisfies also pin
    two plain steps (no trailing '.', no tie, one module changes: the order of several is the form
    promise's; the frozen variable has no gradients): the result and every variable after it."""
    first = _graph(
        reference,
        [
            ("parse", ("Solve the task", True, ["consider naming: units", "consider naming: units, dates"])),
            ("answer", ("Solve", False, [])),
        ],
    )
    second = _graph(
        reference,
        [
            ("answer", ("Solve", True, ["consider naming: ties, abbrev", "consider naming: abbrev"])),
            ("parse", ("Solve units", True, [])),
        ],
    )
    expect_pinned(student, reference, "tg_step", (first,), (second,))


def _words(value):
    """A value's words, its periods left out: the value checks compare which words a step adds, and
    leave how the '.' before the new word is handled to the trailing_period promise."""
    return value.replace(".", "").split() if isinstance(value, str) else value


def _counted(value, grads):
    """The fresh words (not yet in the value) with their counts across the gradients, most asked first
    (ties alphabetical)."""
    counts = {}
    for g in grads:
        for word in g[len("consider naming: ") :].split(", "):
            counts[word] = counts.get(word, 0) + 1
    return [(counts[w], w) for w in sorted(counts, key=lambda w: (-counts[w], w)) if w not in value.split()]


def _core(spec):
    """The modules whose step the value checks compare: trainable, with no tie for the most asked fresh
    word (a tie is the ties_alphabetical promise's, a frozen variable frozen_unchanged's)."""
    out = set()
    for module, (value, grad, grads) in spec:
        fresh = _counted(value, grads)
        if grad and not (len(fresh) > 1 and fresh[0][0] == fresh[1][0]):
            out.add(module)
    return out


def _state(graph, modules):
    """The words of the values of `modules` after the step (the gradients, role and requires_grad are
    the unchanged promises')."""
    return [(module, _words(var.value)) for module, var in graph if module in modules]


def _step(student, lab, spec):
    graph = _graph(lab, spec)
    what = f"tg_step(graph)\n  graph = {graph!r}"
    return list(student.tg_step(graph)), graph, what


def _top_fresh(value, grads):
    """The most asked word not yet in the value (ties alphabetical), or None."""
    fresh = _counted(value, grads)
    return fresh[0][1] if fresh else None


# The most asked word is not in the last gradient's alphabetical lead: counting one gradient only, or
# each word once, adds 'abbrev'.
COUNTED = [("parse", ("Solve", True, ["consider naming: units", "consider naming: units, abbrev"]))]


@pytest.mark.promise("tg_step.most_asked_word")
@given(graph_specs)
@example(COUNTED)
def test_matches_reference(student, lab, reference, spec):
    """Every trainable variable whose most asked fresh word is not tied has the reference's value's words
    after the step"""
    _, graph, what = _step(student, lab, spec)
    ref_graph = _graph(reference, spec)
    reference.tg_step(ref_graph)
    core = _core(spec)
    expect_equal(_state(graph, core), _state(ref_graph, core), what + ": (module, value's words) after")


@pytest.mark.promise("tg_step.gradients_cleared")
@given(graph_specs)
@example([("parse", ("Solve units", False, ["consider naming: dates"])), ("answer", ("Solve", True, []))])
def test_every_gradient_is_cleared(student, reference, lab, spec):
    """After a step no variable has gradients left, whether it changed or not"""
    _pin(student, reference)
    _, graph, what = _step(student, lab, spec)
    expect_equal(
        [var.grads for _, var in graph], [[] for _ in graph], what + ": the gradients after the step"
    )


@pytest.mark.promise("tg_step.frozen_unchanged")
@given(graph_specs)
@example([("parse", ("Solve units", False, ["consider naming: dates"]))])
def test_frozen_variables_never_change(student, reference, lab, spec):
    """A variable with requires_grad=False keeps its value and is never listed as changed; no variable's
    role or requires_grad changes"""
    _pin(student, reference)
    got, graph, what = _step(student, lab, spec)
    for (module, (value, grad, _)), (_, var) in zip(spec, graph, strict=True):
        expect_equal(
            (var.role, var.requires_grad),
            (module, grad),
            what + f": (role, requires_grad) of {module!r} after",
        )
        if not grad:
            expect_equal(var.value, value, what + f": the value of the frozen {module!r} after the step")
            expect_true(module not in got, what, f"frozen {module!r} is listed as changed: {got!r}")


@pytest.mark.promise("tg_step.most_asked_word")
@given(graph_specs)
@example(
    [("answer", ("Solve the task.", True, ["consider naming: ties, abbrev", "consider naming: currency"]))]
)
@example(COUNTED)
def test_adds_the_most_asked_fresh_word(student, lab, spec):
    """A variable that may change gets its most-asked word not yet in its value after its value; the
    caller's TGVar objects change"""
    graph = _graph(lab, spec)
    tgvars = [var for _, var in graph]
    what = f"tg_step(graph)\n  graph = {graph!r}"
    student.tg_step(graph)
    core = _core(spec)
    for (module, (value, _, grads)), var in zip(spec, tgvars, strict=True):
        if module not in core:
            continue
        word = _top_fresh(value, grads)
        want = value if word is None else value.rstrip(".") + " " + word
        expect_equal(
            _words(var.value), _words(want), what + f": the words of {module!r}'s value after the step"
        )


@pytest.mark.promise("tg_step.returns_changed")
@given(graph_specs)
def test_returns_the_changed_modules(student, reference, lab, spec):
    """The result lists exactly the modules whose value changed"""
    _pin(student, reference)
    got, graph, what = _step(student, lab, spec)
    changed = [
        module for (module, (value, _, _)), (_, var) in zip(spec, graph, strict=True) if var.value != value
    ]
    expect_equal(sorted(got), sorted(changed), what + " (sorted)")


@pytest.mark.promise("tg_step.changed_in_graph_order")
@given(graph_specs)
@example(
    [
        ("route", ("Solve", True, ["consider naming: units"])),
        ("check", ("Solve", False, ["consider naming: dates"])),
        ("answer", ("Solve", True, ["consider naming: ties"])),
        ("parse", ("Solve", True, ["consider naming: dates"])),
    ]
)
def test_changed_modules_in_graph_order(student, lab, spec):
    """The changed modules are listed in graph order"""
    got, graph, what = _step(student, lab, spec)
    order = [module for module, _ in graph]
    expect_equal(list(got), sorted(got, key=lambda m: order.index(m) if m in order else -1), what)


@st.composite
def satisfied_vars(draw):
    """(value, gradients) where every word the gradients ask for is already a word of the value."""
    words = draw(st.lists(st.sampled_from(RULE_WORDS), min_size=1, max_size=4, unique=True))
    value = " ".join(["Solve"] + words + draw(st.lists(st.sampled_from(FILLERS), max_size=2)))
    grads = draw(
        st.lists(
            st.lists(st.sampled_from(words), min_size=1, max_size=3, unique=True).map(
                lambda ws: "consider naming: " + ", ".join(ws)
            ),
            min_size=1,
            max_size=3,
        )
    )
    return value, grads


@pytest.mark.promise("tg_step.no_fresh_word")
@given(graph_specs, satisfied_vars(), st.integers(0, 4))
def test_no_fresh_word_no_change(student, lab, spec, satisfied, where):
    """A variable whose asked words are all in its value keeps its value and is not listed as changed"""
    value, grads = satisfied
    module = "extra"
    spec = spec[:where] + [(module, (value, True, grads))] + spec[where:]
    got, graph, what = _step(student, lab, spec)
    var = dict(graph)[module]
    expect_equal((var.value, var.grads), (value, []), what + f": (value, grads) of {module!r} after the step")
    expect_true(module not in got, what, f"{module!r} did not change but is listed: {got!r}")


@pytest.mark.promise("tg_step.fresh_word_is_whole_word")
@given(graph_specs, st.sampled_from(RULE_WORDS), st.sampled_from(FILLERS), st.integers(0, 4))
@example([("parse", ("Solve", False, []))], "units", "Solve", 1)
def test_a_word_with_a_period_is_not_the_word(student, lab, spec, word, filler, where):
    """A value ending in 'units.' does not name 'units' (its words are value.split()): asked for, 'units'
    is added after the '.' is stripped, and the module is listed as changed"""
    value = f"{filler} {word}."
    module = "extra"
    spec = spec[:where] + [(module, (value, True, [f"consider naming: {word}"]))] + spec[where:]
    got, graph, what = _step(student, lab, spec)
    expect_equal(
        _words(dict(graph)[module].value),
        [filler, word, word],
        what + f": the words of {module!r}'s value after (periods left out)",
    )
    expect_true(module in got, what, f"{module!r} changed but is not listed: {got!r}")


@pytest.mark.promise("tg_step.ties_alphabetical")
@given(
    graph_specs,
    st.lists(st.sampled_from(RULE_WORDS), min_size=2, max_size=4, unique=True),
    st.integers(1, 2),
    st.integers(0, 4),
)
@example([], ["ties", "abbrev"], 1, 0)
def test_ties_go_alphabetically(student, lab, spec, tied, times, where):
    """Of fresh words asked equally often, the alphabetically first is added"""
    module = "extra"
    grads = [f"consider naming: {', '.join(tied)}"] * times
    spec = spec[:where] + [(module, ("Solve", True, grads))] + spec[where:]
    _, graph, what = _step(student, lab, spec)
    words = _words(dict(graph)[module].value)
    expect_equal(words, ["Solve", min(tied)], what + f": the words of {module!r}'s value after")


# Values with trailing periods (one or more, after a rule word or a filler) and inner ones (kept).
PERIOD_VALUES = (
    "Solve the task.",
    "Solve.",
    "Solve...",
    "Solve units.",
    "Solve e.g. this",
    "Solve v1.2 now.",
)


@pytest.mark.promise("tg_step.trailing_period")
@given(
    graph_specs,
    st.sampled_from(PERIOD_VALUES),
    st.sampled_from(("dates", "ties", "abbrev")),
    st.integers(0, 4),
)
@example([("parse", ("Solve", True, ["consider naming: units"]))], "Solve...", "dates", 1)
@example([], "Solve e.g. this", "ties", 0)
def test_the_trailing_period_goes(student, lab, spec, value, word, where):
    """The new value is value.rstrip('.') + ' ' + word: every trailing '.' goes, one inside stays"""
    module = "extra"
    spec = spec[:where] + [(module, (value, True, [f"consider naming: {word}"]))] + spec[where:]
    _, graph, what = _step(student, lab, spec)
    want = value.rstrip(".") + " " + word
    expect_equal(dict(graph)[module].value, want, what + f": the value of {module!r} after the step")
