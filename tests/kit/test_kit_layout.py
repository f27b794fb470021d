"""What ships where: each set of grader modules that leaves the kit (the worker's runtime, the student
handout's runner, the autograder zip) imports only from itself at module level, so each imports where it
is unpacked. (Imports inside functions serve commands that do not run there, such as `grader batch`.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.layout import GRADING_MODULES, HANDOUT_RUNNER, WORKER_RUNTIME, shipped_modules

GRADER = Path(__file__).resolve().parents[2] / "grader"


def module_name(dotted: str) -> set[str]:
    """The grader modules that importing `dotted` (grader.x.y, a module or a name in one) loads, as
    layout names them ("x/y", "x/__init__"): the module and the package that holds it."""
    parts = dotted.split(".")[1:]
    found = set()
    for depth in range(1, len(parts) + 1):
        path = "/".join(parts[:depth])
        if (GRADER / f"{path}.py").is_file():
            found.add(path)
            break
        if (GRADER / path).is_dir():
            found.add(f"{path}/__init__")
    return found or {"__init__"}  # a name of grader/__init__.py


def grader_imports(module: str) -> set[str]:
    """The grader modules that importing `module` imports (its top-level import statements)."""
    found: set[str] = set()
    for node in ast.parse((GRADER / f"{module}.py").read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "grader":
            for alias in node.names:  # a submodule, or a name of the module
                found |= module_name(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found |= module_name(alias.name) if alias.name.startswith("grader.") else set()
    return found


SETS = {
    "worker": ["__init__", *shipped_modules((WORKER_RUNTIME,))],  # under an empty grader/__init__.py
    "handout": shipped_modules(HANDOUT_RUNNER),
    "autograder": shipped_modules(GRADING_MODULES),
}


@pytest.mark.parametrize("shipped", SETS.values(), ids=SETS.keys())
def test_each_shipped_set_imports_only_from_itself(shipped):
    imports = {(module, imported) for module in shipped for imported in grader_imports(module)}
    outside = sorted((module, imported) for module, imported in imports if imported not in shipped)
    assert not outside, f"imported from outside the set: {outside}"


def test_the_worker_runtime_is_a_folder_that_imports_only_itself():
    runtime = shipped_modules((WORKER_RUNTIME,))
    assert {"runtime/worker", "runtime/protocol", "runtime/codec", "runtime/audit"} <= set(runtime)
    assert all(imported.startswith("runtime/") for module in runtime for imported in grader_imports(module))


def test_the_import_reader_sees_every_form_of_import():
    worker = grader_imports("runtime/worker")  # from grader.x.y import z
    assert {"runtime/codec", "runtime/protocol", "runtime/audit", "runtime/__init__"} <= worker
    assert "main" not in grader_imports("__main__") and "cli" in grader_imports("__main__")
    assert "assignment/manifest" not in grader_imports("pytest_plugin")  # imported inside a function only
    assert "__init__" in grader_imports("grading/grade")  # from grader import __version__
    assert "sandbox/isolation" in grader_imports("sandbox/sandbox")  # from grader.sandbox import isolation
