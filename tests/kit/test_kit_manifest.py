"""The manifest loader: the data it gives, and one-line `file:LINE: problem` errors for bad manifests."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.assignment.manifest import (
    Budget,
    Exercise,
    Manifest,
    ManifestError,
    load_manifest,
    parse_manifest,
)
from grader.assignment.reference import parse_reference
from grader.cli import main

REFERENCE = parse_reference(
    "def alpha():\n    pass\n\n\ndef beta():\n    pass\n\n\ndef gamma():\n    pass\n\n\nclass Box:\n"
    "    def delta(self):\n        pass\n",
    "solutions/optimization_toolkit.py",
)

# line numbers are part of the expected errors below
GOOD = """\
[defaults]
module = "optimization_toolkit"
hidden_visibility = "after_published"
hidden_output = "property"

[[exercise]]
id = 1
title = "first"
part = "1. part"
functions = ["alpha"]
points = 4

[[exercise]]
id = 2
title = "second"
part = "2. part"
functions = [
    "beta",
    "gamma",
]
points = 2.5
hidden_visibility = "hidden"
hidden_output = "full"
"""


def test_good_manifest_gives_exercises_with_defaults_applied() -> None:
    manifest = parse_manifest(GOOD, REFERENCE)

    assert manifest == Manifest(
        module="optimization_toolkit",
        exercises=(
            Exercise(1, "first", "1. part", ("alpha",), 4, "after_published", "property"),
            Exercise(2, "second", "2. part", ("beta", "gamma"), 2.5, "hidden", "full"),
        ),
    )
    assert manifest.total_points == 6.5
    assert manifest.functions == ("alpha", "beta", "gamma")
    assert manifest.by_id(2).label == "2 second"
    assert manifest.by_function("gamma").id == 2
    with pytest.raises(KeyError):
        manifest.by_id(3)
    with pytest.raises(KeyError):
        manifest.by_function("delta")


def test_manifest_is_frozen() -> None:
    manifest = parse_manifest(GOOD, REFERENCE)
    with pytest.raises(AttributeError):
        manifest.exercises[0].points = 100  # type: ignore[misc]


BAD = [
    # the first `old` in GOOD becomes `new`; the error is at `line` and contains `problem`
    pytest.param(
        '"gamma"', '"omega"', 19, "function 'omega' is not a top-level def in", id="unknown function"
    ),
    pytest.param(
        '"gamma"', '"delta"', 19, "function 'delta' is not a top-level def", id="method is not top level"
    ),
    pytest.param(
        '"gamma"', '"alpha"', 19, "function 'alpha' is already in exercise 1 (first)", id="function twice"
    ),
    pytest.param('"gamma"', '"beta"', 17, "functions: 'beta' is listed twice", id="twice in one entry"),
    pytest.param('["alpha"]', '"alpha"', 10, "functions must be a non-empty list", id="functions not a list"),
    pytest.param('["alpha"]', "[]", 10, "functions must be a non-empty list", id="empty functions"),
    pytest.param("points = 4", "points = 0", 11, "points must be a positive number, not 0", id="zero points"),
    pytest.param(
        "points = 2.5",
        "points = -1.5",
        21,
        "points must be a positive number, not -1.5",
        id="negative points",
    ),
    pytest.param(
        "points = 4", 'points = "4"', 11, "points must be a positive number, not '4'", id="points as text"
    ),
    pytest.param(
        "points = 4", "points = nan", 11, "points must be a positive number, not nan", id="points nan"
    ),
    pytest.param(
        '"hidden"\nhidden_output',
        '"secret"\nhidden_output',
        22,
        "hidden_visibility must be one of hidden, after_due_date, after_published, visible, not 'secret'",
        id="bad visibility",
    ),
    pytest.param(
        '"property"', '"everything"', 4, "[defaults]: hidden_output must be one of", id="bad default output"
    ),
    pytest.param(
        "points = 4\n",
        "points = 4\nbonus = 1\n",
        12,
        "[[exercise]] entry 1: unknown key 'bonus'",
        id="unknown key",
    ),
    pytest.param(
        "[[exercise]]\nid = 1",
        "[extras]\n[[exercise]]\nid = 1",
        6,
        "unknown table or key 'extras'",
        id="unknown table",
    ),
    pytest.param('title = "second"\n', "", 13, "[[exercise]] entry 2: missing key 'title'", id="missing key"),
    pytest.param('id = 1\ntitle = "first"\n', "", 6, "missing keys 'id', 'title'", id="missing keys"),
    pytest.param(
        'module = "optimization_toolkit"\n',
        "",
        1,
        "[defaults]: missing key 'module'",
        id="missing defaults key",
    ),
    pytest.param("id = 2", "id = 3", 14, "id 3 out of order: expected 2", id="ids out of order"),
    pytest.param("id = 2", "id = 1", 14, "duplicate id 1", id="duplicate id"),
    pytest.param("id = 1", "id = 1.0", 7, "id must be a positive integer, not 1.0", id="id not an integer"),
    pytest.param(
        'title = "first"', 'title = ""', 8, "title must be a non-empty one-line string", id="empty title"
    ),
    pytest.param(
        '"optimization_toolkit"',
        '"optimization-toolkit"',
        2,
        "module must be a Python",
        id="module not a name",
    ),
    pytest.param("points = 4", "points = ", 11, "TOML syntax error: Invalid value", id="toml syntax error"),
    pytest.param("points = 4", "points = 4\npoints = 5", 12, "TOML syntax error", id="toml duplicate key"),
]


def _bad_manifest(old: str, new: str) -> str:
    assert old in GOOD, old
    return GOOD.replace(old, new, 1)


@pytest.mark.parametrize(("old", "new", "line", "problem"), BAD)
def test_bad_manifest_is_one_line_error_naming_file_and_line(
    old: str, new: str, line: int, problem: str
) -> None:
    with pytest.raises(ManifestError) as caught:
        parse_manifest(_bad_manifest(old, new), REFERENCE)

    message = str(caught.value)
    assert "\n" not in message
    assert message.startswith(f"grader/exercises.toml:{line}: ")
    assert problem in message
    assert caught.value.line == line


@pytest.mark.parametrize(("old", "new", "line", "problem"), BAD)
def test_cli_reports_bad_manifest_on_one_line_and_exits_2(
    kit_tree: Path, capsys: pytest.CaptureFixture[str], old: str, new: str, line: int, problem: str
) -> None:
    (kit_tree / "grader" / "exercises.toml").write_text(_bad_manifest(old, new), encoding="utf-8")
    (kit_tree / "solutions" / "optimization_toolkit.py").write_text(REFERENCE.source, encoding="utf-8")

    code = main(["--root", str(kit_tree), "build"])

    captured = capsys.readouterr()
    assert code == 2
    assert captured.out == ""
    assert captured.err.startswith(f"grader: error: grader/exercises.toml:{line}: ")
    assert problem in captured.err
    assert captured.err.count("\n") == 1
    assert not (kit_tree / "student").exists()


def test_load_manifest_reads_the_file_and_names_it(tmp_path: Path) -> None:
    path = tmp_path / "exercises.toml"
    path.write_text(GOOD.replace("points = 4", "points = 0"), encoding="utf-8")

    with pytest.raises(ManifestError, match=r"^shown\.toml:11: "):
        load_manifest(path, REFERENCE, shown_as="shown.toml")


def test_missing_manifest_file_is_reported(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"^grader/exercises\.toml: no such file$"):
        load_manifest(tmp_path / "nothing.toml", REFERENCE, shown_as="grader/exercises.toml")


def test_a_budget_table_sets_what_a_grading_may_cost_and_defaults_without_it() -> None:
    """[budget] (issue 33): the grading's CPU and wall-clock budgets; left out, the defaults."""
    assert parse_manifest(GOOD, REFERENCE).budget == Budget()
    text = GOOD.replace("[[exercise]]", "[budget]\ncpu_seconds = 30\nwall_seconds = 120.5\n\n[[exercise]]", 1)
    budget = parse_manifest(text, REFERENCE).budget
    assert (budget.cpu_seconds, budget.exercise_cpu_seconds, budget.wall_seconds) == (30.0, 20.0, 120.5)
    assert budget.suite_cpu_seconds(2) == 15.0
    for bad in ("cpu_seconds = 0", "cpu_seconds = true", "minutes = 3"):
        with pytest.raises(ManifestError, match=r"\[budget\]"):
            parse_manifest(GOOD.replace("[[exercise]]", f"[budget]\n{bad}\n\n[[exercise]]", 1), REFERENCE)
