"""The committed student module: up to date, stubs where the manifest says, all else as in the reference."""

from __future__ import annotations

import ast
import importlib.util
import inspect
import sys
from collections.abc import Iterator
from types import ModuleType

import pytest

from grader.assignment.manifest import Manifest, load_manifest
from grader.assignment.reference import FunctionNode, Reference, read_reference
from grader.authoring.build import build
from grader.authoring.stubs import stub_message
from grader.layout import MANIFEST, REFERENCE, STUDENT
from tests.kit.conftest import KIT


@pytest.fixture(scope="module")
def reference() -> Reference:
    return read_reference(KIT / REFERENCE, REFERENCE.as_posix())


@pytest.fixture(scope="module")
def student() -> Reference:
    return read_reference(KIT / STUDENT, STUDENT.as_posix())


@pytest.fixture(scope="module")
def manifest(reference: Reference) -> Manifest:
    return load_manifest(KIT / MANIFEST, reference, MANIFEST.as_posix())


@pytest.fixture(scope="module")
def student_module() -> Iterator[ModuleType]:
    name = "optlab_student_mirror"
    spec = importlib.util.spec_from_file_location(name, KIT / STUDENT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while the class is created
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[name]


def test_the_repository_manifest_is_valid(manifest: Manifest) -> None:
    assert manifest.module == "optimization_toolkit"
    assert [exercise.id for exercise in manifest.exercises] == list(range(1, len(manifest.exercises) + 1))
    assert manifest.total_points == sum(exercise.points for exercise in manifest.exercises)
    assert manifest.by_function("_pareto").label == "6 Pareto selection"


def test_committed_student_module_is_up_to_date() -> None:
    assert build(KIT, check=True).stale == ()


def test_every_exercise_function_raises_its_exercise_message(
    manifest: Manifest, student_module: ModuleType
) -> None:
    for name in manifest.functions:
        function = getattr(student_module, name)
        required = [
            parameter
            for parameter in inspect.signature(function).parameters.values()
            if parameter.default is inspect.Parameter.empty
            and parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD)
        ]
        positional = [p for p in required if p.kind is not p.KEYWORD_ONLY]
        keywords = {p.name: None for p in required if p.kind is p.KEYWORD_ONLY}
        with pytest.raises(NotImplementedError) as caught:
            function(*[None] * len(positional), **keywords)
        assert str(caught.value) == stub_message(manifest.by_function(name), name), name


def _segments(module: Reference) -> list[tuple[str | None, str]]:
    """(name of a top-level def or None, its source text) for each top-level statement."""
    return [
        (
            node.name if isinstance(node, FunctionNode) else None,
            ast.get_source_segment(module.source, node) or "",
        )
        for node in module.tree.body
    ]


def _head(module: Reference, name: str) -> str:
    """The lines of a top-level def from its first decorator to the end of its docstring."""
    node = module.functions()[name][0]
    first = min([node.lineno, *(decorator.lineno for decorator in node.decorator_list)])
    docstring = node.body[0] if ast.get_docstring(node, clean=False) is not None else None
    last = docstring.end_lineno if docstring is not None else node.lineno
    return "".join(module.source.splitlines(keepends=True)[first - 1 : last])


def test_everything_but_the_exercise_bodies_is_identical(
    manifest: Manifest, reference: Reference, student: Reference
) -> None:
    expected, got = _segments(reference), _segments(student)

    assert [name for name, _ in got] == [name for name, _ in expected]
    exercise_functions = set(manifest.functions)
    for (name, want), (_, have) in zip(expected, got, strict=True):
        if name not in exercise_functions:
            assert have == want, f"top-level statement changed: {want.splitlines()[0]}"
    for name in exercise_functions:
        assert _head(student, name) == _head(reference, name), f"signature or docstring of {name} changed"
