"""Fixtures of the kit's own tests: a minimal kit tree (manifest + reference) in a temporary folder, and
the kit's autograder zip (written once for every test of the Otter packaging)."""

from __future__ import annotations

from pathlib import Path

import pytest

from grader.package import write_autograder

KIT = Path(__file__).resolve().parents[2]

TREE_MANIFEST = """\
[defaults]
module = "optimization_toolkit"
hidden_visibility = "after_published"
hidden_output = "property"

[[exercise]]
id = 1
title = "double"
part = "1. numbers"
functions = ["double"]
points = 3
"""

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
def autograder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`grader package`'s autograder.zip of this kit."""
    return write_autograder(KIT, tmp_path_factory.mktemp("dist"))
