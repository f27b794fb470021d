"""`grader validate`: the suites judge the kit's own two modules as they must. The reference passes every
test; the stubs earn nothing, and every test fails with its own exercise's NotImplementedError (not with
an unrelated error, which would mean the test is broken or calls the wrong exercise); every exercise
function is called by a test of its exercise (the reference run records each test's calls), else a stub
of it would keep its points; every feature of its functions' documented domains (grader.assignment.domain) is
drawn by a hidden check of a working kind (the reference run records them). The third verdict, trivial answers
derived from the reference earning at most 2% of an exercise (type-aware ones included), is
grader.authoring.trivial's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from grader.assignment.domain import domains_from_data, undrawn
from grader.assignment.inventory import load_inventory
from grader.assignment.manifest import Exercise, Manifest, load_manifest
from grader.assignment.promises import drawn_by_working_checks, inventory_promises
from grader.assignment.records import TestRecord
from grader.assignment.reference import read_reference
from grader.grading.suites import run_suites
from grader.layout import MANIFEST, REFERENCE, STUDENT, SUITES


@dataclass(frozen=True)
class ExerciseCheck:
    """How one exercise fared on the reference and on the stubs."""

    exercise: Exercise
    reference: tuple[TestRecord, ...]
    stubs: tuple[TestRecord, ...]
    undrawn: tuple[str, ...] = ()  # the declared domain features no working check of its functions drew

    @property
    def problems(self) -> list[str]:
        out = []
        for suite in SUITES:
            if not any(r.suite == suite for r in self.reference):
                out.append(f"no {suite} tests")
        out += [f"reference fails {r.nodeid}" for r in self.reference if not r.passed]
        out += [f"stubs pass {r.nodeid}" for r in self.stubs if r.passed]
        expected = f"NotImplementedError: exercise {self.exercise.id} ({self.exercise.title}): implement "
        out += [
            f"stubs fail {r.nodeid} with something else: {_first_error_line(r.message)}"
            for r in self.stubs
            if not r.passed and expected not in r.message
        ]
        if {r.nodeid for r in self.reference} != {r.nodeid for r in self.stubs}:
            out.append("the two runs collected different tests")
        called = {name for r in self.reference for name in r.calls}
        out += [
            f"{name} is never called by exercise {self.exercise.id}'s tests, so a stub of it keeps its "
            f"points: add a test marked @pytest.mark.exercise({self.exercise.id}) that calls "
            f"student.{name}, then run grader build"
            for name in self.exercise.functions
            if self.reference and name not in called
        ]
        return out + list(self.undrawn)


def validate(root: Path, exercises: Sequence[int] | None = None) -> list[ExerciseCheck]:
    """Run both suites on the reference and on the stubs; one check per exercise, in manifest order.
    With `exercises`, only their tests run and only they are checked."""
    from grader.grading.grade import only_exercises, suite_files_in_order

    manifest, whole = _manifest(root), load_inventory(root)
    paths = None
    if exercises:
        manifest, inventory = only_exercises(manifest, whole, exercises)
        paths = suite_files_in_order(inventory)
    on_reference = run_suites(root, root / REFERENCE, paths, pytest_args=["--record-calls"])
    on_stubs = run_suites(root, root / STUDENT, paths)
    missed = undrawn_features(whole, on_reference)
    return [
        ExerciseCheck(
            exercise,
            tuple(r for r in on_reference if r.exercise == exercise.id),
            tuple(r for r in on_stubs if r.exercise == exercise.id),
            tuple(line for name in exercise.functions for line in missed.get(name, [])),
        )
        for exercise in manifest.exercises
    ]


def undrawn_features(inventory: dict, records: Sequence[TestRecord]) -> dict[str, list[str]]:
    """Function -> each feature of its declared domain that no hidden check of a working kind drew
    in `records` (a run with --record-calls), one line each; only functions whose exercise ran."""
    promises = inventory_promises(inventory)
    promise_of = {test["nodeid"]: test.get("promise", "") for test in inventory["tests"]}
    checks = ((r.suite, promise_of.get(r.nodeid, ""), r.drawn) for r in records)
    drawn = drawn_by_working_checks(promises, checks)
    ran = {r.exercise for r in records}
    exercise_of = {p.function: p.exercise for p in promises.values()}
    out: dict[str, list[str]] = {}
    for domain in domains_from_data(inventory.get("domains", [])):
        if exercise_of.get(domain.function) in ran:
            out.setdefault(domain.function, []).extend(undrawn([domain], drawn))
    return out


def report_rows(checks: list[ExerciseCheck]) -> list[str]:
    """A table: one row per exercise, then each problem indented below its row."""
    rows = [f"{'exercise':32} {'visible':>7} {'hidden':>7}  {'reference':>9}  {'stubs':>7}  verdict"]
    for check in checks:
        counts = [sum(r.suite == s for r in check.reference) for s in SUITES]
        ref_passed = sum(r.passed for r in check.reference)
        stub_passed = sum(r.passed for r in check.stubs)
        verdict = "ok" if not check.problems else "PROBLEM"
        rows.append(
            f"{check.exercise.label[:32]:32} {counts[0]:>7} {counts[1]:>7}  "
            f"{ref_passed:>4}/{len(check.reference):<4}  {stub_passed:>3}/{len(check.stubs):<3}  {verdict}"
        )
        rows += [f"    {problem}" for problem in check.problems]
    return rows


def validated_manifest(root: Path) -> Manifest:
    """The kit's manifest, checked against its reference."""
    return _manifest(root)


def _manifest(root: Path) -> Manifest:
    reference = read_reference(root / REFERENCE, REFERENCE.as_posix())
    return load_manifest(root / MANIFEST, reference, MANIFEST.as_posix())


def _first_error_line(message: str) -> str:
    for line in message.splitlines():
        if line.startswith("E "):
            return line[1:].strip()[:160]
    return message.strip().splitlines()[-1][:160] if message.strip() else "?"
