"""The student handout: `dist/student-handout.zip`, and the check that it gives nothing secret away.

The handout is what a student needs to do the lab and run its visible tests with only pytest and
hypothesis installed: the stub module, the visible suite, the part of the grader that runs it (the
`student` fixture, the sandboxed worker, the codec), a pytest.ini and a README. The check reads the zip
as written and refuses it if it holds a hidden test (file, name or code), an exercise body of the
reference, the manifest's fields about hidden checks, or a promise file (tests/promises: the hidden checks'
promises too; the handout's tests/exercises.json holds what the verdict needs of the visible ones).
"""

from __future__ import annotations

import ast
import io
import json
import re
import zipfile
from collections.abc import Iterator
from pathlib import Path

from grader import MIN_PYTHON
from grader.assignment.inventory import load_inventory
from grader.assignment.manifest import Manifest
from grader.assignment.scoring import points_text
from grader.grading.grade import kit_manifest
from grader.grading.local import EXERCISES_FILE, exercises_data
from grader.layout import (
    HANDOUT_RUNNER,
    LAB_STUBS,
    MANIFEST,
    MODULE_FILE,
    PROMISES,
    REFERENCE,
    STUDENT,
    shipped_modules,
)
from grader.packaging.package import add_member, pinned_requirements

HANDOUT_ZIP = "student-handout.zip"
FOLDER = "optlab-handout"  # everything sits in one folder of the zip
REQUIREMENTS = ("pytest", "hypothesis")  # pinned as pyproject.toml pins them
SECRET_KEYS = ("hidden_visibility", "hidden_output")  # the manifest's fields about hidden checks
MIN_STATEMENT_CHARS = 40  # shorter statements (`total = 0.0`) are too common to call a leak


def write_handout(root: Path, out: Path) -> Path:
    """Write the handout zip of the kit at `root` to `out`; returns `out`."""
    manifest = kit_manifest(root)
    files = handout_files(root, manifest)
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in sorted(files.items()):
            add_member(zf, f"{FOLDER}/{name}", data)
    return out


def handout_files(root: Path, manifest: Manifest) -> dict[str, bytes]:
    """The handout's files: path inside the handout folder -> content."""
    files = {MODULE_FILE: (root / STUDENT).read_bytes()}
    files[LAB_STUBS.as_posix()] = files[MODULE_FILE]  # what a student's run decodes values into
    for path in sorted((root / "tests" / "visible").glob("*.py")):
        files[f"tests/visible/{path.name}"] = path.read_bytes()
    files["tests/conftest.py"] = (root / "tests" / "conftest.py").read_bytes()
    files["conftest.py"] = (root / "grader" / "handout_conftest.py").read_bytes()  # pytest.ini from anywhere
    exercises = {"exercises": exercises_data(manifest, load_inventory(root))}
    files[EXERCISES_FILE.as_posix()] = (json.dumps(exercises, indent=1) + "\n").encode()
    for name in shipped_modules(HANDOUT_RUNNER, root / "grader"):
        files[f"grader/{name}.py"] = (root / "grader" / f"{name}.py").read_bytes()
    pins = pinned_requirements(root)
    files["requirements.txt"] = requirements_text(pins, MIN_PYTHON).encode()
    files[PYTHON_GUARD_WHEEL] = python_guard_wheel(MIN_PYTHON)
    files["pytest.ini"] = PYTEST_INI.encode()
    for name, text in PLUGIN_ENTRY_POINT.items():
        files[name] = text.encode()
    files["README.md"] = student_readme(manifest, pins).encode()
    return files


# On a Python older than the lab's, `pip install -r requirements.txt` would list every hypothesis version
# it skips, then say "No matching distribution" (pip looks every pinned package up before it checks a
# Requires-Python). So the pins hold only on a Python new enough, and the one line left is a wheel of no
# files whose Requires-Python pip checks: "Package 'optlab-needs-python' requires a different Python".
PYTHON_GUARD = "optlab-needs-python"
PYTHON_GUARD_WHEEL = "optlab_needs_python-1-py3-none-any.whl"


def requirements_text(pins: dict[str, str], minimum: tuple[int, int]) -> str:
    """The handout's requirements.txt: the guard wheel, then the pins, each only on `minimum` or newer."""
    version = ".".join(map(str, minimum))
    lines = [
        f"# Python {version} or newer; on an older one pip stops at the next line, in one line",
        f"./{PYTHON_GUARD_WHEEL}",
    ]
    lines += [f'{pins[name]}; python_version >= "{version}"' for name in REQUIREMENTS]
    return "\n".join(lines) + "\n"


def python_guard_wheel(minimum: tuple[int, int]) -> bytes:
    """A wheel of no files that pip installs only on Python `minimum` or newer."""
    info = PYTHON_GUARD_WHEEL.split("-py3")[0] + ".dist-info"
    files = {
        f"{info}/METADATA": (
            f"Metadata-Version: 2.1\nName: {PYTHON_GUARD}\nVersion: 1\n"
            f"Requires-Python: >={'.'.join(map(str, minimum))}\n"
        ),
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: optlab-kit\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    files[f"{info}/RECORD"] = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        for name, text in files.items():
            add_member(zf, name, text.encode())
    return buffer.getvalue()


PYTEST_INI = """\
[pytest]
testpaths = tests
pythonpath = .
addopts = -p no:cacheprovider -p grader.pytest_plugin
markers =
    exercise(id): the exercise a test checks
    promise(id): the promise of a function's docstring a test checks
"""


# `python -m pytest --submission ../other.py` from the handout folder: pytest reads `--submission ../other.py`
# before it has loaded any plugin, and so counts `../other.py` among the test paths. Python puts the
# current folder on sys.path for `python -m`, so this entry point loads the plugin in time to collect the
# handout's tests; the handout's conftest.py (grader/handout_conftest.py) then runs the command again with
# the handout's pytest.ini where pytest read another (or none).
PLUGIN_ENTRY_POINT = {
    "optlab_handout-1.dist-info/METADATA": "Metadata-Version: 2.1\nName: optlab-handout\nVersion: 1\n",
    "optlab_handout-1.dist-info/entry_points.txt": (
        "[pytest11]\ngrader.pytest_plugin = grader.pytest_plugin\n"
    ),
}


def student_readme(manifest: Manifest, pins: dict[str, str]) -> str:
    """The handout's README: what to do, how to test, what to submit, what the messages mean."""
    rows = "\n".join(
        f"| {e.id} | {e.title} | {', '.join(f'`{f}`' for f in e.functions)} | {points_text(e.points)} |"
        for e in manifest.exercises
    )
    return README_TEMPLATE.format(
        module=MODULE_FILE,
        rows=rows,
        total=points_text(manifest.total_points),
        install=" ".join(f'"{pins[name]}"' for name in REQUIREMENTS),
    )


README_TEMPLATE = """\
# Optimizing agents: the lab

Fill in the functions of `{module}` that raise `NotImplementedError`. Each docstring says what the
function must do; everything else in the module is given and already works. Submit `{module}` alone.

| exercise | what | functions | points |
|---|---|---|---|
{rows}

Total: {total} points.

## Run the visible tests

With Python 3.11 to 3.13, in this folder:

    python -m venv .venv && . .venv/bin/activate      # Windows: .venv\\Scripts\\activate
    pip install -r requirements.txt                   # {install}
    python -m pytest                                  # every visible test
    python -m pytest tests/visible/test_ex06_pareto.py  # one exercise
    python -m pytest -x --submission path/to/other.py   # stop at the first failure; another file
    python -m pytest -s                               # show what your functions print as they run

From another folder, name this one: `python -m pytest path/to/optlab-handout --submission path/to/other.py`.
The run always uses this folder's pytest.ini, also inside another project that has its own: where pytest
read another one first, the run says so in its first line and runs again with this folder's.

Every run ends with the grader's verdict on the exercises it ran, one row each: the visible checks
passed, the points they earn (as the grader scores them: see "How you are graded"), how many hidden
checks it has, and its state: not started, failing, passing, waiting, timed out, syntax error, or not
imported. A test whose function still raises the stub's `NotImplementedError` shows as `N` (not
started), with no traceback. What your function printed during a failing test is shown under that test.

Some functions call another exercise's (`add_score` calls `softmax`). The grader checks each exercise
with correct versions of the other exercises' functions, so one mistake costs points once; this folder
has no correct versions to use. So where an exercise's checks fail on another exercise's stub, or on
functions of an exercise that fails here, its row says `waiting on softmax() (exercise 8: not started)`
and its tests show as `W`: finish or fix that exercise first. The letters: `N` not started, `W`
waiting on another exercise, `T` not called (its exercise timed out earlier), `I` not imported, `C`
syntax error (could not compile); the run lists those it used under the verdict.

The tests import your module and call your functions in a separate process, with a time limit for the
import and per call, exactly as the grader will (on Windows too, where that process has no sandbox:
the run says so in one line). An endless loop costs that exercise's tests, not your whole run: after
its first timeout, the exercise's other tests are not called (`T`). A module that cannot be imported
at all (an error or endless loop at its top level) is one line above the verdict, with its line number,
and every test shows as `I` (not imported). To step through your code with a debugger, run the tests
in this process instead: `python -m pytest --worker inprocess --pdb` (no time limit holds there).

## What the messages mean

- `NotImplementedError: exercise 6 (...): implement pareto_front`: you have not done that exercise yet.
- `pareto_front([[1, 0], [0, 1]])` then `expected: ...` and `got: ...`: the call that went wrong, what
  it should have returned, what yours returned, and the first place where they differ (for numbers:
  how far off yours is, and the tolerance it missed).
- `optlab: Could not grade ... it has a syntax error` at the top: that function does not compile; the
  grader drops it, and grades the rest of your file, as this run does.
- `CallTimedOut`: the call used more than its CPU time (an endless loop?); the other tests of that
  exercise are then skipped as failed.
- `SubmissionError`: your function raised an exception; the message shows its type, text and line.
- `No module named 'numpy'`: only Python's standard library is there when you are graded.
- `requires a different Python` (from pip) or `optlab: this needs Python 3.11 or newer`: make `.venv`
  again with Python 3.11 to 3.13 (`python3.11 -m venv .venv`, or `py -3.11 -m venv .venv` on Windows).

## How you are graded

The grader runs these visible tests and hidden ones, which check the same functions on other inputs
and the properties their docstrings promise. Each exercise's points are split between its visible and
hidden checks; within each, over the promises its functions' docstrings make (a result, an edge case,
an argument left unchanged, the random draws, an error raised), and a promise's share over the checks
that check it: one mistake costs what it breaks. A check that an error is raised, or that an argument
is left unchanged, earns only when a check of the function's results passes too: raising on every input,
or doing nothing, earns nothing.
A function that calls another exercise's function is graded with a correct version of that other
function, so one mistake costs points once. Passing every visible test is a good sign, not a promise.
"""


# -- the leak check --------------------------------------------------------------------------------------


def handout_leaks(handout: Path, root: Path) -> list[str]:
    """Every secret the handout zip at `handout` would give away (empty: none)."""
    files = _read_zip(handout)
    runner = set(shipped_modules(HANDOUT_RUNNER, root / "grader"))
    leaks = [f"{name}: a grading-only file" for name in files if _grading_only(name, runner)]
    texts = {name: data.decode("utf-8", "replace") for name, data in files.items()}
    for key in SECRET_KEYS:
        leaks += [f"{name}: names the manifest's {key}" for name, text in texts.items() if key in text]
    trees = {name: tree for name, text in texts.items() if name.endswith(".py") and (tree := _parse(text))}
    leaks += _hidden_test_leaks(root, texts, trees)
    leaks += _solution_leaks(root, trees)
    return leaks


def _read_zip(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as zf:
        return {
            info.filename.removeprefix(f"{FOLDER}/"): zf.read(info)
            for info in zf.infolist()
            if not info.is_dir()
        }


def _grading_only(name: str, runner: set[str]) -> bool:
    """Whether the handout's file `name` is for grading alone; `runner`: the modules the handout ships."""
    parts = Path(name).parts
    return (
        "hidden" in parts
        or "solutions" in parts
        or PROMISES.name in parts[:-1]  # tests/promises: every promise, the hidden checks' too
        or name.endswith((MANIFEST.name, "inventory.json"))
        or (parts[0] == "grader" and _runner_name(parts) not in runner)  # at any depth
    )


def _runner_name(parts: tuple[str, ...]) -> str:
    """A file below grader/ as the handout's runner names it: its path there without .py ("layout", a
    module of a subpackage "runtime/worker"; grading-only unless the runner ships it)."""
    return "/".join(parts[1:]).removesuffix(".py")


def _hidden_test_leaks(root: Path, texts: dict[str, str], trees: dict[str, ast.Module]) -> list[str]:
    """Names and code of the hidden suite that the visible suite does not share, found in the handout."""
    names: dict[str, set[str]] = {"visible": set(), "hidden": set()}
    for test in load_inventory(root)["tests"]:
        names[test["suite"]].add(test["nodeid"].split("::")[-1].split("[")[0])
    leaks = [
        f"{name}: names the hidden test {test}"
        for name, text in texts.items()
        for test in sorted(names["hidden"] - names["visible"])
        if _has_word(text, test)
    ]
    public = {body for tree in _suite_trees(root, "visible") for _, body in _function_bodies(tree)}
    secret = {}
    for path, tree in zip(_suite_files(root, "hidden"), _suite_trees(root, "hidden"), strict=True):
        for function, body in _function_bodies(tree):
            if body not in public and len(body) >= MIN_STATEMENT_CHARS:
                secret[body] = f"{path.name}::{function}"
    leaks += [
        f"{name}: {function} is the code of the hidden {secret[body]}"
        for name, tree in trees.items()
        for function, body in _function_bodies(tree)
        if body in secret
    ]
    return leaks


def _solution_leaks(root: Path, trees: dict[str, ast.Module]) -> list[str]:
    """Statements of the reference's exercise bodies that the stubs hide, found in the handout.

    Public: what the reference gives outside its exercise functions, and what the stubs keep of them
    (scaffolding outside BEGIN/END SOLUTION markers)."""
    exercises = set(kit_manifest(root).functions)
    reference = ast.parse((root / REFERENCE).read_text(encoding="utf-8"))
    stubs = ast.parse((root / STUDENT).read_text(encoding="utf-8"))
    public: set[str] = set()
    for tree, exercise_part in ((reference, False), (stubs, True)):
        for node in tree.body:
            if (isinstance(node, ast.FunctionDef) and node.name in exercises) == exercise_part:
                public.update(_statements(node))
    secret = {
        statement: node.name
        for node in reference.body
        if isinstance(node, ast.FunctionDef) and node.name in exercises
        for statement in _statements(node)
        if statement not in public and len(statement) >= MIN_STATEMENT_CHARS
    }
    return [
        f"{name}: holds the solution of {secret[statement]}: {statement.splitlines()[0][:80]}"
        for name, tree in trees.items()
        for statement in dict.fromkeys(_statements(tree))
        if statement in secret
    ]


def _suite_files(root: Path, suite: str) -> list[Path]:
    return sorted((root / "tests" / suite).glob("*.py"))


def _suite_trees(root: Path, suite: str) -> list[ast.Module]:
    return [ast.parse(path.read_text(encoding="utf-8")) for path in _suite_files(root, suite)]


def _parse(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _has_word(text: str, word: str) -> bool:
    return re.search(rf"\b{re.escape(word)}\b", text) is not None


def _function_bodies(tree: ast.AST) -> Iterator[tuple[str, str]]:
    """(name, body as source without its docstring) of every function in `tree`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body[1:] if ast.get_docstring(node) is not None else node.body
            yield node.name, "\n".join(ast.unparse(statement) for statement in body)


def _statements(tree: ast.AST) -> Iterator[str]:
    """Every statement under `tree` (nested ones too) as normalised source, docstrings left out."""
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and not _is_docstring(node):
            yield ast.unparse(node)


def _is_docstring(node: ast.stmt) -> bool:
    return isinstance(node, ast.Expr) and isinstance(getattr(node.value, "value", None), str)
