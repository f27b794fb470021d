"""The suites' inventory (tests/inventory.json): every test, promise, domain and suite file's hash.

The suites' inventory (tests/inventory.json): every test the suites hold, with its exercise, suite, the
property it states and the promise it checks; every promise of tests/promises (grader.assignment.promises) and
the documented domains declared there (grader.assignment.domain); and the
SHA-256 of every suite file and promise file. `grader build` writes it by collecting the
suites (no submission code runs); grading checks the files against it before a run and counts every
test of it that the run did not report as failed, so no test can go missing silently. Grading reads
the promises from here alone: a record's promise is the inventory's, never what a run reports.

It also holds the kit's other derived facts: the call contract of the reference (grader.assignment.contract),
which other exercises each exercise function may have answered by the reference, and which of its
parameters it mutates.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from grader.assignment.contract import derive_contract
from grader.assignment.domain import Domain, domains_from_data
from grader.assignment.manifest import load_manifest
from grader.assignment.promises import load_domains, load_promises, naming_problems, promise_files
from grader.assignment.records import TestRecord
from grader.assignment.reference import read_reference
from grader.errors import KitError
from grader.layout import MANIFEST, PROMISES, REFERENCE, SUITES

INVENTORY = Path("tests/inventory.json")


class InventoryError(KitError):
    """The suites on disk are not the ones the inventory describes (or it is missing)."""


def suite_files(root: Path) -> dict[str, str]:
    """Relative path -> SHA-256 of every file the suites run (the test files and their conftest) and of
    every promise file: a promise edited after `grader build` makes the inventory stale."""
    paths = [root / "tests" / "conftest.py"]
    for suite in SUITES:
        paths += sorted((root / "tests" / suite).rglob("*.py"))
    paths += promise_files(root)
    return {
        p.relative_to(root).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in paths
        if p.is_file()
    }


def collect_inventory(root: Path) -> str:
    """The inventory's text for the suites at `root` (collects them in a child pytest)."""
    with tempfile.TemporaryDirectory(prefix="optlab-inventory-") as scratch:
        out = Path(scratch) / "tests.json"
        command = [
            sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider",
            f"--rootdir={root}", f"--inventory-out={out}", *[str(root / "tests" / s) for s in SUITES],
        ]  # fmt: skip
        run = subprocess.run(command, cwd=root, capture_output=True, text=True)
        if run.returncode != 0 or not out.is_file():
            said = (run.stdout + run.stderr).strip().splitlines()
            if errors := [line.removeprefix("ERROR: ") for line in said if line.startswith("ERROR: ")]:
                more = f" (and {len(errors) - 1} more like it)" if len(errors) > 1 else ""
                raise InventoryError(f"{errors[0]}{more}: fix the tests, then run grader build")
            tail = " | ".join(said[-5:])
            raise InventoryError(f"collecting the suites failed: {tail}")
        tests = json.loads(out.read_text())
    reference = read_reference(root / REFERENCE, REFERENCE.as_posix())
    manifest = load_manifest(root / MANIFEST, reference)
    promises = load_promises(root, manifest)
    domains = load_domains(root, manifest, reference.parameters())
    if problems := naming_problems(promises, tests):
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise InventoryError(f"{problems[0]}{more}: fix the marker or {PROMISES}")
    document = {
        "files": suite_files(root),
        "tests": tests,
        "promises": {promise.id: promise.as_data() for promise in promises.values()},
        "domains": [domain.as_data() for domain in domains],
        "contract": reference_contract(root),
    }
    return json.dumps(document, indent=1, sort_keys=True) + "\n"


def reference_contract(root: Path) -> dict:
    """The call contract of the kit's reference at `root` (see grader.assignment.contract)."""
    reference = read_reference(root / REFERENCE, REFERENCE.as_posix())
    manifest = load_manifest(root / MANIFEST, reference, MANIFEST.as_posix())
    exercise_of = {name: exercise.id for exercise in manifest.exercises for name in exercise.functions}
    return derive_contract(reference.source, exercise_of)


def stored_contract(root: Path) -> dict | None:
    """The contract `grader build` stored in the inventory at `root`; None when there is none."""
    try:
        contract = json.loads((root / INVENTORY).read_text(encoding="utf-8")).get("contract")
    except (OSError, ValueError, AttributeError):
        return None
    return contract if isinstance(contract, dict) else None


def stored_domains(root: Path) -> list[Domain]:
    """The documented domains `grader build` stored in the inventory at `root` (none where it has none)."""
    try:
        data = json.loads((root / INVENTORY).read_text(encoding="utf-8")).get("domains", [])
        return domains_from_data(data)
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        return []


def load_inventory(root: Path) -> dict:
    """The committed inventory, after checking that the suite files are the ones it describes."""
    path = root / INVENTORY
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InventoryError(f"{INVENTORY} is missing: run grader build") from None
    except (OSError, ValueError) as error:
        raise InventoryError(f"{INVENTORY} cannot be read ({error}): run grader build") from None
    actual = suite_files(root)
    if actual != document.get("files"):
        changed = sorted(set(actual.items()) ^ set(document.get("files", {}).items()))
        raise InventoryError(f"the suite files differ from {INVENTORY} ({changed[0][0]}): run grader build")
    return document


def account_for(inventory: dict, records: list[TestRecord], reason: str) -> list[TestRecord]:
    """`records` in inventory order, each expected test that is absent added as failed with `reason`;
    each with the promise the inventory gives its test."""
    reported = {r.nodeid: r for r in records}
    out = []
    for test in inventory["tests"]:
        record = reported.get(test["nodeid"])
        if record is None:
            record = TestRecord(
                test["nodeid"], test["exercise"], test["suite"], False, "missing", test["property"], reason
            )
        out.append(replace(record, promise=test.get("promise", "")))
    return out
