"""`grader build`: every generated file (the student module, the inventory, the docs), or what is stale.

`grader build`: generate the student module from the reference and the manifest, the suites' inventory
from the suites and the promises, docs/points.md (how the points split) from the manifest and the
inventory, and README.md's map of grader/ from the modules' docstrings; or list what is stale."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from grader.assignment.inventory import INVENTORY, collect_inventory
from grader.assignment.manifest import Manifest, load_manifest
from grader.assignment.reference import read_reference
from grader.authoring.module_map import with_module_map
from grader.authoring.points_doc import points_doc
from grader.authoring.stubs import stub_module
from grader.errors import KitError
from grader.layout import MANIFEST, POINTS_DOC, PROMISES, README, REFERENCE, STUDENT


@dataclass(frozen=True)
class BuildReport:
    """The generated files (relative to the root), those that were stale, and whether they were written."""

    outputs: tuple[Path, ...]
    stale: tuple[Path, ...]
    written: bool


def generated_files(root: Path) -> dict[Path, str]:
    """What `build` writes: relative path -> exact text."""
    reference = read_reference(root / REFERENCE, REFERENCE.as_posix())
    manifest = load_manifest(root / MANIFEST, reference, MANIFEST.as_posix())
    files = {STUDENT: stub_module(reference.source, manifest, reference.path)}
    if (root / README).is_file():
        files[README] = with_module_map(_read_exact(root / README) or "", root / "grader")
    if (root / "tests").is_dir():
        files[INVENTORY] = collect_inventory(root)
        inventory = json.loads(files[INVENTORY])
        _every_exercise_tested(manifest, inventory)
        files[POINTS_DOC] = points_doc(manifest, inventory)
    return files


class UntestedExercise(KitError):
    """An exercise of the manifest that no suite test checks yet: the instructor's next step is its tests."""


def _every_exercise_tested(manifest: Manifest, inventory: dict) -> None:
    """UntestedExercise, naming the next step, for the first exercise no suite test is marked with (an
    exercise just added to the manifest: its points could not be split, and its stub would score 0)."""
    tested = {test["exercise"] for test in inventory["tests"]}
    promised = {promise["exercise"] for promise in inventory.get("promises", {}).values()}
    for exercise in manifest.exercises:
        if exercise.id in tested:
            continue
        n = f"{exercise.id:02d}"
        tests = (
            f"tests/visible/test_ex{n}_*.py and tests/hidden/test_ex{n}_*.py, each test marked "
            f"@pytest.mark.exercise({exercise.id})"
        )
        if exercise.id in promised:
            step = f'write {tests} (README, "Adding an exercise", step 4)'
        else:
            promises = f"{PROMISES.as_posix()}/ex{n}.toml"
            step = (
                f'list its docstring\'s promises in {promises} (README, "Adding an exercise", step 3), '
                f"then its tests in {tests} (step 4)"
            )
        raise UntestedExercise(
            f"exercise {exercise.label} has no tests yet: {step}, then run grader build again"
        )


def build(root: Path, check: bool = False) -> BuildReport:
    """Bring the generated files up to date; with `check`, write nothing and only report the stale ones."""
    files = generated_files(root)
    stale = tuple(path for path, text in files.items() if _read_exact(root / path) != text)
    if not check:
        for path in stale:
            _write_exact(root / path, files[path])
    return BuildReport(tuple(files), stale, written=not check)


def stale_problem(root: Path) -> str | None:
    """What a command that needs the generated files current says when one is stale; None if none is."""
    stale = build(root, check=True).stale
    return f"{stale[0].as_posix()} is stale: run grader build first" if stale else None


def _read_exact(file: Path) -> str | None:
    """The file's text, line endings untouched; None when it is missing or not UTF-8."""
    try:
        return file.read_bytes().decode("utf-8")
    except (FileNotFoundError, UnicodeDecodeError):
        return None


def _write_exact(file: Path, text: str) -> None:
    """Write `text` byte-exactly (no newline translation)."""
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_bytes(text.encode("utf-8"))
