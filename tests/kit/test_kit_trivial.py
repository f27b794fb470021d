"""Points follow correctness (grader.authoring.trivial): answers derived from the reference that do no work
earn at most 2% of an exercise (5% before issue 30, whose type-aware answers earned 30% of exercise 6), and a
submission with one realistic bug keeps the points of everything else.

The suites run in a child process (`python -m grader.authoring.trivial`, or a few lines calling
`passed_checks`), in-process there: a pytest session is not nested inside this one. `grader validate` checks
every exercise; here, the three that trivial answers earned most from before the suites pinned values.
"""

from __future__ import annotations

import json
import math
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from grader.authoring.trivial import (
    MAX_SHARE,
    VARIANTS,
    argument_copy,
    degrade,
    everything,
    first_option,
    install,
    variant_source,
)
from grader.layout import REFERENCE
from grader.runtime.worker import load_module
from tests.kit.conftest import KIT


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=KIT, capture_output=True, text=True, timeout=600
    )


def test_trivial_answers_earn_at_most_two_percent() -> None:
    """Softmax (the uniform vector: 50% before), eval guard (False: 50%) and exact KL (0.0: 36%); the
    type-aware answers too (issue 30: 2%, was 5%)."""
    run = subprocess.run(
        [sys.executable, "-m", "grader.authoring.trivial", "8", "16", "18"],
        cwd=KIT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    rows = [line for line in run.stdout.splitlines() if line[:2].strip().isdigit()]
    assert len(rows) == 3 and all(row.split()[-3] == "ok" for row in rows), run.stdout
    assert MAX_SHARE == 0.02


def _one_bug(source: str, old: str, new: str) -> str:
    assert source.count(old) == 1, old
    return source.replace(old, new)


def test_a_one_bug_submission_keeps_the_points_of_what_is_right(tmp_path: Path) -> None:
    """Softmax without subtracting the max (overflows on large logits): exercise 8 keeps most of its
    points, and exercises 9 and 10, whose policies call softmax, keep all of theirs."""
    source = (KIT / REFERENCE).read_text(encoding="utf-8")
    buggy = _one_bug(
        source, "    m = max(xs)\n    es = [math.exp(x - m)", "    m = 0.0\n    es = [math.exp(x - m)"
    )
    module = tmp_path / "one-bug" / REFERENCE.name
    module.parent.mkdir()
    module.write_text(buggy, encoding="utf-8")
    run = _python(
        f"""
        import json
        from pathlib import Path
        from grader.authoring.trivial import tests_by_exercise, passed_checks
        root = Path({str(KIT)!r})
        passed = passed_checks(root, Path({str(module)!r}), [8, 9, 10])
        tests = tests_by_exercise(root)
        print(json.dumps({{e: [len(p), len(tests[e])] for e, p in passed.items()}}))
        """
    )
    assert run.returncode == 0, run.stderr
    shares = {
        int(e): passed / total for e, (passed, total) in json.loads(run.stdout.splitlines()[-1]).items()
    }
    assert shares[9] == 1.0 and shares[10] == 1.0, shares
    assert 0.5 <= shares[8] < 1.0, shares


def test_degrade_keeps_the_shape_and_drops_the_content() -> None:
    rng = random.Random(0)
    answer = ([0.2, 0.3, 0.5], {"a": 1, "b": 2.5}, "text", True, None)
    assert degrade(answer, "zeros", rng) == ([0.0, 0.0, 0.0], {"a": 0, "b": 0.0}, "", False, None)
    assert [degrade(part, "empty", rng) for part in answer] == [[], {}, "", False, None]
    uniform = degrade(answer, "uniform", rng)
    assert uniform[0] == [1 / 3] * 3 and uniform[1] == {"a": 0.5, "b": 0.5} and uniform[2] == ""
    assert all(math.isnan(x) for x in degrade(answer, "nan", rng)[0])
    assert degrade([[0.1, 0.9], [0.5, 0.5, 0.0]], "uniform", rng) == [[0.5, 0.5], [1 / 3] * 3]


def test_a_variant_replaces_only_its_exercise_and_leaves_arguments_alone(tmp_path: Path) -> None:
    source = (KIT / REFERENCE).read_text(encoding="utf-8")
    text = variant_source(source, ["softmax"], "uniform")
    assert text.startswith(source.rstrip("\n")) and "install(globals(), ['softmax'], 'uniform')" in text
    copy = tmp_path / "variant.py"
    copy.write_text(source, encoding="utf-8")
    namespace = vars(load_module(copy, "optlab_trivial_test"))
    reference_kl = namespace["exact_kl"]
    install(namespace, ["softmax", "exact_kl"], "zeros-in-place")
    xs = [1.0, 2.0]
    assert namespace["softmax"](xs) == [0.0, 0.0] and xs == [1.0, 2.0]
    assert namespace["exact_kl"]([0.5, 0.5], [0.25, 0.75]) == 0.0
    assert reference_kl([0.5, 0.5], [0.25, 0.75]) > 0.1
    g = [[[1.0, 2.0]]]
    install(namespace, ["add_score"], "zeros-in-place")
    namespace["add_score"](g, namespace["TabPolicy"](1, 1, 2), 0, 0, 1, 1.0)
    assert g == [[[0.0, 0.0]]]  # the reference would have changed g: its entries are zeroed instead
    with pytest.raises(ValueError, match="unknown trivial variant"):
        install(namespace, ["softmax"], "clever")
    assert set(VARIANTS) >= {"constant", "zeros", "uniform", "first-argument", "none", "nan"}


def test_the_answers_that_know_the_types_read_only_types_and_arguments() -> None:
    """Issue 30's hand-written do-nothing answers, derived: every candidate survives, the input (or a
    policy's theta) returned, the first option; none computes anything the docstring asks."""
    scores = [[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]]
    assert everything([0, 2], (scores,)) == [0, 1, 2]  # pareto_front: everyone
    assert everything(([{0}, {1}], {0, 1}), (scores,)) == ([{0, 1, 2}, {0, 1, 2}], {0, 1, 2})  # _pareto
    assert everything([("s", "r")], ([("s", "r"), ("t", "u")], 1.0)) == [("s", "r"), ("t", "u")]
    assert everything(False, ()) is True and everything(0.25, ()) == 0.0

    class Policy:
        def __init__(self) -> None:
            self.theta = [[[1.0, 2.0]]]

    assert argument_copy([[[0.3, -0.3]]], (Policy(), [("s", 0)] * 3)) == [[[1.0, 2.0]]]  # a copy of theta
    xs = [1.0, 2.0]
    copied = argument_copy([0.27, 0.73], (xs,))
    assert copied == xs and copied is not xs
    assert argument_copy(True, ([1.0],)) is False  # nothing of its type: zeroed
    assert first_option(2, ([[3.0, 2], [1.0, 1], [0.5, 4]], None)) == 0  # ucb_choice's index
    assert first_option(("b", {"x": 1}), ({"a": {"x": 0}, "b": {"x": 1}},)) == ("a", {"x": 0})  # cheapest
    assert first_option("v2", (["v1", "v2"],)) == "v1"
    assert {"argument-copy", "everything", "first-option", "empty", "uniform", "first-argument"} <= set(
        VARIANTS
    )


def test_a_trivial_answer_over_the_bar_is_named_with_what_to_do() -> None:
    """Issue 34: validate said what was wrong ("earns 33.5%"), not what to do."""
    from grader.assignment.manifest import Exercise
    from grader.authoring.trivial import TrivialCheck, VariantOutcome

    exercise = Exercise(8, "softmax", "p", ("softmax",), 3, "after_published", "property")
    outcome = VariantOutcome("first-argument", ("a", "b"), 6, 1.0, 3.0)
    [problem] = TrivialCheck(exercise, (outcome,), 1.0).problems
    assert problem.startswith("the trivial answer 'first-argument' earns 33.3% (> 2%): 1 of 3 points")
    assert "expect_pinned on two inputs whose answers differ" in problem and "edge promise" in problem
