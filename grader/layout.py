"""Where a kit tree keeps its files, what the lab's module is called, and which grader modules ship where.

Three sets of grader modules leave the kit: the worker's runtime (copied beside each submission), the
student handout's runner (the visible suite's plugin and what it needs) and the autograder zip (all that
grading reads). Each set imports only from itself (a kit test checks it).
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
PROMISES = Path("tests/promises")  # exNN.toml: every promise of an exercise's functions (grader.promises)
POINTS_DOC = Path("docs/points.md")  # generated: how each exercise's points split over its promises
LAB_STUBS = Path("tests/lab_stubs.py")  # the handout's copy of the stubs: what a student's run decodes into
SUITES: tuple[Suite, ...] = ("visible", "hidden")  # tests/visible, tests/hidden, in the order they run
BYTECODE_CACHE = Path(".optlab-pycache")  # compiled modules of the test runs, kept (grader.suites)
ZIP_KIT = "files/optlab"  # the kit inside autograder.zip: /autograder/source/files/optlab on Gradescope

# grader modules by where they ship (names without .py)
WORKER_RUNTIME = ("__init__", "audit", "codec", "layout", "protocol", "worker")
HANDOUT_RUNNER = (
    "__init__", "audit", "cgroup", "codec", "compiling", "confinement", "deadlines", "errors", "expect",
    "intake", "isolation", "landlock", "layout", "libc", "limits", "local", "mounts", "promises", "protocol",
    "pytest_plugin", "reference_worker", "sandbox", "scoring", "scratch", "seccomp", "student", "untrusted",
    "worker", "worker_pipe",
)  # fmt: skip
GRADING_MODULES = (
    "__init__", "__main__", "audit", "cgroup", "cli", "codec", "compiling", "confinement", "contract",
    "deadlines", "domain", "errors", "expect", "grading", "intake", "inventory", "isolation", "landlock",
    "layout", "libc", "limits", "local", "manifest", "mounts", "otter_plugin", "otter_submission",
    "promises", "protocol", "pytest_plugin", "records", "reference", "reference_worker", "results",
    "sandbox", "scoring", "scratch", "seccomp", "student", "suites", "untrusted", "worker", "worker_pipe",
)  # fmt: skip


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
