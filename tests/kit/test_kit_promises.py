"""Promises (issue 24): every promise a docstring makes has a hidden check that names it, every check names
one promise of its own exercise, and an exercise's points split over its promises, an error check earning
only beside a passing check of another kind of its function.

- the promise files (tests/promises/exNN.toml): a bad one is one line naming file, line and problem;
- the kit's coverage, for every exercise that has a promise file (all of them, once annotated);
- the same checks on a small kit of two exercises made here, with a promise no hidden check names, an
  unmarked test, a test naming a promise its kit lacks and one naming two promises;
- scoring by promise: weights, checks, the error gating, unmarked tests scoring as before, the promise
  from the inventory (never the run), results.json's checks rescored to the same points, and the
  student's local verdict scoring the visible entry by the same rule;
- trivial answers that raise on every call earn nothing where the error checks are gated.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

from grader.assignment.inventory import INVENTORY, InventoryError, account_for, load_inventory
from grader.assignment.manifest import Exercise, Manifest, parse_manifest
from grader.assignment.promises import (
    GATED,
    KINDS,
    Promise,
    PromiseError,
    coverage_problems,
    default_weights,
    idle_gated_checks,
    inventory_promises,
    load_promises,
    naming_problems,
    parse_promises,
    unchecked_promises,
    unnamed_checks,
)
from grader.assignment.records import TestRecord
from grader.assignment.reference import read_reference
from grader.assignment.scoring import Tally, cents, entry_score, score_exercise, score_suites, tallies
from grader.authoring.build import build
from grader.authoring.points_doc import UNMARKED, points_doc
from grader.authoring.trivial import earned_points
from grader.cli import main
from grader.errors import KitError
from grader.grading.grade import grade, kit_manifest
from grader.grading.local import ExerciseInfo, Verdict, VisiblePromise, exercises_data
from grader.grading.results import results_document
from grader.layout import POINTS_DOC, PROMISES
from tests.kit.conftest import KIT, manifest_text

MANIFEST = kit_manifest(KIT)
INVENTORY_DATA = load_inventory(KIT)
ANNOTATED = sorted(int(path.stem[2:]) for path in (KIT / PROMISES).glob("ex*.toml"))


# -- the kit's own promises and checks ---------------------------------------------------------------


def test_the_inventory_holds_the_promise_files_as_they_are():
    promises = load_promises(KIT, MANIFEST)
    assert inventory_promises(INVENTORY_DATA) == promises
    assert all(promise.exercise in ANNOTATED for promise in promises.values())


def test_every_check_of_an_annotated_exercise_names_one_promise_of_its_exercise():
    tests = [t for t in INVENTORY_DATA["tests"] if t["exercise"] in ANNOTATED]
    promises = inventory_promises(INVENTORY_DATA)
    assert unnamed_checks(tests) + naming_problems(promises, INVENTORY_DATA["tests"]) == []


def test_every_promise_has_a_hidden_check():
    promises = inventory_promises(INVENTORY_DATA)
    assert unchecked_promises(promises, INVENTORY_DATA["tests"], ANNOTATED) == []


def test_every_error_check_has_a_check_of_another_kind_of_its_function_in_its_entry():
    """Otherwise it could never earn, and the reference would not get full marks."""
    assert idle_gated_checks(inventory_promises(INVENTORY_DATA), INVENTORY_DATA["tests"]) == []


def test_every_exercise_of_the_manifest_has_a_promise_file():
    assert ANNOTATED == [exercise.id for exercise in MANIFEST.exercises]


# -- a bad promise file is one line -----------------------------------------------------------------

GOOD = """\
# Exercise 8 (softmax)
[[promise]]
id = "softmax.formula"
function = "softmax"
kind = "value"
says = "exp(x_i) / sum_j exp(x_j)"

[[promise]]
id = "softmax.large_logits"
function = "softmax"
kind = "edge"
says = "no overflow on logits near 1000"
weight = 2
"""


def test_a_good_promise_file_gives_its_promises():
    """softmax.formula writes no weight: its role's default, (1 - 3/10) * 2 (softmax's one other promise
    carries at most 3/10 of its 2 promises' weight; it was 1 before issue 30); large_logits keeps its 2."""
    promises = parse_promises(GOOD, MANIFEST, "tests/promises/ex08.toml")
    assert promises == [
        Promise("softmax.formula", 8, "softmax", "value", "exp(x_i) / sum_j exp(x_j)", 1.4),
        Promise("softmax.large_logits", 8, "softmax", "edge", "no overflow on logits near 1000", 2),
    ]


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("ex08.toml", GOOD.replace('function = "softmax"', 'function = "softmx"', 1),
         "ex08.toml:4: [[promise]] 1: 'softmx' is not a function of exercise 8 (softmax)"),
        ("ex08.toml", GOOD.replace('function = "softmax"', 'function = "kl_k3"', 1),
         "ex08.toml:4: [[promise]] 1: 'kl_k3' is not a function of exercise 8 (softmax)"),
        ("ex08.toml", GOOD.replace('kind = "edge"', 'kind = "boundary"'),
         f"ex08.toml:11: [[promise]] 2: kind 'boundary' is not one of {', '.join(KINDS)}"),
        ("ex08.toml", GOOD.replace('id = "softmax.formula"', 'id = "formula"'),
         "ex08.toml:3: [[promise]] 1: id 'formula' must be softmax.<short_snake_name>"),
        ("ex08.toml", GOOD.replace("softmax.large_logits", "softmax.formula"),
         "ex08.toml:9: id 'softmax.formula' is listed twice"),
        ("ex08.toml", GOOD.replace("weight = 2", "weight = 0"),
         "ex08.toml:13: [[promise]] 2: weight must be a positive number, not 0"),
        ("ex08.toml", GOOD.replace('says = "exp(x_i) / sum_j exp(x_j)"\n', ""),
         "ex08.toml:2: [[promise]] 1: missing 'says'"),
        ("ex08.toml", GOOD.replace("weight = 2", "points = 2"),
         "ex08.toml:13: [[promise]] 2: unknown key 'points' (expected id, function, kind, says, weight)"),
        ("ex08.toml", GOOD.replace("[[promise]]\nid", "[[promise]\nid", 1),
         "ex08.toml:2: TOML syntax error: Expected ']]' at the end of an array declaration"),
        ("ex08.toml", "# nothing yet\n",
         "ex08.toml: no [[promise]] tables: list every promise of exercise 8 softmax"),
        ("ex99.toml", GOOD,
         f"ex99.toml: no exercise 99 in the manifest (exercises are 1 to {len(MANIFEST.exercises)})"),
        ("softmax.toml", GOOD,
         "softmax.toml: a promise file is named exNN.toml, NN an exercise's id "
         f"(01 to {len(MANIFEST.exercises):02d})"),
    ],
    ids=[
        "unknown-function", "another-exercise's-function", "unknown-kind", "id-without-function",
        "repeated-id",
        "weight", "missing-key", "unknown-key", "toml-syntax", "no-promises", "unknown-exercise", "file-name",
    ],
)  # fmt: skip
def test_a_bad_promise_file_is_one_line_naming_file_line_and_problem(name, text, message):
    with pytest.raises(PromiseError) as caught:
        parse_promises(text, MANIFEST, f"tests/promises/{name}")
    assert str(caught.value) == f"tests/promises/{message}"


# -- a small kit of two exercises ---------------------------------------------------------------------

SMALL_MANIFEST = manifest_text(("double", ["double"], 4), ("halve", ["halve"], 2))

SMALL_REFERENCE = '''\
"""A small reference module."""


def double(x):
    """Twice x; ValueError when x is not a number."""
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        raise ValueError(f"not a number: {x!r}")
    return 2 * x


def halve(x):
    """Half of x."""
    return x / 2
'''

SMALL_PROMISES = """\
[[promise]]
id = "double.value"
function = "double"
kind = "value"
says = "twice x"
weight = 2

[[promise]]
id = "double.refuses"
function = "double"
kind = "error"
says = "ValueError when x is not a number"

[[promise]]
id = "double.zero"
function = "double"
kind = "edge"
says = "twice 0 is 0"
"""

SMALL_VISIBLE = '''\
import pytest

pytestmark = pytest.mark.exercise(1)


@pytest.mark.promise("double.value")
def test_doubles(student):
    """Twice 3 is 6."""
    assert student.double(3) == 6


@pytest.mark.promise("double.refuses")
def test_refuses_text(student):
    """Text raises ValueError."""
    with pytest.raises(ValueError):
        student.double("a")
'''

SMALL_HIDDEN = '''\
import pytest

pytestmark = pytest.mark.exercise(1)


@pytest.mark.parametrize("x", [pytest.param(-2, marks=pytest.mark.promise("double.value")), 0.5])
def test_doubles_more(student, x):
    """Twice x."""
    assert student.double(x) == 2 * x


@pytest.mark.promise("double.refuses")
def test_refuses_none(student):
    """None raises ValueError."""
    with pytest.raises(ValueError):
        student.double(None)


@pytest.mark.promise("double.value")
def test_doubles_seven(student):
    """Twice 7 is 14."""
    assert student.double(7) == 14
'''

SMALL_HALVE = '''\
import pytest

pytestmark = pytest.mark.exercise(2)


def test_halves(student):
    """Half of 3 is 1.5."""
    assert student.halve(3) == 1.5
'''


@pytest.fixture
def small_kit(tmp_path: Path) -> Path:
    """Two exercises; exercise 1 annotated with three promises, exercise 2 not at all."""
    files = {
        "grader/exercises.toml": SMALL_MANIFEST,
        "solutions/optimization_toolkit.py": SMALL_REFERENCE,
        "tests/conftest.py": 'pytest_plugins = ["grader.pytest_plugin"]\n',
        "tests/visible/__init__.py": "",
        "tests/visible/test_ex01_double.py": SMALL_VISIBLE,
        "tests/visible/test_ex02_halve.py": SMALL_HALVE,
        "tests/hidden/__init__.py": "",
        "tests/hidden/test_ex01_double.py": SMALL_HIDDEN,
        "tests/hidden/test_ex02_halve.py": SMALL_HALVE,
        "tests/promises/ex01.toml": SMALL_PROMISES,
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def small_manifest(root: Path) -> Manifest:
    reference = read_reference(
        root / "solutions/optimization_toolkit.py", "solutions/optimization_toolkit.py"
    )
    return parse_manifest((root / "grader/exercises.toml").read_text(), reference)


def test_the_coverage_checks_find_a_promise_without_a_hidden_check_and_an_unmarked_test(small_kit):
    """Exercise 1's `double.zero` has no hidden check, and one case of a parametrized hidden test names no
    promise; exercise 2 has no promise file, so its unmarked tests are not asked (yet)."""
    build(small_kit)
    inventory = load_inventory(small_kit)
    promises = inventory_promises(inventory)
    assert sorted(promises) == ["double.refuses", "double.value", "double.zero"]
    assert coverage_problems(promises, inventory["tests"], [1]) == [
        "tests/hidden/test_ex01_double.py::test_doubles_more[0.5] names no promise: "
        "mark it @pytest.mark.promise(ID)",
        "the promise 'double.zero' of exercise 1 has no hidden check",
    ]
    marked = {t["nodeid"].split("::")[1]: t["promise"] for t in inventory["tests"] if t["exercise"] == 1}
    assert (
        marked["test_doubles_more[-2]"] == "double.value" and marked["test_refuses_none"] == "double.refuses"
    )


def test_an_error_check_alone_in_its_entry_is_named():
    promises = {
        "f.value": Promise("f.value", 1, "f", "value", "v"),
        "f.error": Promise("f.error", 1, "f", "error", "e"),
        "g.value": Promise("g.value", 1, "g", "value", "v"),
    }
    tests = [
        {"nodeid": "v::a", "exercise": 1, "suite": "visible", "promise": "f.error"},
        {"nodeid": "v::b", "exercise": 1, "suite": "visible", "promise": "g.value"},
        {"nodeid": "h::a", "exercise": 1, "suite": "hidden", "promise": "f.error"},
        {"nodeid": "h::b", "exercise": 1, "suite": "hidden", "promise": "f.value"},
    ]
    assert idle_gated_checks(promises, tests) == [
        "v::a checks the error promise 'f.error', but its visible entry has no check of a value, edge or rng "
        "promise of f: it could never earn"
    ]


def test_build_refuses_a_check_naming_an_undeclared_promise_or_another_exercises(small_kit, capsys):
    hidden = small_kit / "tests/hidden/test_ex02_halve.py"
    hidden.write_text(
        SMALL_HALVE.replace("def test_halves", '@pytest.mark.promise("halve.value")\ndef test_halves')
    )
    assert main(["--root", str(small_kit), "build"]) == 2
    assert capsys.readouterr().err == (
        "grader: error: tests/hidden/test_ex02_halve.py::test_halves names the promise 'halve.value', "
        "which no file of tests/promises declares: fix the marker or tests/promises\n"
    )
    hidden.write_text(
        SMALL_HALVE.replace("def test_halves", '@pytest.mark.promise("double.value")\ndef test_halves')
    )
    assert main(["--root", str(small_kit), "build"]) == 2
    assert capsys.readouterr().err == (
        "grader: error: tests/hidden/test_ex02_halve.py::test_halves (exercise 2) names the promise "
        "'double.value' of double, which is exercise 1's: fix the marker or tests/promises\n"
    )


def test_build_refuses_a_bad_promise_file_in_one_line(small_kit, capsys):
    promises = small_kit / "tests/promises/ex01.toml"
    promises.write_text(SMALL_PROMISES.replace('kind = "edge"', 'kind = "corner"'))
    assert main(["--root", str(small_kit), "build"]) == 2
    assert capsys.readouterr().err == (
        "grader: error: tests/promises/ex01.toml:17: [[promise]] 3: "
        f"kind 'corner' is not one of {', '.join(KINDS)}\n"
    )


def test_a_check_names_one_promise_at_most(small_kit, capsys):
    visible = small_kit / "tests/visible/test_ex01_double.py"
    visible.write_text(
        SMALL_VISIBLE.replace("def test_doubles(", '@pytest.mark.promise("double.zero")\ndef test_doubles(')
    )
    assert main(["--root", str(small_kit), "build"]) == 2
    err = capsys.readouterr().err
    assert "test_ex01_double.py:" in err
    assert ': test_doubles names its promise once, @pytest.mark.promise("function.name")' in err


def test_an_edited_promise_file_makes_the_inventory_stale(small_kit):
    build(small_kit)
    promises = small_kit / "tests/promises/ex01.toml"
    promises.write_text(SMALL_PROMISES.replace("weight = 2", "weight = 3"))
    assert build(small_kit, check=True).stale == (INVENTORY, POINTS_DOC)
    with pytest.raises(
        InventoryError, match=r"the suite files differ from tests/inventory.json \(tests/promises/ex01"
    ):
        load_inventory(small_kit)


def test_the_points_document_splits_each_entry_over_its_promises(small_kit):
    """Exercise 1: 4 points over 6 checks, the visible entry 1.33 (2 checks) over weights 2 (double.value,
    written) and 0.6 (double.refuses), the hidden 2.67 over weights 2, 0.6 and 1 (its unmarked case, a
    promise of its own); double.zero, which no check names, 0. The 0.6 is the default of issue 30: the
    function's two other promises share 2/5 of its 3 (it was 1: refuses had 1.11 points, value 2.22)."""
    build(small_kit)
    text = (small_kit / POINTS_DOC).read_text()
    assert text == points_doc(small_manifest(small_kit), load_inventory(small_kit))
    rows = [
        "| 1 double | 4 | 1.33 (2 checks) | 2.67 (4 checks) | 3 | 1 |",
        "| 2 halve | 2 | 1 (1 check) | 1 (1 check) | 0 | 2 |",
        "| `double.refuses` | error | 0.6 | ValueError when x is not a number | 1 | 0.31 | 1 | 0.44 | 0.75 |",
        "| `double.value` | value | 2 | twice x | 1 | 1.02 | 2 | 1.48 | 2.51 |",
        "| `double.zero` | edge | 0.6 | twice 0 is 0 | - | - | - | - | 0 |",
        f"| {UNMARKED} |  | 1 each |  | - | - | 1 | 0.74 | 0.74 |",
        "Not annotated yet: `tests/promises/ex02.toml` is missing.",
    ]
    assert [row for row in rows if row not in text.splitlines()] == []


# -- scoring by promise ---------------------------------------------------------------------------------


def record(name: str, passed: bool, promise: str = "", suite: str = "hidden") -> TestRecord:
    return TestRecord(
        f"tests/{suite}/t.py::{name}", 1, suite, passed, "passed" if passed else "failed", "p", "", promise
    )


PROMISES_F = {
    "f.value": Promise("f.value", 1, "f", "value", "v", 2),
    "f.edge": Promise("f.edge", 1, "f", "edge", "e", 1),
    "f.error": Promise("f.error", 1, "f", "error", "x", 1),
    "g.value": Promise("g.value", 1, "g", "value", "v", 1),
}


# -- points follow what breaks (issue 30) -------------------------------------------------------------


def _function(name: str, values: int, others: int, other_kind: str = "edge") -> list[Promise]:
    return [Promise(f"{name}.v{i}", 1, name, "value", "v") for i in range(values)] + [
        Promise(f"{name}.o{i}", 1, name, other_kind, "o") for i in range(others)
    ]


@pytest.mark.parametrize(
    ("values", "others", "value_weight", "other_weight"),
    [
        (2, 6, 0.6 * 8 / 2, 0.4 * 8 / 6),  # _pareto's shape: the core 3/5, six others 2/5
        (1, 1, 0.7 * 2, 0.3 * 2),  # one other promise: at most 3/10
        (3, 2, 0.6 * 5 / 3, 0.4 * 5 / 2),
        (4, 0, 1.0, None),  # nothing but its core
        (0, 3, None, 1.0),  # no value promise: its edge and rng promises are its core
    ],
)
def test_default_weights_give_the_core_three_fifths_of_its_function(
    values, others, value_weight, other_weight
):
    """A function's default weights add up to its number of promises, so the functions of an exercise
    share it as before issue 30 (1 a promise); within it the value promises carry 3/5."""
    promises = _function("f", values, others)
    weights = default_weights(promises)
    assert sum(weights.values()) == pytest.approx(values + others)
    for promise in promises:
        expected = value_weight if promise.kind == "value" else other_weight
        assert weights[promise.id] == pytest.approx(expected), promise.id


def _kept(functions: list[list[Promise]], failing: dict[str, int], checks: int = 3) -> dict[str, float]:
    """Each function's share of a 100-point hidden entry that it keeps when `failing[P]` of the `checks`
    checks of each promise P fail (the functions' weights their defaults)."""
    promises = {}
    for mine in functions:
        weights = default_weights(mine)
        promises.update((p.id, Promise(p.id, 1, p.function, p.kind, p.says, weights[p.id])) for p in mine)
    exercise = Exercise(1, "f", "1. numbers", tuple(m[0].function for m in functions), 100, "visible", "")

    def score(fails: Callable[[Promise, int], bool]) -> float:
        records = [
            record(f"{p.id}-{i}", not fails(p, i), p.id) for p in promises.values() for i in range(checks)
        ]
        [hidden] = score_exercise(exercise, records, ["hidden"], promises)
        return hidden.score

    scored = score(lambda p, i: i < failing.get(p.id, 0))
    total = sum(p.weight for p in promises.values())
    kept = {}
    for mine in functions:
        name = mine[0].function
        without = score(lambda p, i, name=name: p.function == name or i < failing.get(p.id, 0))
        kept[name] = (scored - without) / (100 * sum(p.weight for p in mine) / total)
    return kept


SHAPES = [(1, 1), (2, 6), (3, 2), (1, 9), (5, 5), (2, 1)]  # (value promises, other promises)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("neighbours", [0, 1, 2])
def test_a_broken_core_keeps_at_most_two_fifths_of_its_function(shape, neighbours):
    """Every value check failing, or two of each value promise's three, or one value promise of several
    wholly or two of its three checks (the function does not compute): the function keeps at most 40%
    of its points, whatever its other promises, and the exercise's other functions keep all of theirs."""
    f = _function("f", *shape)
    rest = [_function(name, 2, 3) for name in ("g", "h")[:neighbours]]
    values = [p.id for p in f if p.kind == "value"]
    breaks = [dict.fromkeys(values, 3), dict.fromkeys(values, 2), {values[-1]: 3}, {values[0]: 2}]
    for failing in breaks:
        kept = _kept([f, *rest], failing)
        assert kept["f"] <= 0.40 + 1e-3, (shape, failing, kept)
        assert all(kept[m[0].function] == pytest.approx(1, abs=1e-3) for m in rest), kept


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["edge", "form", "unchanged", "rng", "error"])
def test_one_slip_of_form_or_edge_keeps_at_least_seven_tenths_of_its_function(shape, kind):
    """One other promise failing wholly, the core computing: the function keeps at least 70%."""
    f = _function("f", *shape, other_kind=kind)
    slip = next(p.id for p in f if p.kind == kind)
    kept = _kept([f, _function("g", 2, 2)], {slip: 3})
    assert 0.70 - 1e-3 <= kept["f"] < 1, (shape, kind, kept)


def test_doing_nothing_of_the_right_type_earns_nothing_in_the_hidden_entry():
    """An answer that does no work keeps the invariants ("the front is never empty", the right type,
    the arguments unchanged) and fails the core: none of those checks earns, as on the visible entry.
    With one core check in three failing, the function computes: its other checks earn."""
    f = _function("f", 2, 0) + [
        Promise("f.never_empty", 1, "f", "edge", "e"),
        Promise("f.a_list", 1, "f", "form", "t"),
        Promise("f.unchanged", 1, "f", "unchanged", "u"),
    ]
    assert _kept([f], {"f.v0": 3, "f.v1": 3})["f"] == 0.0
    assert _kept([f], {"f.v0": 2, "f.v1": 2})["f"] == pytest.approx(0.6 / 3, abs=1e-3)
    assert _kept([f], {"f.v0": 1, "f.v1": 1})["f"] == pytest.approx(1 - 0.6 / 3, abs=1e-3)


def test_an_entry_splits_over_its_promises_by_weight_and_a_promise_over_its_checks():
    """8 points over weights 2 (f.value), 1 (f.edge), 1 (g.value): 4, 2 and 2 points; f.value's 4 over
    its 4 checks, 1 each."""
    records = [record(f"v{i}", i < 3, "f.value") for i in range(4)]
    records += [record("e", False, "f.edge"), record("g", True, "g.value")]
    assert entry_score(8, tallies(records, PROMISES_F)) == 3 + 2
    records[-1] = record("g", False, "g.value")
    assert entry_score(8, tallies(records, PROMISES_F)) == 3
    assert entry_score(8, tallies([record(r.nodeid, True, r.promise) for r in records], PROMISES_F)) == 8


@pytest.mark.parametrize(
    ("passing", "earned"),
    [
        ({"f.error"}, 0.0),  # raises on every input: the error check alone earns nothing
        ({"f.error", "g.value"}, 1.5),  # g's value check is another function's: f's error check still nothing
        ({"f.error", "f.edge"}, 3.0),  # an edge check of f passes: the error check earns its 1.5
        ({"f.error", "f.value"}, 3.0),
        ({"f.value"}, 1.5),
    ],
)
def test_an_error_check_earns_only_beside_a_passing_check_of_another_kind_of_its_function(passing, earned):
    """6 points over f.value, f.edge, f.error and g.value (weights 1 here): 1.5 each."""
    promises = {k: Promise(p.id, 1, p.function, p.kind, p.says, 1) for k, p in PROMISES_F.items()}
    records = [record(name, name in passing, name) for name in ("f.value", "f.edge", "f.error", "g.value")]
    assert entry_score(6, tallies(records, promises)) == earned


@pytest.mark.parametrize(
    ("passing", "earned"),
    [
        ({"f.unchanged"}, 0.0),  # returns at once, its arguments untouched: the unchanged check earns nothing
        ({"f.unchanged", "f.error"}, 0.0),  # and raises on bad input: still nothing
        ({"f.unchanged", "f.value"}, 3.0),  # a value check of f passes: the unchanged check earns its 1.5
    ],
)
def test_an_unchanged_check_earns_only_beside_a_passing_check_of_the_functions_results(passing, earned):
    """6 points over f.value, f.unchanged, f.error and g.value (weights 1): 1.5 each; an argument left
    alone is worth something only from a function that does its work."""
    promises = {
        "f.value": Promise("f.value", 1, "f", "value", "v"),
        "f.unchanged": Promise("f.unchanged", 1, "f", "unchanged", "u"),
        "f.error": Promise("f.error", 1, "f", "error", "e"),
        "g.value": Promise("g.value", 1, "g", "value", "v"),
    }
    records = [record(name, name in passing, name) for name in promises]
    assert entry_score(6, tallies(records, promises)) == earned


def test_an_error_check_is_not_unlocked_by_the_other_entry():
    """The hidden entry's value check of f passes; the visible entry's error check still earns nothing."""
    exercise = Exercise(1, "f", "1. numbers", ("f", "g"), 4, "after_published", "property")
    records = [
        record("a", True, "f.error", "visible"),
        record("b", False, "f.value", "visible"),
        record("c", True, "f.value", "hidden"),
    ]
    visible, hidden = score_suites(
        Manifest("optimization_toolkit", (exercise,)), records, promises=PROMISES_F
    )
    assert (visible.score, visible.max_score, hidden.score, hidden.max_score) == (0.0, 2.67, 1.33, 1.33)


@pytest.mark.parametrize(
    ("hidden_passing", "visible_score"),
    [
        (set(), 0.0),  # no hidden check passes: the visible answers may only be recalled, none earns
        ({"h-g"}, 0.53),  # g's hidden value check: g's visible check earns (weight 1 of 3), f's not
        ({"h-f-error"}, 0.0),  # an error check proves no working f (it is gated itself)
        ({"h-f", "h-g"}, 1.6),
    ],
)
def test_a_visible_check_earns_only_beside_a_passing_hidden_check_of_its_function(
    hidden_passing, visible_score
):
    """The visible inputs and answers are in the handout: a table of them passes every visible check.
    Where the hidden entry ran, a function's visible checks earn only where a hidden check of a value,
    edge or rng promise of it passes; the hidden entry is scored as before. Without hidden records (a
    student's own run) nothing is withheld."""
    exercise = Exercise(1, "f", "1. numbers", ("f", "g"), 4, "after_published", "property")
    records = [record("v-f", True, "f.value", "visible"), record("v-g", True, "g.value", "visible")]
    hidden = [("h-f", "f.value"), ("h-f-error", "f.error"), ("h-g", "g.value")]
    records += [record(name, name in hidden_passing, promise) for name, promise in hidden]
    manifest = Manifest("optimization_toolkit", (exercise,))
    visible, _ = score_suites(manifest, records, promises=PROMISES_F)
    assert (visible.score, visible.max_score) == (visible_score, 1.6)
    names = {"f", "g"} - {n[2] for n in hidden_passing if n in ("h-f", "h-g")}
    assert set(visible.withheld) == names
    (alone,) = score_suites(manifest, records[:2], promises=PROMISES_F)
    assert (alone.score, alone.withheld) == (4.0, ())


@pytest.mark.parametrize(
    ("value_passing", "edge_passing", "earns"),
    [
        (0, 2, False),  # the cheap cases alone (a single element, equal inputs): they unlocked f before
        (2, 2, False),  # half its value checks: a ranking that is no softmax passes that many
        (3, 0, True),  # most of them
        (4, 2, True),
    ],
)
def test_a_visible_check_earns_only_where_most_hidden_value_checks_of_its_function_pass(
    value_passing, edge_passing, earns
):
    """One passing hidden check of a value, edge or rng promise unlocked a function's visible checks:
    a table of the visible answers beside answers to the cheap cases earned them. Now more than half the
    function's hidden checks of value promises must pass; its edge checks alone unlock nothing."""
    exercise = Exercise(1, "f", "1. numbers", ("f", "g"), 4, "after_published", "property")
    records = [record("v-f", True, "f.value", "visible")]
    records += [record(f"h-v{i}", i < value_passing, "f.value") for i in range(4)]
    records += [record(f"h-e{i}", i < edge_passing, "f.edge") for i in range(2)]
    visible, _ = score_suites(Manifest("optimization_toolkit", (exercise,)), records, promises=PROMISES_F)
    assert (visible.score == visible.max_score > 0) if earns else (visible.score == 0.0), visible
    assert visible.withheld == (() if earns else ("f",))


def test_a_function_without_hidden_value_checks_is_proven_by_most_of_its_edge_checks():
    exercise = Exercise(1, "f", "1. numbers", ("f", "g"), 4, "after_published", "property")
    promises = {"f.edge": Promise("f.edge", 1, "f", "edge", "e", 1), "f.value": PROMISES_F["f.value"]}
    for passing, earns in ((1, False), (2, True)):
        records = [record("v-f", True, "f.value", "visible")]
        records += [record(f"h-e{i}", i < passing, "f.edge") for i in range(3)]
        visible, _ = score_suites(Manifest("optimization_toolkit", (exercise,)), records, promises=promises)
        assert (visible.score > 0) is earns, (passing, visible)


def test_every_function_a_visible_check_names_has_a_hidden_check_that_can_unlock_it():
    """A visible check earns only where most of its function's hidden value checks pass (edge and rng
    ones where it has none): a function with visible checks and no such hidden check could never earn
    them."""
    promises = inventory_promises(INVENTORY_DATA)
    named: dict[str, set[tuple[int, str]]] = {"visible": set(), "hidden": set()}
    for test in INVENTORY_DATA["tests"]:
        promise = promises.get(test.get("promise") or "")
        if test["suite"] == "hidden" and promise is not None and promise.kind in GATED:
            continue
        named[test["suite"]].add((test["exercise"], promise.function if promise else ""))
    assert named["visible"] <= named["hidden"], sorted(named["visible"] - named["hidden"])


def test_unmarked_checks_score_exactly_as_every_check_worth_the_same_did():
    """Before the annotations, each check is a promise of its own: points * passed / checks, to the cent,
    for every entry size and every number passed."""
    for hundredths in range(1, 1001, 7):
        points = hundredths / 100
        for checks in range(1, 26):
            for passed in range(checks + 1):
                entry = [Tally("", "value", 1, 1, int(i < passed)) for i in range(checks)]
                old = cents(points * passed / checks)
                assert entry_score(points, entry) == old, (points, checks, passed)


def test_a_records_promise_is_the_inventorys_never_the_runs():
    inventory = {
        "tests": [
            {
                "nodeid": "tests/hidden/t.py::a",
                "exercise": 1,
                "suite": "hidden",
                "property": "p",
                "promise": "f.error",
            },
            {
                "nodeid": "tests/hidden/t.py::b",
                "exercise": 1,
                "suite": "hidden",
                "property": "p",
                "promise": "f.value",
            },
        ]
    }
    reported = [record("a", True, "f.value")]  # what a run might say: ignored
    accounted = account_for(inventory, reported, "did not run")
    assert [(r.promise, r.passed, r.outcome) for r in accounted] == [
        ("f.error", True, "passed"),
        ("f.value", False, "missing"),
    ]


def test_a_check_naming_a_promise_the_kit_lacks_is_a_kit_error():
    with pytest.raises(KitError, match="names the promise 'f.gone', which the kit lacks"):
        tallies([record("a", True, "f.gone")], PROMISES_F)


def test_results_json_keeps_each_checks_promise_and_its_records_rescore_to_the_same_points():
    exercise = Exercise(1, "f", "1. numbers", ("f", "g"), 5, "after_published", "property")
    manifest = Manifest("optimization_toolkit", (exercise,))
    records = [
        record("a", True, "f.error", "visible"),
        record("b", True, "f.value", "visible"),
        record("c", False, "", "visible"),
        record("d", True, "f.edge", "hidden"),
        record("e", False, "f.value", "hidden"),
        record("f", True, "f.error", "hidden"),
    ]
    scores = score_suites(manifest, records, promises=PROMISES_F)
    document = results_document(scores)
    rebuilt = [
        TestRecord(
            check["check"], entry["extra_data"]["exercise"], entry["extra_data"]["suite"], check["passed"],
            "passed" if check["passed"] else "failed", check["property"], "", check["promise"],
        )
        for entry in document["tests"]
        for check in entry["extra_data"]["checks"]
    ]  # fmt: skip
    assert [check["promise"] for entry in document["tests"] for check in entry["extra_data"]["checks"]] == [
        "f.error", "f.value", "", "f.edge", "f.value", "f.error",
    ]  # fmt: skip
    rescored = score_suites(manifest, rebuilt, promises=PROMISES_F)
    assert [(s.score, s.max_score) for s in rescored] == [(s.score, s.max_score) for s in scores]
    assert document["score"] == sum(s.score for s in scores) and document["score"] < 5


def test_the_local_verdict_scores_the_visible_entry_as_grading_does():
    """A run of the visible checks: the verdict's points are the visible entry's from
    grader.assignment.scoring."""
    info = ExerciseInfo(
        1, "f", ("f", "g"), 5, visible=5, hidden=3, visible_points=3.13,
        promises=(
            VisiblePromise("f.value", "f", "value", 2, 2), VisiblePromise("f.error", "f", "error", 1, 2)
        ),
        unmarked=1,
    )  # fmt: skip
    runs = [
        {"a": "f.error", "b": "f.error"},  # raises on every input: only the error checks pass
        {"a": "f.error", "c": "f.value"},
        {"a": "f.error", "b": "f.error", "c": "f.value", "d": "f.value", "e": ""},
        {"e": ""},
    ]
    checks = {"a": "f.error", "b": "f.error", "c": "f.value", "d": "f.value", "e": ""}
    for passing in runs:
        verdict = Verdict([info])
        for name, promise in checks.items():
            verdict.record(name, 1, "visible", "passed" if name in passing else "failed", "", promise)
        records = [record(name, name in passing, promise, "visible") for name, promise in checks.items()]
        [row] = verdict.rows()
        assert row["score"] == entry_score(3.13, tallies(records, PROMISES_F)), passing
        assert row["max_score"] == 3.13


def test_the_handouts_exercise_data_holds_the_visible_promises_only(small_kit):
    build(small_kit)
    data = exercises_data(small_manifest(small_kit), load_inventory(small_kit))
    assert data[0]["promises"] == [  # refuses: its role's default weight (issue 30), value: written
        {"id": "double.value", "function": "double", "kind": "value", "weight": 2, "checks": 1},
        {"id": "double.refuses", "function": "double", "kind": "error", "weight": 0.6, "checks": 1},
    ]
    assert (data[0]["visible_points"], data[0]["unmarked"], data[1]["unmarked"]) == (1.33, 0, 1)
    text = json.dumps(data)
    assert "double.zero" not in text and "says" not in text and "test_" not in text


def test_grading_scores_a_submission_that_raises_by_promise_end_to_end(small_kit, tmp_path):
    """`grader grade` on the small kit: the reference gets every point; `double` raising ValueError on
    every call passes both error checks and earns nothing on exercise 1, and results.json says which
    promise each check checks."""
    build(small_kit)
    reference = grade(small_kit, small_kit / "solutions/optimization_toolkit.py", tmp_path / "ref.json")
    assert reference.document["score"] == 6
    raising = tmp_path / "optimization_toolkit.py"
    raising.write_text(SMALL_REFERENCE.replace('    """Twice x; ValueError when x is not a number."""\n', (
        '    """Twice x; ValueError when x is not a number."""\n    raise ValueError("no")\n'
    )))  # fmt: skip
    graded = grade(small_kit, raising, tmp_path / "results.json")
    entries = {t["name"]: (t["score"], t["extra_data"]["passed"]) for t in graded.document["tests"]}
    assert entries == {
        "1 double: visible checks": (0.0, 1),
        "1 double: hidden checks": (0.0, 1),
        "2 halve: visible checks": (1.0, 1),
        "2 halve: hidden checks": (1.0, 1),
    }
    checks = {
        c["check"].split("::")[1]: c["promise"]
        for t in graded.document["tests"]
        for c in t["extra_data"]["checks"]
    }
    assert checks["test_refuses_none"] == "double.refuses" and checks["test_doubles_more[0.5]"] == ""


# -- trivial answers that raise ---------------------------------------------------------------------------


def test_answers_that_raise_on_every_call_earn_nothing_where_error_checks_are_gated(small_kit):
    """The ValueError answer passes both error checks of exercise 1 and earns nothing for them; the same
    checks left unmarked (each a promise of its own, as before the annotations) would have earned."""
    build(small_kit)
    code = f"""
        import json
        from pathlib import Path
        from grader.grading import grade
        from grader.grading.grade import kit_manifest
        from grader.authoring.trivial import check_trivial
        root = Path({str(small_kit)!r})
        variants = ["raises-valueerror", "raises-typeerror"]
        [check] = check_trivial(root, [kit_manifest(root).by_id(1)], variants)
        print(json.dumps({{o.variant: [sorted(o.passed), o.earned, o.share] for o in check.outcomes}}))
    """
    run = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr
    outcomes = json.loads(run.stdout.splitlines()[-1])
    passed, earned, share = outcomes["raises-valueerror"]
    assert [p.split("::")[1] for p in passed] == ["test_refuses_none", "test_refuses_text"]
    assert (earned, share) == (0.0, 0.0)
    assert outcomes["raises-typeerror"] == [[], 0.0, 0.0]
    inventory = load_inventory(small_kit)
    tests = [t for t in inventory["tests"] if t["exercise"] == 1]
    unmarked = [dict(t, promise="") for t in tests]
    exercise = small_manifest(small_kit).by_id(1)
    assert earned_points(exercise, unmarked, passed, {}) == 0.67 + 0.67  # 1.33 / 2 and 2.67 / 4
    assert earned_points(exercise, tests, passed, inventory_promises(inventory)) == 0.0


def test_answers_that_raise_earn_nothing_on_exercise_17():
    """DGM parents: an unknown mode raises ValueError (a visible and a hidden check); a stub raising
    ValueError earned 0.58 of its 5 points before the error checks were gated."""
    run = subprocess.run(
        [sys.executable, "-m", "grader.authoring.trivial", "17"],
        cwd=KIT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
