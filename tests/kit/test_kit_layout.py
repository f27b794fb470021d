"""What ships where: each set of grader modules that leaves the kit (the worker's runtime, the student
handout's runner, the autograder zip) imports only from itself at module level, so each imports where it
is unpacked. (Imports inside functions serve commands that do not run there, such as `grader batch`.)"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from grader.layout import GRADING_MODULES, HANDOUT_RUNNER, WORKER_RUNTIME

GRADER = Path(__file__).resolve().parents[2] / "grader"


def grader_imports(module: str) -> set[str]:
    """The grader modules that importing `module` imports (its top-level import statements)."""
    found = set()
    for node in ast.parse((GRADER / f"{module}.py").read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module == "grader":  # a submodule, or a name of __init__
            found |= {a.name if (GRADER / f"{a.name}.py").is_file() else "__init__" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("grader."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("grader.")}
    return found


@pytest.mark.parametrize(
    "shipped", [WORKER_RUNTIME, HANDOUT_RUNNER, GRADING_MODULES], ids=["worker", "handout", "autograder"]
)
def test_each_shipped_set_imports_only_from_itself(shipped):
    imports = {(module, imported) for module in shipped for imported in grader_imports(module)}
    outside = sorted((module, imported) for module, imported in imports if imported not in shipped)
    assert not outside, f"imported from outside the set: {outside}"


def test_the_import_reader_sees_every_form_of_import():
    assert {"codec", "layout", "protocol", "audit"} <= grader_imports("worker")  # from grader.x import y
    assert "main" not in grader_imports("__main__") and "cli" in grader_imports("__main__")
    assert "manifest" not in grader_imports("pytest_plugin")  # imported inside a function only
    assert "__init__" in grader_imports("grading")  # from grader import __version__
