"""What a call means, held against submissions that game it (issue 12, items 5, 6, 10 and 11):

- only the lab's contract mutations are written back into the test's objects (derived from the
  reference at `grader build`), never a frozen dataclass, so expected values come from the inputs as
  they were before the student's call;
- the reference answers a worker's request only along the reference's own call graph;
- names a submission chose reach its results as plain, escaped text;
- a nan answer matches nothing but a nan the reference (or a literal) expects;
- a promised type is a checked type (issue 30, item 5): expect_form tells a list from a tuple or a set,
  a bool from an int, an int from a float; expect_equal and expect_close still take a list for a tuple.
"""

from __future__ import annotations

import math
import textwrap
from pathlib import Path

import pytest

from grader.assignment.contract import derive_contract
from grader.assignment.inventory import reference_contract, stored_contract
from grader.expect import expect_close, expect_equal, expect_form
from grader.grading.grade import grade
from grader.runtime.worker import Worker, load_module
from grader.sandbox.student import in_process_student
from tests.kit.conftest import KIT
from tests.kit.gradescope_schema import problems

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


# -- issue 30, 5. a promised type -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("got", "want"),
    [
        ([0.5, 0.5], [0.2, 0.3, 0.5]),  # the number of items is a value, not a form
        (("b", [1, 2]), ("a", [3])),  # a record: its items' kinds, one by one
        ({"x": 1.0}, {"y": 2.0, "z": 0.0}),
        ([[1.0], []], [[2.0, 3.0]]),
        ([0, 2], []),  # an empty container says nothing about its items
    ],
)
def test_a_form_compares_types_not_values(got, want):
    expect_form(got, want, "f()")


@pytest.mark.parametrize(
    ("got", "want", "shown"),
    [
        ((0.5, 0.5), [0.5, 0.5], "got:      tuple[float, float]"),  # softmax: "a new list"
        ({0, 2}, [0, 2], "got:      set[int]"),  # pareto_front: "a sorted list"
        (["a", ("x",)], ("a", ("x",)), "got:      list[str | tuple[str]]"),  # cheapest: (name, opts)
        ([True, False], [1, 0], "first difference: [0] is bool, not int"),
        ([1, 2], [1.0, 2.0], "first difference: [0] is int, not float"),
        (("a",), ("a", [1]), "the tuple has 1 item(s), not 2"),
        ({"a": 1}, {"a": 1.0}, "a value is int, not float"),
        (None, [1.0], "expected: list[float]"),
    ],
)
def test_a_form_slip_is_named_with_both_types(got, want, shown):
    with pytest.raises(AssertionError, match="^f\\(x\\)\n") as failed:
        expect_form(got, want, "f(x)")
    assert shown in str(failed.value)


def test_value_checks_still_take_a_list_for_a_tuple():
    # a container slip fails its form promise only, never the value checks of its function
    for got, want in [((0.5, 0.5), [0.5, 0.5]), (["a", ["x"]], ("a", ("x",)))]:
        expect_equal(got, want, "f(x)")
        expect_close(got, want, "f(x)")


def test_a_softmax_of_nans_passes_no_check_that_compares_two_of_its_answers(tmp_path):
    document = graded(tmp_path, "def softmax(xs):\n    return [float('nan')] * len(xs)\n", [8])
    hidden = entry(document, "8 softmax: hidden checks")
    # the shift invariance compares two nan answers; every other check pins a value (grader.authoring.trivial)
    assert hidden["extra_data"]["passed"] == 0, hidden["output"]
    checks = {c["check"].rsplit("::", 1)[1]: c for c in hidden["extra_data"]["checks"]}
    assert checks["test_shift_invariance"]["passed"] is False  # two nan answers are not "the same"
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


def test_an_exceptions_message_reaches_its_entry_without_controls_or_bidi(tmp_path):
    code = "def softmax(xs):\n    raise ValueError('\\x1b[2J\\u202eSHOWN\\u200b\\r\\nnext line')\n"
    document = graded(tmp_path, code, [8])
    output = entry(document, "8 softmax: visible checks")["output"]
    assert "SHOWN" in output and "next line" in output
    assert not any(c in output for c in "\x1b\u202e\u200b\r")


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
    ],
    ids=["a list argument rewritten", "a list argument emptied"],
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
    from grader.grading.grade import kit_manifest

    return kit_manifest(KIT).by_id(exercise).points


def test_the_contracts_mutations_still_come_back(tmp_path):
    """add_score's g, tg_step's graph, a Meter and a random.Random: the reference scores in full."""
    document = graded(tmp_path, "", [2, 3, 5, 9])
    assert document["score"] == sum(exercise_points(e) for e in (2, 3, 5, 9))


@pytest.fixture(scope="module")
def ref():
    return load_module(KIT / "solutions" / "optimization_toolkit.py", "semantics_test_reference")


def in_process(tmp_path: Path, ref, code: str, contract: dict | None = None):
    path = tmp_path / "optimization_toolkit.py"
    path.write_text(REFERENCE + "\n\n" + textwrap.dedent(code))
    exercise_of = {name: e.id for e in _manifest().exercises for name in e.functions}
    return in_process_student(path, ref, ref, exercise_of, contract=contract)


def _manifest():
    from grader.grading.grade import kit_manifest

    return kit_manifest(KIT)


def test_a_frozen_dataclass_is_never_written_into_even_where_the_contract_allows_its_parameter(tmp_path, ref):
    student = in_process(
        tmp_path,
        ref,
        """
        def p_correct(prog, kind, params=ToyParams()):
            object.__setattr__(params, "cap", 0.5)
            vars(prog)["instructions"]["x"] = "rewritten"
            return 0.5
        """,
        contract={"answers": {}, "mutates": {"p_correct": {"prog": 0, "params": 2}}},
    )
    prog, params = ref.Program(), ref.ToyParams()
    instructions = dict(prog.instructions)
    assert student.p_correct(prog, "a", params) == 0.5
    assert params == ref.ToyParams() and prog.instructions == instructions


def test_the_worker_reports_only_the_mutations_the_request_names(tmp_path, ref):
    path = tmp_path / "optimization_toolkit.py"
    path.write_text("def rewrite(xs, ys):\n    xs.append(1)\n    ys.append(2)\n")
    worker = Worker(path, {"rewrite": 1}, grader=None, isolate=False)
    message = {"op": "call", "function": "rewrite", "args": [[0], [0]], "kwargs": {}}
    assert worker.handle(dict(message, mutable=["1"]))["mutated"] == {"1": [0, 2]}
    assert worker.handle(dict(message, mutable=[]))["mutated"] == {}


def test_the_stored_contract_is_the_references(ref):
    """grader build stored the contract derived from the reference; the known contract mutations are in it,
    and nothing else of the exercise functions."""
    stored = stored_contract(KIT)
    assert stored == reference_contract(KIT)
    exercise_functions = {name for e in _manifest().exercises for name in e.functions}
    mutates = {f: set(p) for f, p in stored["mutates"].items() if f in exercise_functions}
    assert mutates == {
        "add_score": {"g"},
        "tg_step": {"graph"},
        "bootstrap_demos": {"rng", "meter"},
        "ucb_choice": {"rng"},
        "select_candidate": {"rng"},
        "choose_parent": {"rng"},
        "autoresearch": {"rng"},
    }
    assert stored["mutates"]["bootstrap_demos"] == {"rng": 2, "meter": 4}


# -- 6. the reference answers only along its own call graph ------------------------------------------


def test_the_call_graph_is_the_references_own(ref):
    answers = stored_contract(KIT)["answers"]
    assert "softmax" not in answers  # its body calls no other exercise
    assert answers["add_score"] == ["softmax"]  # through TabPolicy.probs
    assert answers["reinforce_grad"] == ["add_score"]  # add_score's own calls are the reference's
    assert answers["bootstrap_demos"] == ["p_correct"]  # through the given rollout
    assert "pareto_front" not in answers and "_pareto" not in answers.get("select_candidate", [])


def test_derivation_follows_helpers_and_stops_at_exercises():
    source = textwrap.dedent(
        """
        class Box:
            def get(self):
                return c()
        def a():
            return helper() + Box().get()
        def helper():
            return b()
        def b():
            return d()
        def c():
            return 1
        def d():
            return 2
        def e(xs, rng, frozen_thing, n):
            xs.append(1)
            rng.random()
            n += 1
            return frozen_thing.field
        """
    )
    contract = derive_contract(source, {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5})
    assert contract["answers"] == {"a": ["b", "c"], "b": ["d"], "helper": ["b"]}  # b's own call is b's
    assert contract["mutates"]["e"] == {"xs": 0, "rng": 1}


def test_the_grader_serves_a_reference_request_only_along_the_open_calls_graph(tmp_path, ref):
    student = in_process(tmp_path, ref, "")
    request = {"op": "reference", "function": "reinforce_grad", "args": [], "kwargs": {}}
    student._open_call = "softmax"
    answer = student.serve(request)
    assert answer["op"] == "raise" and answer["type"] == "LookupError"
    student._open_call = "add_score"
    answer = student.serve({"op": "reference", "function": "softmax", "args": [[0.0, 0.0]], "kwargs": {}})
    assert answer["op"] == "return"
    assert student.serve(dict(request, function="add_score"))["op"] == "raise"  # not add_score's own


ORACLE = """
def softmax(xs):
    # read the probabilities off reinforce_grad: one sample of reward 1, no baseline: onehot(0) - p
    policy = TabPolicy(1, 1, len(xs), [[list(xs)]])
    row = reinforce_grad(policy, [(0, (0,), 1.0)], "none")[0][0]
    return [(1.0 if i == 0 else 0.0) - r for i, r in enumerate(row)]
"""


def test_a_harder_exercises_reference_is_no_oracle(tmp_path):
    """The stubs with a softmax that asks reinforce_grad (a stub) for the answer: it gets the stub."""
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "optimization_toolkit.py").write_text(STUBS + "\n\n" + ORACLE)
    out = tmp_path / "results.json"
    document = grade(KIT, submission, out, call_timeout=2, exercises=[8]).document
    assert document["score"] == 0
    assert "NotImplementedError" in entry(document, "8 softmax: visible checks")["output"]


def test_fault_isolation_still_holds_along_the_graph(tmp_path):
    """The stubs with the reference's add_score: its call of the stub softmax (through TabPolicy.probs)
    is answered by the reference, so add_score earns its points."""
    add_score = REFERENCE[REFERENCE.index("def add_score(") : REFERENCE.index("def apply_grad(")]
    submission = tmp_path / "submission"
    submission.mkdir()
    (submission / "optimization_toolkit.py").write_text(STUBS + "\n\n" + add_score)
    out = tmp_path / "results.json"
    document = grade(KIT, submission, out, call_timeout=2, exercises=[9]).document
    assert document["score"] == exercise_points(9)


def test_a_copy_of_a_parameter_is_not_the_parameter():
    """`new = dict(files); new[k] = v` changes the copy only; changing an item of a copy changes the
    parameter's item."""
    source = textwrap.dedent(
        """
        def propose(files, rng):
            new = dict(files)
            new["x"] = rng.random()
            rows = list(files.values())
            rows.append(1)
            return new
        def touch(graph):
            for module, var in reversed(list(graph)):
                var.grads.clear()
        def pick(stats):
            best, arg = None, []
            for i, (tot, n) in enumerate(stats):
                best, arg = tot, [i]
                arg.append(n)
            return arg
        """
    )
    mutates = derive_contract(source, {"propose": 1, "touch": 2, "pick": 3})["mutates"]
    assert mutates == {"propose": {"rng": 1}, "touch": {"graph": 0}}


REVERSES_ITS_ARGUMENT = """
_right_softmax = softmax


def softmax(xs):
    out = _right_softmax(xs)
    xs.reverse()
    return out
"""


def test_a_change_outside_the_contract_is_named_but_never_sent_back(tmp_path, ref):
    """softmax reverses its argument after answering right: the test's list stays as it was and the
    student names the argument that changed."""
    student = in_process(tmp_path, ref, REVERSES_ITS_ARGUMENT)
    xs = [1.0, 2.0, 3.0]
    assert student.softmax(xs) == pytest.approx(ref.softmax([1.0, 2.0, 3.0]))
    assert xs == [1.0, 2.0, 3.0] and student.last_changed == ["0"]
    student.softmax([1.0, 1.0])  # reversing a palindrome changes nothing
    assert student.last_changed == []


def test_changing_an_argument_costs_only_the_check_that_it_is_left_alone(tmp_path):
    document = graded(tmp_path, REVERSES_ITS_ARGUMENT, [8])
    (softmax,) = document["extra_data"]["exercises"]
    assert softmax["visible"]["passed"] == softmax["visible"]["total"]
    assert softmax["hidden"]["passed"] == softmax["hidden"]["total"] - 1
