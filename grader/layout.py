"""Where a kit tree keeps its files, what the lab's module is called, and which grader modules ship where.

Three sets of grader modules leave the kit: the worker's runtime (the folder grader/runtime/, copied beside
each submission), the student handout's runner (the visible suite's plugin and what it needs) and the
autograder zip (all that grading reads). Each set imports only from itself (a kit test checks it).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

Suite = Literal["visible", "hidden"]

MODULE = "optimization_toolkit"  # the lab's module: what a submission is imported as
MODULE_FILE = f"{MODULE}.py"
MANIFEST = Path("grader/exercises.toml")
REFERENCE = Path("solutions") / MODULE_FILE
STUDENT = Path("student") / MODULE_FILE
PROMISES = Path(
    "tests/promises"
)  # exNN.toml: every promise of an exercise's functions (grader.assignment.promises)
README = Path("README.md")  # its map of grader/ is generated (grader.authoring.module_map)
POINTS_DOC = Path("docs/points.md")  # generated: how each exercise's points split over its promises
LAB_STUBS = Path("tests/lab_stubs.py")  # the handout's copy of the stubs: what a student's run decodes into
SUITES: tuple[Suite, ...] = ("visible", "hidden")  # tests/visible, tests/hidden, in the order they run
BYTECODE_CACHE = Path(".optlab-pycache")  # compiled modules of the test runs, kept (grader.grading.suites)
ZIP_KIT = "files/optlab"  # the kit inside autograder.zip: /autograder/source/files/optlab on Gradescope

GRADER_PACKAGE = Path(__file__).parent  # the folder of this grader package

# grader modules by where they ship: paths below grader/ without .py; a folder ("sandbox/") ships whole
WORKER_RUNTIME = "runtime/"  # copied beside each submission, under an empty grader/__init__.py
HANDOUT_RUNNER = (
    "__init__", "errors", "expect", "layout", "pytest_plugin", WORKER_RUNTIME, "sandbox/",
    "assignment/__init__", "assignment/promises", "assignment/scoring",
    "grading/__init__", "grading/compiling", "grading/intake", "grading/local", "grading/untrusted",
)  # fmt: skip
GRADING_MODULES = (
    "__init__", "__main__", "cli", "errors", "expect", "layout", "otter_plugin", "pytest_plugin",
    WORKER_RUNTIME, "sandbox/", "assignment/", "grading/",
)  # fmt: skip


def shipped_modules(shipped: tuple[str, ...], grader: Path = GRADER_PACKAGE) -> list[str]:
    """The modules of a shipped set, each as its path below the `grader` folder without .py ("layout",
    "runtime/worker"): a folder ("sandbox/") stands for every module in it."""
    found: list[str] = []
    for name in shipped:
        if name.endswith("/"):
            found += sorted(f"{name}{path.stem}" for path in (grader / name).glob("*.py"))
        else:
            found.append(name)
    return found


def installed_root() -> Path | None:
    """The kit tree this grader package was loaded from (the kit's own folder, or an editable install of
    it), if it is one: `grader` run from any folder finds it."""
    root = Path(__file__).resolve().parents[1]
    return root if (root / MANIFEST).is_file() and (root / REFERENCE).is_file() else None


def find_root(start: Path) -> Path:
    """The nearest folder at or above `start` that holds the manifest; `start` itself if none does."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / MANIFEST).is_file():
            return folder
    return start
