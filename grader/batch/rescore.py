"""Re-scoring a kept results.json after a change of points alone: no code runs.

Re-scoring a kept results.json after a change of points alone (grader.assignment.manifest.SCORING_KEYS; the
suites, the reference and the submission the same): each entry's extra_data holds its checks as data (which
check, passed or not, the kind of failure), which are the records the grading scored. They are scored
again by grader.assignment.scoring's entry point and rendered again by grader.grading.results; each entry
keeps its failure text and its checks' data as they were (points do not change what a check said). No code
runs.
"""

from __future__ import annotations

from collections.abc import Mapping

from grader.assignment.inventory import account_for
from grader.assignment.manifest import Manifest
from grader.assignment.promises import inventory_promises
from grader.assignment.records import TestRecord
from grader.assignment.scoring import score_suites
from grader.grading.results import results_document

_SCORES = ("points_possible", "exercises")  # what results_document derives from the scores


def records_of(document: Mapping) -> list[TestRecord]:
    """The records a results.json was scored from, rebuilt from its entries' checks (no failure text)."""
    records = []
    for test in document.get("tests", []):
        extra = test.get("extra_data") or {}
        for check in extra.get("checks", []):
            passed = bool(check.get("passed"))
            records.append(
                TestRecord(
                    nodeid=str(check.get("check", "")),
                    exercise=int(extra.get("exercise", 0)),
                    suite=str(extra.get("suite", "")),
                    passed=passed,
                    outcome="passed" if passed else "failed",
                    property=str(check.get("property", "")),
                    message="",
                )
            )
    return records


def rescored(document: Mapping, manifest: Manifest, inventory: Mapping) -> dict | None:
    """`document` scored again under `manifest`; None where it cannot be without running the suites
    again: it holds no checks, or not exactly the inventory's tests."""
    records = records_of(document)
    if not records or sorted(r.nodeid for r in records) != sorted(t["nodeid"] for t in inventory["tests"]):
        return None
    records = account_for(dict(inventory), records, "")  # each record's promise from the inventory
    scores = score_suites(manifest, records, promises=inventory_promises(inventory))
    extra = {k: v for k, v in (document.get("extra_data") or {}).items() if k not in _SCORES}
    notes = [str(note) for note in extra.get("notes", [])]
    again = results_document(scores, notes, float(document.get("execution_time", 0.0)), extra)
    before = {str(t.get("name")): t for t in document.get("tests", [])}
    for test in again["tests"]:
        if (old := before.get(test["name"])) is not None:
            test["output"] = old.get("output", test["output"])
            test["extra_data"]["checks"] = old.get("extra_data", {}).get("checks", [])
    return again
