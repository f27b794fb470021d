"""A call into a submission: values and mutations come back, errors come back as failures of the call,
and calls to other exercises are answered by the reference (fault isolation)."""

from __future__ import annotations

import random
import textwrap
import types
from pathlib import Path

import pytest

from grader.runtime.protocol import SubmissionError
from grader.runtime.worker import load_module
from grader.sandbox.student import Student, in_process_student
from tests.kit.conftest import KIT

REFERENCE = KIT / "solutions" / "optimization_toolkit.py"
EXERCISE_OF = {"softmax": 8, "add_score": 9, "_pareto": 6, "select_candidate": 6, "pareto_front": 6}


@pytest.fixture(scope="module")
def ref() -> types.ModuleType:
    return load_module(REFERENCE, "student_test_reference")


def submission(tmp_path: Path, ref: types.ModuleType, code: str, *, isolate: bool = True) -> Student:
    """The reference with `code` appended (later definitions win), as a submission."""
    path = tmp_path / "optimization_toolkit.py"
    path.write_text(REFERENCE.read_text() + "\n\n" + textwrap.dedent(code))
    return in_process_student(path, ref, ref if isolate else None, EXERCISE_OF)


def test_values_come_back_as_the_references_types(tmp_path, ref):
    student = submission(tmp_path, ref, "")
    assert student.pareto_front([[1, 0], [0, 1], [0, 0]]) == [0, 1]
    alive, wins = student._pareto([[1, 0], [0, 1]])
    assert alive == {0, 1} and wins == [{0}, {1}]
    demos = student.bootstrap_demos(ref.Program(), ref.make_dataset(6, 1), random.Random(0))
    assert demos and all(type(d) is ref.Demo for d in demos)


def test_mutated_arguments_are_written_back(tmp_path, ref):
    student = submission(tmp_path, ref, "")
    policy, g = ref.TabPolicy(), None
    g = ref.zeros_like(policy)
    row = g[0][1]
    assert student.add_score(g, policy, 0, 1, 2, 1.0) is None
    assert row is g[0][1] and row == pytest.approx([-1 / 3, -1 / 3, 2 / 3])
    rng, twin = random.Random(5), random.Random(5)
    meter = ref.Meter()
    student.bootstrap_demos(ref.Program(), ref.make_dataset(4, 2), rng, meter=meter)
    ref.bootstrap_demos(ref.Program(), ref.make_dataset(4, 2), twin, meter=ref.Meter())
    assert rng.getstate() == twin.getstate() and meter.rollouts == 4


def test_a_callable_argument_is_called_back(tmp_path, ref):
    student = submission(tmp_path, ref, "")
    seen = []

    def proposer(files, rng):
        seen.append(sorted(files))
        return ref.honest_proposer(files, rng)

    result = student.autoresearch(3, random.Random(0), proposer=proposer)
    assert len(seen) == 3 and type(result) is ref.AutoResult and len(result.log) == 3


def test_calls_to_other_exercises_are_answered_by_the_reference(tmp_path, ref):
    broken_softmax = """
    def softmax(xs):
        return [0.0 for _ in xs]
    """
    student = submission(tmp_path, ref, broken_softmax)
    assert student.softmax([0.0, 0.0]) == [0.0, 0.0]
    g = ref.zeros_like(ref.TabPolicy())
    student.add_score(g, ref.TabPolicy(), 0, 0, 0, 1.0)  # its policy.probs uses the reference softmax
    assert g[0][0] == pytest.approx([2 / 3, -1 / 3, -1 / 3])


def test_functions_of_the_same_exercise_are_the_students_own(tmp_path, ref):
    student = submission(
        tmp_path,
        ref,
        """
    def _pareto(scores):
        return {0}, [{0}]
    """,
    )
    assert student.pareto_front([[0, 1], [1, 0]]) == [0]


def test_without_a_reference_nothing_is_isolated(tmp_path, ref):
    student = submission(
        tmp_path,
        ref,
        """
    def softmax(xs):
        return [1.0] + [0.0] * (len(xs) - 1)
    """,
        isolate=False,
    )
    g = ref.zeros_like(ref.TabPolicy())
    student.add_score(g, ref.TabPolicy(), 0, 0, 0, 1.0)
    assert g[0][0] == [0.0, 0.0, 0.0]


def test_plain_exceptions_keep_their_type_and_message(tmp_path, ref):
    student = submission(tmp_path, ref, "")
    with pytest.raises(ValueError, match="nope"):
        student.choose_parent(ref.new_archive(), random.Random(0), "nope")
    with pytest.raises(ref.BudgetExhausted):
        student.bootstrap_demos(ref.Program(), ref.make_dataset(3), random.Random(0), meter=ref.Meter(1))


@pytest.mark.parametrize(
    "body, message",
    [
        ("raise SystemExit(0)", "SystemExit"),
        ("raise KeyboardInterrupt", "KeyboardInterrupt"),
        ("import pytest; pytest.skip('free points')", "Skipped"),
        ("return lambda: 1", "cannot be graded"),
        ("return (x for x in xs)", "cannot be graded"),
        ("\n    class Eq:\n        def __eq__(self, o): return True\n    return Eq()", "cannot be graded"),
    ],
)
def test_anything_else_fails_the_call_and_names_what_happened(tmp_path, ref, body, message):
    student = submission(tmp_path, ref, f"def softmax(xs):\n    {body}\n")
    with pytest.raises(SubmissionError, match=message):
        student.softmax([1.0])


def test_a_missing_function_is_named(tmp_path, ref):
    student = submission(tmp_path, ref, "del softmax\n")
    with pytest.raises(SubmissionError, match=r"does not define softmax\(\)"):
        student.softmax([1.0])


def test_an_import_error_is_reported_on_every_call(tmp_path, ref):
    student = submission(tmp_path, ref, "import numpy_is_not_allowed_here\n")
    for _ in range(2):
        with pytest.raises(SubmissionError, match=r"could not be imported: ModuleNotFoundError.*line \d+"):
            student.softmax([1.0])


def test_where_the_error_was_raised_is_named(tmp_path, ref):
    student = submission(tmp_path, ref, "def softmax(xs):\n    return 1 / 0\n")
    with pytest.raises(ZeroDivisionError) as info:
        student.softmax([1.0])
    assert any("line" in note and "softmax" in note for note in info.value.__notes__)


def test_the_reference_never_answers_for_the_exercise_being_graded(tmp_path, ref):
    # A submission that reaches into the worker and asks the grader for the reference's own answer.
    cheat = """
    import gc
    def softmax(xs):
        from grader.runtime.worker import Worker
        worker = next(o for o in gc.get_objects() if isinstance(o, Worker))
        return worker._reference_proxy("softmax")(xs)
    """
    student = submission(tmp_path, ref, cheat)
    with pytest.raises(LookupError, match="cannot serve"):
        student.softmax([0.0, 1.0])
