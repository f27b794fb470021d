"""The corpus of realistic mistakes (tests/kit/mistakes/, issue 24): every one loads, costs points on its
own exercise and none on another; every exercise has at least four. And the runner itself, on fixture
corpora: a bad entry is named in one line, and a mistake that full marks or a broken shared helper
would hide is found; a label (given, or from the promise's kind) and a correct rewrite (issue 30) are
read, a correct rewrite that loses points is named, and the figures per label add up.

The corpus is graded as `grader grade --exercise ...` grades (the sandbox, the suites, the scoring) on
each mistake's own exercise and every exercise with a check that can reach its function
(grader.authoring.mistakes).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from grader.assignment.reference import parse_reference
from grader.authoring.mistakes import (
    CORPUS,
    Graded,
    Mistake,
    Promised,
    _groups,
    calls_of,
    combined_source,
    corpus_failures,
    grade_corpus,
    grade_mistake,
    grade_together,
    label_figures,
    load_corpus,
    reach,
    read_kit_corpus,
    touches_module_state,
)
from grader.grading.grade import kit_manifest
from grader.layout import REFERENCE
from tests.kit.conftest import KIT

MINIMUM = 4  # mistakes per exercise (issue 24)
JOBS = len(os.sched_getaffinity(0))
REFERENCE_MODULE = parse_reference((KIT / REFERENCE).read_text(encoding="utf-8"), REFERENCE.as_posix())
PROMISES = {  # a fixture's promises: id -> function, kind
    "softmax.stable": Promised("softmax", "edge"),
    "softmax.formula": Promised("softmax", "value"),
    "reinforce_grad.formula": Promised("reinforce_grad", "value"),
}


@pytest.fixture(scope="module")
def kit_reach(recorded_reference) -> dict[str, set[int]]:
    """Which exercises' checks can reach each function of the kit's reference (its recorded run)."""
    calls = calls_of(recorded_reference)
    assert calls is not None, "the kit's plugin records no calls (--record-calls)"
    return reach(KIT, calls)


# A mistake the fixture corpora share: softmax shifted by the smallest logit (caught on exercise 8 alone).
SMALLEST = textwrap.dedent(
    """\
    [[mistake]]
    id = "softmax-shifts-by-the-smallest-logit"
    function = "softmax"
    promise = "softmax.stable"
    says = "subtracts the smallest logit instead of the largest"
    old = '''    m = max(xs)'''
    new = '''    m = min(xs)'''
    """
)


def _corpus(folder: Path, *entries: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    text = "\n".join(textwrap.dedent(entry) for entry in entries)
    (folder / "ex08.toml").write_text(text, encoding="utf-8")
    return folder


def _load(folder: Path, exercise_functions_only: bool = True) -> tuple[list[Mistake], list[str]]:
    return load_corpus(folder, REFERENCE_MODULE, kit_manifest(KIT), PROMISES, exercise_functions_only)


# -- the kit's corpus ---------------------------------------------------------------------------------


def test_every_entry_of_the_corpus_loads() -> None:
    _, problems = read_kit_corpus(KIT)
    assert problems == [], "\n".join(problems)


def test_every_entry_of_the_held_out_batches_loads() -> None:
    """The batches written blind (tests/kit/mistakes/held-out-*/, graded with scripts/mistakes.py
    --corpus, not here) still apply to the reference as it is."""
    folders = sorted(p for p in (KIT / CORPUS).glob("held-out-*") if p.is_dir())
    assert folders
    for folder in folders:
        mistakes, problems = read_kit_corpus(KIT, folder)
        assert problems == [], "\n".join(problems)
        assert len(mistakes) >= 40, folder


def test_every_mistake_costs_points_on_its_own_exercise_and_on_no_other(kit_reach) -> None:
    mistakes, _ = read_kit_corpus(KIT)
    failures = corpus_failures(grade_corpus(KIT, mistakes, JOBS, reached=kit_reach))
    assert failures == [], f"{len(failures)} of {len(mistakes)} mistakes:\n" + "\n".join(failures)


def test_every_exercise_has_at_least_four_mistakes() -> None:
    mistakes, _ = read_kit_corpus(KIT)
    counts = {e.id: sum(m.exercise == e.id for m in mistakes) for e in kit_manifest(KIT).exercises}
    short = {exercise: n for exercise, n in counts.items() if n < MINIMUM}
    assert not short, f"exercises with fewer than {MINIMUM} mistakes in {CORPUS}: {short}"


# -- the loader ---------------------------------------------------------------------------------------


def test_an_edit_applies_inside_its_function_only(tmp_path: Path) -> None:
    # "m = max(xs)" occurs once in softmax's body; `return [e / z for e in es]` too
    folder = _corpus(tmp_path, SMALLEST)
    (mistake,), problems = _load(folder)
    assert problems == []
    assert (mistake.id, mistake.exercise) == ("softmax-shifts-by-the-smallest-logit", 8)
    changed = [
        (a, b)
        for a, b in zip(REFERENCE_MODULE.source.splitlines(), mistake.source.splitlines(), strict=True)
        if a != b
    ]
    assert changed == [("    m = max(xs)", "    m = min(xs)")]
    assert REFERENCE_MODULE.source.count("m = max(xs)") >= 1


def test_an_edit_may_leave_lines_out(tmp_path: Path) -> None:
    folder = _corpus(
        tmp_path,
        """\
        [[mistake]]
        id = "softmax-no-shift"
        function = "softmax"
        promise = "softmax.stable"
        says = "leaves the shift out"
        old = '''    m = max(xs)
'''
        new = ''''''
        """,
    )
    (mistake,), problems = _load(folder)
    assert problems == []
    assert "m = max(xs)" not in mistake.source.split("def softmax", 1)[1].split("def ", 1)[0]


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        (
            ("softmax", "softmax.formula", "    z = sum(xs)", "    z = 1"),
            "softmax-bad: `old` occurs 0 times in softmax's body (it must occur exactly once)",
        ),
        (  # twice in softmax's body (its docstring does not count)
            ("softmax", "softmax.formula", "xs", "ys"),
            "softmax-bad: `old` occurs 2 times in softmax's body (it must occur exactly once)",
        ),
        (
            ("softmax", "softmax.formula", "    z = sum(es)", "    z = sum(es"),
            "softmax-bad: the edit does not compile: '(' was never closed (line ",
        ),
        (
            ("softmax", "softmax.normalised", "    z = sum(es)", "    z = 1.0"),
            "softmax-bad: promise 'softmax.normalised' is in no file of tests/promises/",
        ),
        (
            ("reinforce_grad", "softmax.formula", "    z = sum(es)", "    z = 1.0"),
            "softmax-bad: reinforce_grad is exercise 10's, its promise 'softmax.formula' exercise 8's",
        ),
        (
            ("zeros_like", "reinforce_grad.formula", "[0.0]", "[1.0]"),
            "softmax-bad: zeros_like is not an exercise function (grader/exercises.toml)",
        ),
    ],
    ids=["old-absent", "old-twice", "no-compile", "unknown-promise", "other-exercise", "given-function"],
)
def test_a_bad_entry_is_named_in_one_line(tmp_path: Path, entry: tuple[str, ...], problem: str) -> None:
    function, promise, old, new = entry
    folder = _corpus(
        tmp_path,
        f"""\
        [[mistake]]
        id = "softmax-bad"
        function = "{function}"
        promise = "{promise}"
        says = "a fixture"
        old = '''{old}'''
        new = '''{new}'''
        """,
    )
    mistakes, problems = _load(folder)
    assert mistakes == []
    assert len(problems) == 1 and problems[0].startswith(f"{folder.as_posix()}/ex08.toml: {problem}")


def test_missing_fields_and_a_repeated_id_are_named(tmp_path: Path) -> None:
    folder = _corpus(tmp_path, SMALLEST, SMALLEST, '[[mistake]]\nid = "softmax-empty"\n')
    mistakes, problems = _load(folder)
    assert [m.id for m in mistakes] == ["softmax-shifts-by-the-smallest-logit"]
    name = f"{folder.as_posix()}/ex08.toml"
    assert problems == [
        f"{name}: softmax-shifts-by-the-smallest-logit: this id is used twice",
        f"{name}: softmax-empty: needs function, promise, says, old, new (text)",
    ]


# -- the runner finds what it must --------------------------------------------------------------------


def test_the_runner_names_a_mistake_with_full_marks_and_one_that_leaks(tmp_path: Path, kit_reach) -> None:
    """Three fixture mistakes: one caught on exercise 8 alone (no failure), one that changes nothing a
    check can see (full marks: named), and one that breaks `zeros_like`, a given helper that the
    reference's reinforce_grad (exercise 10), ppo_grad (11), grpo_grad (13), sft_grad (14) and
    on_policy_distill_grad (15) all run in the submission: charged to exercise 10, it costs the other
    four their points too, and the runner must see it (the reach it grades on includes them)."""
    folder = _corpus(
        tmp_path,
        SMALLEST,
        """\
        [[mistake]]
        id = "softmax-divides-by-a-named-sum"
        function = "softmax"
        promise = "softmax.formula"
        says = "the same computation, spelled differently"
        old = '''    z = sum(es)'''
        new = '''    z = sum(list(es))'''

        [[mistake]]
        id = "zeros-like-starts-at-one"
        function = "zeros_like"
        promise = "reinforce_grad.formula"
        says = "a gradient table that starts at one, not zero"
        old = '''[0.0]'''
        new = '''[1.0]'''
        """,
    )
    mistakes, problems = _load(folder, exercise_functions_only=False)
    assert problems == []
    assert kit_reach["zeros_like"] >= {10, 11, 13, 14, 15}
    graded = grade_corpus(KIT, mistakes, JOBS, reached=kit_reach)

    smallest, renamed, zeros = graded
    assert smallest.caught and smallest.lost_elsewhere == {}
    assert not renamed.caught and renamed.own_points == renamed.own_max
    assert zeros.caught and set(zeros.lost_elsewhere) == {11, 13, 14, 15}
    name = f"{folder.as_posix()}/ex08.toml"
    failures = corpus_failures(graded)
    assert [f.split(": ")[1] for f in failures] == [
        "softmax-divides-by-a-named-sum", "zeros-like-starts-at-one"
    ]  # fmt: skip
    assert failures[0].startswith(f"{name}: softmax-divides-by-a-named-sum: full marks on exercise 8 (3/3)")
    assert "loses points on another exercise (exercise 11 -" in failures[1]


def test_mistakes_graded_together_score_as_each_graded_alone(kit_reach) -> None:
    """The corpus is graded in groups of mistakes whose exercises do not meet, one submission per group:
    each mistake's points on its exercises are those it gets graded alone."""
    mistakes, _ = read_kit_corpus(KIT)
    chosen = [next(m for m in mistakes if m.exercise == e and not m.correct) for e in (4, 16, 20)]
    plan = [(m, sorted({m.exercise, *kit_reach.get(m.function, set())})) for m in chosen]
    assert not set.intersection(*(set(exercises) for _, exercises in plan))
    source = combined_source(REFERENCE_MODULE, chosen)
    for mistake in chosen:  # every edit, each in its own function, nothing else changed
        assert mistake.new in source
    assert len(source.splitlines()) == len(REFERENCE_MODULE.source.splitlines()) + sum(
        len(m.source.splitlines()) - len(REFERENCE_MODULE.source.splitlines()) for m in chosen
    )
    together = grade_together(KIT, plan)
    alone = [grade_mistake(KIT, mistake, exercises) for mistake, exercises in plan]
    assert [(g.earned, g.maxima) for g in together] == [(g.earned, g.maxima) for g in alone]
    assert all(g.caught for g in together)


def test_groups_never_share_an_exercise_and_keep_every_job_busy() -> None:
    mistake = Mistake("m", "softmax", "", "a fixture", 8, "ex08.toml", "")
    plan = [(mistake, exercises) for exercises in ([1], [2], [1, 3], [4], [2, 4], [1, 2, 3, 4], [5])]
    groups = _groups(plan, every=4, jobs=2)
    assert sorted(i for group in groups for i in group) == list(range(len(plan)))
    assert groups[0][0] == 0 and groups[1][0] == 1  # a group for each job first
    for group in groups:
        exercises = [e for i in group for e in plan[i][1]]
        assert len(exercises) == len(set(exercises))
    assert [5] in groups  # a mistake graded on every exercise is graded alone
    assert len(groups) < len(plan)


def test_an_edit_that_names_module_state_is_graded_on_every_exercise(tmp_path: Path) -> None:
    """A check that calls nothing running the edited function sees the reference's answers, unless the
    edit changes state other functions read: such an edit (a module-level variable, `global`) is graded
    on every exercise, not only on those whose checks reach its function."""
    folder = _corpus(
        tmp_path,
        SMALLEST,
        """\
        [[mistake]]
        id = "softmax-changes-the-conflicts"
        function = "softmax"
        promise = "softmax.stable"
        says = "a fixture: changes a table other exercises read"
        old = '''    m = max(xs)'''
        new = '''    m = max(xs); CONFLICTS[("abbrev", "F")] = 0.0'''

        [[mistake]]
        id = "softmax-global"
        function = "softmax"
        promise = "softmax.stable"
        says = "a fixture: rebinds a global"
        old = '''    z = sum(es)'''
        new = '''    global N_CALLS; z = sum(es)'''
        """,
    )
    mistakes, problems = _load(folder)
    assert problems == []
    assert [touches_module_state(m) for m in mistakes] == [False, True, True]


# -- labels, correct rewrites, other corpus folders (issue 30) -----------------------------------------


def test_a_label_is_given_or_derived_from_the_promise_kind(tmp_path: Path) -> None:
    """A label given stands; without one, a value promise's mistake is core and any other kind's edge;
    with a label the promise may be left out (the exercise is the function's)."""
    folder = _corpus(
        tmp_path,
        SMALLEST,  # softmax.stable: an edge promise
        """\
        [[mistake]]
        id = "softmax-sums-the-logits"
        function = "softmax"
        promise = "softmax.stable"
        label = "core"
        says = "divides by the sum of the logits"
        old = '''    z = sum(es)'''
        new = '''    z = sum(xs)'''

        [[mistake]]
        id = "softmax-no-shift-unlabelled"
        function = "softmax"
        promise = "softmax.formula"
        says = "leaves the shift out"
        old = '''    m = max(xs)'''
        new = '''    m = 0'''

        [[mistake]]
        id = "softmax-divides-by-one"
        function = "softmax"
        label = "core"
        says = "no normalisation, no promise named"
        old = '''    z = sum(es)'''
        new = '''    z = 1.0'''
        """,
    )
    mistakes, problems = _load(folder)
    assert problems == []
    assert [(m.label, m.promise, m.exercise, m.correct) for m in mistakes] == [
        ("edge", "softmax.stable", 8, False),
        ("core", "softmax.stable", 8, False),
        ("core", "softmax.formula", 8, False),
        ("core", "", 8, False),
    ]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ('label = "major"', "label must be one of core, edge, not 'major'"),
        ('correct = "yes"', "correct must be true or false"),
        ('label = "edge"\nfunction = "zeros_like"', "zeros_like is not an exercise function"),
        ("", "needs promise (text)"),
    ],
    ids=["unknown-label", "correct-not-bool", "label-on-a-given-function", "no-label-no-promise"],
)
def test_a_bad_label_or_correct_field_is_named(tmp_path: Path, fields: str, problem: str) -> None:
    function = "" if "function" in fields else 'function = "softmax"\n'
    folder = _corpus(
        tmp_path,
        f"""[[mistake]]\nid = "softmax-bad"\n{function}{fields}\nsays = "a fixture"
old = "    z = sum(es)"\nnew = "    z = 1.0"\n""",
    )
    mistakes, problems = _load(folder)
    assert mistakes == []
    assert len(problems) == 1 and problems[0].startswith(
        f"{folder.as_posix()}/ex08.toml: softmax-bad: {problem}"
    )


def test_a_corpus_folder_other_than_the_kits_is_read(tmp_path: Path) -> None:
    """`scripts/mistakes.py --corpus DIR`: the folder's entries, applied to the kit's reference and checked
    against its manifest and promises (a label stands in for a promise the batch's writer never read)."""
    folder = _corpus(
        tmp_path / "blind",
        """\
        [[mistake]]
        id = "softmax-min"
        function = "softmax"
        label = "edge"
        says = "shifts by the smallest logit"
        old = '''    m = max(xs)'''
        new = '''    m = min(xs)'''
        """,
    )
    mistakes, problems = read_kit_corpus(KIT, folder)
    assert problems == []
    assert [(m.id, m.exercise, m.label, m.file) for m in mistakes] == [
        ("softmax-min", 8, "edge", f"{folder.as_posix()}/ex08.toml")
    ]


def test_a_correct_rewrite_keeps_full_marks_and_one_that_loses_points_is_named(
    tmp_path: Path, kit_reach
) -> None:
    """A correct rewrite (`correct = true`, no promise, no label) is no mistake: full marks is no failure
    and it counts in no catch rate; one that loses points is named with the points it loses."""
    folder = _corpus(
        tmp_path,
        """\
        [[mistake]]
        id = "softmax-sum-of-a-list"
        function = "softmax"
        correct = true
        says = "the same sum, of a list"
        old = '''    z = sum(es)'''
        new = '''    z = sum(list(es))'''

        [[mistake]]
        id = "softmax-not-correct-after-all"
        function = "softmax"
        correct = true
        says = "a fixture: a 'rewrite' that divides by one"
        old = '''    z = sum(es)'''
        new = '''    z = 1.0'''
        """,
    )
    mistakes, problems = _load(folder)
    assert problems == []
    assert [(m.correct, m.label, m.exercise) for m in mistakes] == [(True, "", 8), (True, "", 8)]
    right, wrong = graded = grade_corpus(KIT, mistakes, JOBS, reached=kit_reach)
    assert right.lost == {} and wrong.lost.get(8, 0) > 0
    failures = corpus_failures(graded)
    assert len(failures) == 1
    assert failures[0].startswith(f"{folder.as_posix()}/ex08.toml: softmax-not-correct-after-all: a correct "
                                  "rewrite loses points (exercise 8 -")  # fmt: skip
    assert label_figures(graded) == []


def _graded(ident: str, label: str, earned: float, correct: bool = False) -> Graded:
    mistake = Mistake(ident, "softmax", "", "a fixture", 8, "ex08.toml", "", "", label, correct)
    return Graded(mistake, {8: (0.0, earned)}, {8: (0.0, 4.0)})


def test_label_figures_give_the_median_share_kept_and_the_edge_slips_losing_more_than_half() -> None:
    graded = [
        _graded("c1", "core", 0.0),
        _graded("c2", "core", 1.0),
        _graded("c3", "core", 4.0),  # not caught: counts in the median, not in caught
        _graded("e1", "edge", 3.0),
        _graded("e2", "edge", 1.0),  # keeps 25%: loses more than half
        _graded("e3", "edge", 2.0),  # keeps exactly half: not more than half lost
        _graded("e4", "edge", 3.5),
        _graded("right", "", 4.0, correct=True),  # a correct rewrite: in no label's figures
    ]
    core, edge = label_figures(graded)
    assert (core.label, core.count, core.caught, core.median_share, core.below_half) == (
        "core", 3, 2, 0.25, ("c1", "c2")
    )  # fmt: skip
    assert (edge.label, edge.count, edge.caught, edge.median_share, edge.below_half) == (
        "edge", 4, 4, 0.625, ("e2",)
    )  # fmt: skip


def test_a_missed_mistake_without_a_promise_is_named_by_its_label() -> None:
    (failure,) = corpus_failures([_graded("e5", "edge", 4.0), _graded("right", "", 4.0, correct=True)])
    assert (
        failure
        == "ex08.toml: e5: full marks on exercise 8 (4/4): no check asks about this edge slip (a fixture)"
    )
