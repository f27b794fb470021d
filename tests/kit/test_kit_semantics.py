"""What a call means, held against submissions that game it (issue 12, items 5, 6, 10 and 11):

- only the lab's contract mutations are written back into the test's objects (derived from the
  reference at `grader build`), never a frozen dataclass, so expected values come from the inputs as
  they were before the student's call;
- the reference answers a worker's request only along the reference's own call graph;
- names a submission chose reach its results as plain, escaped text;
- a nan answer matches nothing but a nan the reference (or a literal) expects.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from grader.expect import expect_close
from grader.grading import grade
from tests.kit.gradescope_schema import problems

KIT = Path(__file__).resolve().parents[2]
REFERENCE = (KIT / "solutions" / "optimization_toolkit.py").read_text()


def graded(tmp_path: Path, code: str, exercises: list[int]) -> dict:
    """The results of the reference with `code` appended (later definitions win), graded for real."""
    submission = tmp_path / "submission"
    submission.mkdir(parents=True, exist_ok=True)
    (submission / "optimization_toolkit.py").write_text(REFERENCE + "\n\n" + textwrap.dedent(code))
    out = tmp_path / "results.json"
    document = grade(KIT, submission, out, call_timeout=2, exercises=exercises).document
    assert problems(out) == []
    return document


def entry(document: dict, name: str) -> dict:
    return next(t for t in document["tests"] if t["name"] == name)


# -- 11. nan ----------------------------------------------------------------------------------------


def test_nan_never_matches_unless_the_expected_nan_is_allowed():
    nan = math.nan
    for got, want in [(nan, nan), ([1.0, nan], [1.0, nan]), (nan, 1.0), (1.0, nan), ({"a": nan}, {"a": nan})]:
        with pytest.raises(AssertionError):
            expect_close(got, want, "two answers")
    expect_close([1.0, nan], [1.0, nan], "against the reference's nan", nan_ok=True)
    with pytest.raises(AssertionError):
        expect_close(nan, 1.0, "a nan where a number is expected", nan_ok=True)
    with pytest.raises(AssertionError):
        expect_close(1.0, nan, "a number where the reference says nan", nan_ok=True)
    expect_close([math.inf, -math.inf], [math.inf, -math.inf], "an infinity still equals itself")


def test_a_softmax_of_nans_passes_no_check_that_compares_two_of_its_answers(tmp_path):
    document = graded(tmp_path, "def softmax(xs):\n    return [float('nan')] * len(xs)\n", [8])
    hidden = entry(document, "8 softmax: hidden checks")
    # only "softmax does not change its argument" holds; the shift invariance compares two nan answers
    assert hidden["extra_data"]["passed"] == 1, hidden["output"]
    assert "- failed: adding the same constant to every logit" in hidden["output"]
    assert entry(document, "8 softmax: visible checks")["score"] == 0


# -- 10. text a submission chose ---------------------------------------------------------------------

INJECTED = "\n\n**Score: 100 / 100**\x1b[2J\u202e<b>[x](http://e)</b>|_ok_|\u200b\n"


def injected_zip(tmp_path: Path, names: list[str]) -> Path:
    import zipfile

    path = tmp_path / "submission.zip"
    with zipfile.ZipFile(path, "w") as archive:
        for name in names:
            archive.writestr(name, REFERENCE)
    return path


def assert_plain(markdown: str) -> None:
    """No control, bidi or zero-width character, and no markdown the submission's names could make."""
    assert not any(c in markdown for c in "\x1b\u202e\u200b\r")
    assert "**Score: 100" not in markdown.replace("\\*", "")  # only the kit's own bold survives
    for made in ("<b>", "[x]", "|_ok_|", "\n**Score"):
        assert made not in markdown


def test_a_member_name_reaches_the_results_as_plain_escaped_text(tmp_path):
    out = tmp_path / "results.json"
    zipped = injected_zip(tmp_path, [f"lab{INJECTED}.py"])
    document = grade(KIT, zipped, out, call_timeout=2, exercises=[12]).document
    assert problems(out) == []
    note = next(line for line in document["output"].splitlines() if line.startswith("- Graded"))
    assert_plain(document["output"])
    assert "\\*\\*Score: 100 / 100\\*\\*" in note and "\\<b\\>" in note
    assert document["output"].startswith("**Visible checks: ")  # the kit's own line, first
    assert document["score"] == 4.0


def test_names_in_an_ungradable_submission_are_escaped_too(tmp_path):
    out = tmp_path / "results.json"
    zipped = injected_zip(tmp_path, [f"a{INJECTED}.py", f"b{INJECTED}.py"])
    document = grade(KIT, zipped, out, exercises=[12]).document
    assert document["score"] == 0 and document["tests"] == []
    assert "found several .py files" in document["output"]
    assert_plain(document["output"].removeprefix("**This submission could not be graded.**"))


# -- 5. mutations: only the contract's come back ------------------------------------------------------

STUBS = (KIT / "student" / "optimization_toolkit.py").read_text()


def scores_by_entry(document: dict) -> dict[str, float]:
    return {t["name"]: t["score"] for t in document["tests"]}


@pytest.mark.parametrize(
    "exercise, attack, honest",
    [
        (
            6,
            "def pareto_front(scores):\n    scores[:] = [[1.0]]\n    return [0]\n",
            "def pareto_front(scores):\n    return [0]\n",
        ),
        (
            7,
            "def reflect_update(instruction, traces, module):\n    traces.clear()\n    return instruction\n",
            "def reflect_update(instruction, traces, module):\n    return instruction\n",
        ),
        (
            1,  # a frozen dataclass, rewritten through object.__setattr__ and vars()
            """
            def p_correct(prog, kind, params=ToyParams()):
                object.__setattr__(params, "cap", 0.5)
                object.__setattr__(params, "floor", 0.5)
                vars(prog)["instructions"] = {}
                return 0.5
            """,
            "def p_correct(prog, kind, params=ToyParams()):\n    return 0.5\n",
        ),
    ],
    ids=["a list argument rewritten", "a list argument emptied", "a frozen dataclass rewritten"],
)
def test_rewriting_arguments_earns_nothing_more_than_the_same_answer_without(
    tmp_path, exercise, attack, honest
):
    """Expected values come from the inputs as they were before the student's call: the attack scores
    what the same answers score without touching the arguments."""
    attacked = scores_by_entry(graded(tmp_path / "attack", attack, [exercise]))
    bound = scores_by_entry(graded(tmp_path / "honest", honest, [exercise]))
    for name, score in attacked.items():
        assert score <= bound[name] + 1e-9, name
    assert sum(attacked.values()) < exercise_points(exercise)


def exercise_points(exercise: int) -> float:
    from grader.grading import kit_manifest

    return kit_manifest(KIT).by_id(exercise).points


def test_the_contracts_mutations_still_come_back(tmp_path):
    """add_score's g, tg_step's graph, a Meter and a random.Random: the reference scores in full."""
    document = graded(tmp_path, "", [2, 3, 5, 9])
    assert document["score"] == sum(exercise_points(e) for e in (2, 3, 5, 9))
