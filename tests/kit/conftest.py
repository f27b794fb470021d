"""Fixtures of the kit's own tests: a minimal kit tree (manifest + reference) in a temporary folder, and
the kit's autograder zip (written once for every test of the Otter packaging), the reference's recorded
run, and a full disk."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from grader.assignment.records import TestRecord
from grader.grading.suites import run_suites
from grader.layout import REFERENCE, SUITES
from grader.packaging.package import write_autograder

KIT = Path(__file__).resolve().parents[2]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-goldens",
        action="store_true",
        help="rewrite tests/kit/golden/ from what the kit renders now (review the diff before committing)",
    )


def entry_points(exercise: int, points: float | None = None) -> tuple[str, str]:
    """An exercise's visible and hidden entries' maxima as outputs print them, split as grading splits
    them by the inventory's counts (with `points`, as if the manifest gave the exercise that many)."""
    from dataclasses import replace

    from grader.assignment.scoring import points_text, split_points
    from grader.grading.grade import kit_manifest

    found = kit_manifest(KIT).by_id(exercise)
    found = found if points is None else replace(found, points=points)
    tests = json.loads((KIT / "tests" / "inventory.json").read_text())["tests"]
    counts = [sum(t["exercise"] == exercise and t["suite"] == suite for t in tests) for suite in SUITES]
    visible, hidden = split_points(found, counts)
    return points_text(visible), points_text(hidden)


def visible_checks(exercise: int | None = None) -> int:
    """How many checks the visible suite holds, of one exercise or all (the inventory's count: it grows as
    checks are added)."""
    tests = json.loads((KIT / "tests" / "inventory.json").read_text())["tests"]
    return sum(test["suite"] == "visible" and exercise in (None, test["exercise"]) for test in tests)


def manifest_text(*exercises: tuple[str, list[str], float], part: str = "1. numbers") -> str:
    """A small kit's grader/exercises.toml: the kit's defaults, then `exercises` (title, functions,
    points each) numbered from 1, all in `part`."""
    lines = [
        "[defaults]",
        'module = "optimization_toolkit"',
        'hidden_visibility = "after_published"',
        'hidden_output = "property"',
    ]
    for number, (title, functions, points) in enumerate(exercises, 1):
        names = ", ".join(f'"{name}"' for name in functions)
        lines += ["", "[[exercise]]", f"id = {number}", f'title = "{title}"', f'part = "{part}"']
        lines += [f"functions = [{names}]", f"points = {points}"]
    return "\n".join(lines) + "\n"


TREE_MANIFEST = manifest_text(("double", ["double"], 3))

TREE_REFERENCE = '''\
"""A tiny reference module."""


def double(x):
    """Twice x."""
    return 2 * x


def given(x):
    return x + 1
'''


@pytest.fixture
def kit_tree(tmp_path: Path) -> Path:
    """A kit tree with a one-exercise manifest and its reference; no student/ yet."""
    (tmp_path / "grader").mkdir()
    (tmp_path / "grader" / "exercises.toml").write_text(TREE_MANIFEST, encoding="utf-8")
    (tmp_path / "solutions").mkdir()
    (tmp_path / "solutions" / "optimization_toolkit.py").write_text(TREE_REFERENCE, encoding="utf-8")
    return tmp_path


@pytest.fixture(scope="session")
def recorded_reference() -> list[TestRecord]:
    """Both suites run once on the kit's reference, recording each check's calls and the domain features
    they drew (--record-calls): shared by the tests that read what the checks reach and draw."""
    records = run_suites(KIT, KIT / REFERENCE, pytest_args=["--record-calls"])
    assert records and all(r.passed for r in records)
    return records


@pytest.fixture(scope="session")
def autograder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`grader package`'s autograder.zip of this kit."""
    return write_autograder(KIT, tmp_path_factory.mktemp("dist"))


@pytest.fixture
def full_disk() -> Iterator[Path]:
    """A folder on a disk that is full: a 64 KiB tmpfs mounted for the test and filled, as a submission
    that fills a shared disk leaves it (writes there fail with ENOSPC, even as root). It sits in the
    system's temporary folder, open to pass through as /tmp is (worker uids can reach it). Mounting needs
    root, as CI, Docker and Gradescope run; elsewhere the test is skipped."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a full disk is simulated with a tmpfs, which only root can mount")
    disk = Path(tempfile.mkdtemp(prefix="optlab-full-disk-"))
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=1777", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        disk.rmdir()
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.decode(errors='replace').strip()}")
    try:
        with contextlib.suppress(OSError), open(disk / "filler", "wb", buffering=0) as filler:
            while True:
                filler.write(bytes(4096))
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
        with contextlib.suppress(OSError):
            disk.rmdir()
