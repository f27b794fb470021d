"""Where a kit tree keeps its files: the manifest, the reference module and the student mirror."""

from __future__ import annotations

from pathlib import Path

MANIFEST = Path("grader/exercises.toml")
REFERENCE = Path("solutions/optimization_toolkit.py")
STUDENT = Path("student/optimization_toolkit.py")


def find_root(start: Path) -> Path:
    """The nearest folder at or above `start` that holds the manifest; `start` itself if none does."""
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / MANIFEST).is_file():
            return folder
    return start
