"""Exercise 1: p_correct, the mock model's chance of a right answer (visible examples).

With the default ToyParams: base 0.35, +0.40 when the kind's module instruction names the kind's rule
word, +0.10 per correct demo of the kind and -0.10 per wrong one (at most 2 of each count), the
penalties of CONFLICTS, -0.02 per instruction word beyond 10 and -0.01 per demo beyond 6, then clipped
to [0.02, 0.98].
"""

import pytest

from grader.expect import expect_close

pytestmark = pytest.mark.exercise(1)

KINDS = ("A", "B", "C", "D", "E", "F")
PLAIN = "Solve the task."


def _program(lab, parse=PLAIN, answer=PLAIN, demos=()):
    return lab.Program({"parse": parse, "answer": answer}, tuple(demos))


def _check_all_kinds(student, prog, want, params=None):
    """p_correct(prog, kind[, params]) for every kind, compared with `want` (kind -> probability)."""
    extra = () if params is None else (params,)
    got = {kind: student.p_correct(prog, kind, *extra) for kind in want}
    shown = "" if params is None else f"\n  params = {params!r}"
    expect_close(
        got,
        want,
        f"p_correct(prog, kind{', params' if extra else ''}) for each kind\n  prog = {prog!r}{shown}",
        rel=1e-9,
        abs=1e-12,
    )


@pytest.mark.promise("p_correct.formula")
def test_plain_program_gets_the_base_rate(student, lab):
    """No rule word, no demos, a short instruction: every kind gets params.base = 0.35 (0.5 with
    ToyParams(base=0.5))."""
    _check_all_kinds(student, _program(lab), {kind: 0.35 for kind in KINDS})
    _check_all_kinds(student, _program(lab), {kind: 0.5 for kind in KINDS}, lab.ToyParams(base=0.5))


@pytest.mark.promise("p_correct.rule_word")
def test_rule_word_helps_only_its_kind_in_its_module(student, lab):
    """'units' (rule of A) in the parse module adds 0.40 to A only; 'abbrev' (rule of D) does nothing in
    the parse module, because D is read by the answer module."""
    prog = _program(lab, parse="Solve units abbrev")
    want = {"A": 0.75, "B": 0.35, "C": 0.35, "D": 0.35, "E": 0.35, "F": 0.35}
    _check_all_kinds(student, prog, want)


@pytest.mark.promise("p_correct.demos")
def test_demos_of_the_kind_count(student, lab):
    """Good demos of the kind add 0.10 each and wrong ones cost 0.10 each; demos of other kinds do not
    matter (six demos: no context penalty yet)."""
    demos = [
        lab.Demo(1, "A", 0, True),
        lab.Demo(2, "A", 1, True),
        lab.Demo(3, "F", 2, True),
        lab.Demo(4, "A", 3, False),
        lab.Demo(5, "B", 0, True),
        lab.Demo(6, "C", 0, False),
    ]
    # A: 0.35 + 2 * 0.10 - 1 * 0.10; B, F: 0.35 + 0.10; C: 0.35 - 0.10
    want = {"A": 0.45, "B": 0.45, "C": 0.25, "D": 0.35, "E": 0.35, "F": 0.45}
    _check_all_kinds(student, _program(lab, demos=demos), want)


@pytest.mark.promise("p_correct.demo_cap")
def test_at_most_two_demos_of_each_count(student, lab):
    """At most two good and two wrong demos of the kind count."""
    demos = [lab.Demo(i, "C", 0, False) for i in range(1, 4)] + [
        lab.Demo(i, "E", 0, True) for i in range(4, 7)
    ]
    # C: three wrong demos, two count: 0.35 - 0.20; E: three good demos, two count: 0.35 + 0.20
    want = {"A": 0.35, "B": 0.35, "C": 0.15, "D": 0.35, "E": 0.55, "F": 0.35}
    _check_all_kinds(student, _program(lab, demos=demos), want)


@pytest.mark.promise("p_correct.conflicts")
def test_conflicting_keywords_cost_their_penalty(student, lab):
    """CONFLICTS: 'negatives' in the parse instruction costs kind C 0.30, 'abbrev' in the answer
    instruction costs kind F 0.25; the same words still help their own kinds (B and D)."""
    prog = _program(lab, parse="Solve negatives dates", answer="Solve abbrev ties")
    # C: 0.35 + 0.40 (dates) - 0.30; F: 0.35 + 0.40 (ties) - 0.25
    want = {"A": 0.35, "B": 0.75, "C": 0.45, "D": 0.75, "E": 0.35, "F": 0.5}
    _check_all_kinds(student, prog, want)


@pytest.mark.promise("p_correct.length_penalty")
def test_long_instructions_and_many_demos_are_penalized(student, lab):
    """A 12-word parse instruction costs its kinds 2 * 0.02; 8 demos cost every kind 2 * 0.01."""
    prog = _program(
        lab,
        parse="Solve units and keep every measured quantity in the same unit system",
        demos=[lab.Demo(i, "E", 0, True) for i in range(8)],
    )
    # A: 0.35 + 0.40 - 0.04 - 0.02; B, C: 0.35 - 0.04 - 0.02; E: 0.35 + 0.20 - 0.02; D, F: 0.35 - 0.02
    want = {"A": 0.69, "B": 0.29, "C": 0.29, "D": 0.33, "E": 0.53, "F": 0.33}
    _check_all_kinds(student, prog, want)


@pytest.mark.promise("p_correct.repeated_words")
def test_repeated_words_count_for_the_length(student, lab):
    """Every word counts, repeated ones too: 12 words, so -0.04 for the parse kinds."""
    prog = _program(lab, parse=" ".join(["units"] * 12))
    want = {"A": 0.71, "B": 0.31, "C": 0.31, "D": 0.35, "E": 0.35, "F": 0.35}
    _check_all_kinds(student, prog, want)


@pytest.mark.promise("p_correct.clipped")
def test_clipping_and_custom_params(student, lab):
    """The result is clipped to [params.floor, params.cap], and every field of ToyParams is used."""
    prog = _program(lab, parse="Solve units abbrev")
    # A: 0.9 + 0.4 = 1.3, clipped to the cap 0.98
    params = lab.ToyParams(base=0.9)
    _check_all_kinds(student, prog, {"A": 0.98, "B": 0.9, "C": 0.9, "D": 0.9, "E": 0.9, "F": 0.9}, params)
    # A: 0.75 clipped to the cap 0.6; the others: 0.35 raised to the floor 0.4
    params = lab.ToyParams(floor=0.4, cap=0.6)
    _check_all_kinds(student, prog, {"A": 0.6, "B": 0.4, "C": 0.4, "D": 0.4, "E": 0.4, "F": 0.4}, params)

    demos = [lab.Demo(i, "C", 0, False) for i in range(1, 3)] + [
        lab.Demo(i, "E", 0, True) for i in range(3, 5)
    ]
    # C: 0.05 - 0.20 < 0, clipped to the floor 0.02
    params = lab.ToyParams(base=0.05)
    want = {"A": 0.05, "B": 0.05, "C": 0.02, "D": 0.05, "E": 0.25, "F": 0.05}
    _check_all_kinds(student, _program(lab, demos=demos), want, params)

    demos = [
        lab.Demo(1, "A", 0, True),
        lab.Demo(2, "A", 1, True),
        lab.Demo(3, "F", 2, True),
        lab.Demo(4, "A", 3, False),
        lab.Demo(5, "B", 0, True),
        lab.Demo(6, "C", 0, False),
    ]
    params = lab.ToyParams(
        base=0.5,
        instr_gain=0.2,
        demo_gain=0.05,
        bad_demo_pen=0.15,
        length_pen=0.1,
        free_words=2,
        demo_len_pen=0.03,
        free_demos=5,
        floor=0.1,
        cap=0.9,
    )
    # A: 0.5 + 0.2 + 2 * 0.05 - 0.15 - 0.1 (3 words > 2) - 0.03 (6 demos > 5)
    want = {"A": 0.52, "B": 0.42, "C": 0.22, "D": 0.37, "E": 0.37, "F": 0.42}
    _check_all_kinds(student, _program(lab, parse="Solve units now", demos=demos), want, params)
