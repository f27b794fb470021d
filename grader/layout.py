"""Where a kit tree keeps its files: the manifest, the reference module, the student mirror and the suites."""

from __future__ import annotations

from pathlib import Path

MANIFEST = Path("grader/exercises.toml")
REFERENCE = Path("solutions/optimization_toolkit.py")
STUDENT = Path("student/optimization_toolkit.py")
SUITES = ("visible", "hidden")  # tests/visible, tests/hidden, in the order they run
ZIP_KIT = "files/optlab"  # the kit inside autograder.zip: /autograder/source/files/optlab on Gradescope


def find_root(start: Path) -> Path:
    """The nearest folder at or above `start` that holds the manifest; `start` itself if none does."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / MANIFEST).is_file():
            return folder
    return start
