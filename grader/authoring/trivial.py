"""Trivial answers: proof that points follow correctness. For every exercise, derive from the reference
itself implementations that do no real work, grade each with both suites, and report the largest share of
the exercise's points any of them earns (`grader validate` fails above `MAX_SHARE`, 2%).

A trivial variant is the reference module with ONE exercise's functions replaced. A replacement never
does the exercise's work: it either ignores the reference (``none``: return None; ``first-argument``: echo
the first argument; ``raises-valueerror``, ``raises-typeerror``: raise on every call, which passes the
checks of an error path, and earns nothing for them where grader.assignment.scoring gates them) or keeps only
the *shape* of the reference's answer on the same input and throws its
content away (zeros, ones, empty, the uniform distribution, NaN, seeded random values, or the first answer
it ever gave, returned from then on), or knows the types as a student who read only the docstring
would (issue 30: ``argument-copy``, the input returned, a copy of theta; ``everything``, every
candidate survives, all True; ``first-option``, the first of the options; with ``empty`` nothing
survives, ``zeros`` all False or zeros of the right shape, ``ones`` all True, ``uniform`` the uniform
distribution of the right length). None of them touches its arguments, except ``zeros-in-place``,
which zeroes whatever argument the reference would have changed (a gradient table, a policy). Nothing is
written by hand per exercise: the reference's own answers on the suites' own inputs give every shape.

The variants run in-process (`--worker inprocess`, one pytest session each, only the exercise's test
files; as many exercises at once as there are CPUs, each in a process of its own), which keeps the
whole check to a minute or two; `grader validate --exercise N` checks only N.
A variant's share is of the exercise's points as grading scores its checks (grader.assignment.scoring: by
promise, error checks gated), not of its number of checks.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import math
import multiprocessing
import os
import random
import sys
import tempfile
import time
import types
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from grader.assignment.inventory import load_inventory
from grader.assignment.manifest import Exercise
from grader.assignment.promises import Promise, inventory_promises
from grader.assignment.records import TestOutcome, TestRecord
from grader.assignment.scoring import points_text, score_exercise
from grader.errors import KitError
from grader.layout import REFERENCE, SUITES

MAX_SHARE = 0.02  # a trivial answer may earn at most this share of an exercise's points (issue 30: was 5%)

VARIANTS: dict[str, str] = {
    "constant": "the reference's first answer in the run, returned every time",
    "zeros": "the reference's answer with every number 0, every flag False, every string empty",
    "zeros-in-place": "zeros, and every argument the reference would change zeroed in place",
    "ones": "the reference's answer with every number 1, every flag True, every string empty",
    "empty": "empty containers and strings, zero numbers",
    "uniform": "every innermost list or dict of numbers replaced by the uniform distribution",
    "nan": "every float NaN",
    "random": "seeded random numbers in the reference's answer's shape",
    "first-argument": "the first argument, returned unchanged",
    "argument-copy": "a copy of the first argument of the answer's type (the input returned, theta)",
    "everything": "every index the answer could hold (every candidate survives), every flag True",
    "first-option": "the first item of the argument the answer is picked from (the first option)",
    "none": "None, arguments untouched",
    "raises-valueerror": "ValueError raised on every call",
    "raises-typeerror": "TypeError raised on every call",
}
_RAISES = {"raises-valueerror": ValueError, "raises-typeerror": TypeError}


# -- the replacements (run inside the graded module) ---------------------------------------------------


def install(namespace: dict, names: Iterable[str], variant: str) -> None:
    """Replace the functions `names` of the module whose globals are `namespace` by their `variant`.

    Called from the last line of a variant module. The reference's own functions keep working on a
    snapshot of the module (so a replaced function's reference body still calls the real helpers)."""
    if variant not in VARIANTS:
        raise ValueError(f"unknown trivial variant {variant!r}")
    pristine = dict(namespace)
    for key, value in list(pristine.items()):
        if isinstance(value, types.FunctionType) and value.__globals__ is namespace:
            rebound = types.FunctionType(
                value.__code__, pristine, value.__name__, value.__defaults__, value.__closure__
            )
            rebound.__kwdefaults__ = value.__kwdefaults__
            pristine[key] = rebound
    for name in names:
        namespace[name] = _trivial(pristine[name], variant)


def _trivial(reference: Callable, variant: str) -> Callable:
    memory: dict[str, Any] = {}
    rng = random.Random(0)

    def trivial(*args: Any, **kwargs: Any) -> Any:
        if variant in _RAISES:
            raise _RAISES[variant](f"{reference.__name__}: a trivial answer raises on every call")
        if variant == "none":
            return None
        if variant == "first-argument":
            return args[0] if args else next(iter(kwargs.values()), None)
        copies = copy.deepcopy((args, kwargs))
        try:
            answer = reference(*copies[0], **copies[1])
        except Exception:  # noqa: BLE001 - a trivial answer does not raise where the reference does
            return memory.get("last")
        if variant == "constant":
            memory.setdefault("first", answer)
            out = copy.deepcopy(memory["first"])
        elif variant in _KNOWING:
            out = _KNOWING[variant](answer, copies[0] + tuple(copies[1].values()))
        else:
            out = degrade(answer, "zeros" if variant == "zeros-in-place" else variant, rng)
        if variant == "zeros-in-place":
            for before, after in zip(
                (*args, *kwargs.values()), (*copies[0], *copies[1].values()), strict=True
            ):
                if _state(before) != _state(after):
                    _overwrite(before, degrade(after, "zeros", rng))
        memory["last"] = out
        return out

    trivial.__name__ = trivial.__qualname__ = reference.__name__
    return trivial


def degrade(value: Any, mode: str, rng: random.Random) -> Any:
    """`value` with its content replaced according to `mode`, its shape (types, lengths, keys) kept."""
    if isinstance(value, bool):
        return {"ones": True, "random": rng.random() < 0.5}.get(mode, False)
    if isinstance(value, int):
        return {"ones": 1, "random": rng.randint(0, abs(value))}.get(mode, 0)
    if isinstance(value, float):
        return {"ones": 1.0, "nan": math.nan, "random": rng.random()}.get(mode, 0.0)
    if isinstance(value, str):
        return ""  # a string's content is the work (the first-argument variant echoes an input's)
    if isinstance(value, list | tuple | dict | set | frozenset):
        if mode == "empty":
            return type(value)()
        if mode == "uniform" and value and all(_number(v) for v in _values(value)):
            n = len(value)
            if isinstance(value, dict):
                return {k: 1.0 / n for k in value}
            if isinstance(value, list | tuple):
                return type(value)([1.0 / n] * n)
        if isinstance(value, dict):
            return {k: degrade(v, mode, rng) for k, v in value.items()}
        return type(value)(degrade(v, mode, rng) for v in value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = copy.copy(value)
        for f in dataclasses.fields(value):
            object.__setattr__(out, f.name, degrade(getattr(value, f.name), mode, rng))
        return out
    return value  # None, random.Random, objects the lab passes through


# -- answers that know the types (issue 30): they read only the answer's type and the arguments ----------


def argument_copy(answer: Any, args: tuple) -> Any:
    """A copy of the first argument (or attribute of an argument: a policy's theta) of `answer`'s type,
    one of its length first (the input returned: the candidates for the survivors, theta for its
    gradient, the instruction for its update); else the answer zeroed."""
    inner = [v for a in args if hasattr(a, "__dict__") and not callable(a) for v in vars(a).values()]
    alike = [a for a in (*args, *inner) if type(a) is type(answer) and answer is not None]
    for arg in alike:
        if not hasattr(answer, "__len__") or len(arg) == len(answer):
            return copy.deepcopy(arg)
    return copy.deepcopy(alike[0]) if alike else degrade(answer, "zeros", random.Random(0))


def everything(answer: Any, args: tuple) -> Any:
    """Every index an answer of indices could hold (all the candidates of the longest sequence argument:
    every candidate survives), the whole argument where the answer is some of its items (every rollout
    kept), every flag True; numbers and strings zeroed."""
    if isinstance(answer, bool):
        return True
    sequences = [a for a in args if isinstance(a, list | tuple | dict) and not isinstance(a, str)]
    if isinstance(answer, list | tuple | set | frozenset) and answer:
        if all(_index(v) for v in answer) and sequences:
            return type(answer)(range(max(len(a) for a in sequences)))
        for arg in sequences:
            if isinstance(arg, list | tuple) and all(_holds(arg, v) for v in answer):
                return type(answer)(copy.deepcopy(list(arg)))
    if isinstance(answer, list | tuple):
        return type(answer)(everything(v, args) for v in answer)
    if isinstance(answer, dict):
        return {k: everything(v, args) for k, v in answer.items()}
    return degrade(answer, "zeros", random.Random(0))


def first_option(answer: Any, args: tuple) -> Any:
    """The first of the options the answer is picked from: the first item of a sequence argument that
    holds it, the first key (and its value) of a dict argument that holds it, 0 for an index into a
    sequence argument; else the answer zeroed."""
    for arg in args:
        if isinstance(arg, dict) and arg:
            first = next(iter(arg))
            if _holds(list(arg), answer):
                return copy.deepcopy(first)
            if isinstance(answer, tuple) and len(answer) == 2 and _holds(list(arg), answer[0]):
                return (first, copy.deepcopy(arg[first]))
        if isinstance(arg, list | tuple) and arg and _holds(arg, answer):
            return copy.deepcopy(arg[0])
    if _index(answer) and any(isinstance(a, list | tuple) and len(a) > answer for a in args):
        return 0
    return degrade(answer, "zeros", random.Random(0))


def _index(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _holds(items: Iterable[Any], value: Any) -> bool:
    try:
        return any(item is value or (type(item) is type(value) and item == value) for item in items)
    except Exception:  # noqa: BLE001 - an item whose == fails holds nothing
        return False


_KNOWING: dict[str, Callable[[Any, tuple], Any]] = {
    "argument-copy": argument_copy,
    "everything": everything,
    "first-option": first_option,
}


def _values(container: Any) -> Iterable[Any]:
    return container.values() if isinstance(container, dict) else container


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _state(value: Any) -> Any:
    """A comparable picture of a value's contents (objects by their attributes)."""
    if isinstance(value, list | tuple):
        return [_state(v) for v in value]
    if isinstance(value, dict):
        return {k: _state(v) for k, v in value.items()}
    if isinstance(value, random.Random):
        return value.getstate()
    if hasattr(value, "__dict__") and not isinstance(value, type | types.FunctionType):
        return (type(value).__name__, _state(vars(value)))
    return value


def _overwrite(target: Any, new: Any) -> None:
    """Make `target` hold `new`'s contents, in place."""
    if isinstance(target, list):
        target[:] = new
    elif isinstance(target, dict):
        target.clear()
        target.update(new)
    elif hasattr(target, "__dict__") and not isinstance(target, random.Random):
        vars(target).update(vars(new))


# -- grading the variants ----------------------------------------------------------------------------


@dataclass(frozen=True)
class VariantOutcome:
    """What one trivial variant of one exercise earned."""

    variant: str
    passed: tuple[str, ...]  # node ids of the checks it passed
    tests: int  # the exercise's checks in the inventory
    earned: float  # the points they earn, as grading scores them
    points: float  # the exercise's

    @property
    def share(self) -> float:
        return self.earned / self.points if self.points else 0.0


@dataclass(frozen=True)
class TrivialCheck:
    """Every trivial variant of one exercise, and the best of them."""

    exercise: Exercise
    outcomes: tuple[VariantOutcome, ...]
    seconds: float
    properties: dict[str, str] = field(default_factory=dict)  # node id -> what the check checks

    @property
    def best(self) -> VariantOutcome:
        return max(self.outcomes, key=lambda o: o.share)

    @property
    def problems(self) -> list[str]:
        best = self.best
        if best.share <= MAX_SHARE:
            return []
        return [
            f"the trivial answer '{best.variant}' earns {100 * best.share:.1f}% "
            f"(> {100 * MAX_SHARE:g}%): {points_text(best.earned)} of {points_text(best.points)} points, "
            f"by passing {len(best.passed)} of {best.tests} checks: make those checks fail it (begin each "
            "with grader.expect.expect_pinned on two inputs whose answers differ, or file a check that "
            "doing nothing passes under an edge promise, which earns only where the function computes)"
        ]


def check_trivial(
    root: Path,
    exercises: Sequence[Exercise],
    variants: Sequence[str] = tuple(VARIANTS),
    progress: Callable[[TrivialCheck], None] | None = None,
    jobs: int = 1,
) -> list[TrivialCheck]:
    """Grade every trivial variant of each of `exercises` (both suites, in-process); `progress` is told
    of each exercise as it is done, in the order given. With `jobs` > 1, exercises are graded that many
    at a time, each in a fresh process of its own (pytest sessions run in-process cannot share one)."""
    out = []
    with tempfile.TemporaryDirectory(prefix="optlab-trivial-") as scratch:
        _check_control(root, [e.id for e in exercises], Path(scratch))
        tasks = [(root, exercise, tuple(variants), Path(scratch)) for exercise in exercises]
        with _pool(jobs) as pool:
            for check in pool.map(_check_exercise, tasks) if pool else map(_check_exercise, tasks):
                if progress:
                    progress(check)
                out.append(check)
    return out


def _pool(jobs: int) -> contextlib.AbstractContextManager[ProcessPoolExecutor | None]:
    if jobs <= 1:
        return contextlib.nullcontext()
    # spawn: a fresh interpreter, never a fork of a process that may hold a pytest session's state
    return ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context("spawn"))


def _check_control(root: Path, ids: Sequence[int], scratch: Path) -> None:
    """The control: the same path with nothing replaced must pass everything, or a 0% proves nothing."""
    tests = tests_by_exercise(root)
    control = scratch / "control" / REFERENCE.name
    control.parent.mkdir()
    control.write_text(variant_source(_reference_source(root), [], "none"), encoding="utf-8")
    for exercise_id, passed in passed_checks(root, control, ids).items():
        if len(passed) != len(tests[exercise_id]):
            missed = sorted({t["nodeid"] for t in tests[exercise_id]} - set(passed))
            raise KitError(f"trivial answers: the unchanged reference fails {missed[0]} in-process")


def _check_exercise(task: tuple[Path, Exercise, tuple[str, ...], Path]) -> TrivialCheck:
    """Every variant of one exercise, graded (a task of check_trivial: its arguments in one tuple)."""
    root, exercise, variants, scratch = task
    started = time.monotonic()
    tests = tests_by_exercise(root)[exercise.id]
    promises = inventory_promises(load_inventory(root))
    source = _reference_source(root)
    outcomes = []
    for variant in variants:
        module = scratch / f"ex{exercise.id}-{variant}" / REFERENCE.name
        module.parent.mkdir()
        module.write_text(variant_source(source, exercise.functions, variant), encoding="utf-8")
        passed = passed_checks(root, module, [exercise.id])[exercise.id]
        earned = earned_points(exercise, tests, passed, promises)
        outcomes.append(VariantOutcome(variant, passed, len(tests), earned, exercise.points))
    properties = {t["nodeid"]: t["property"] for t in tests}
    return TrivialCheck(exercise, tuple(outcomes), time.monotonic() - started, properties)


def _reference_source(root: Path) -> str:
    return (root / REFERENCE).read_text(encoding="utf-8")


def passed_checks(root: Path, module: Path, exercises: Sequence[int]) -> dict[int, tuple[str, ...]]:
    """Grade `module` on the tests of `exercises` (both suites, in this process, no sandbox: only for the
    kit's own modules); per exercise, the node ids of the inventory's checks it passed."""
    tests = tests_by_exercise(root)
    mine = [t for e in exercises for t in tests[e]]
    files = sorted({(SUITES.index(t["suite"]), t["nodeid"].split("::")[0]) for t in mine})
    passed, reported, code = _run(root, [path for _, path in files], module)
    if code not in (0, 1) or (missing := {t["nodeid"] for t in mine} - reported):
        what = f"exit code {code}" if code not in (0, 1) else f"{len(missing)} checks did not run"
        raise KitError(f"grading {module.name} in-process failed ({what})")
    return {e: tuple(t["nodeid"] for t in tests[e] if t["nodeid"] in passed) for e in exercises}


def earned_points(
    exercise: Exercise, tests: Sequence[dict], passed: Iterable[str], promises: Mapping[str, Promise]
) -> float:
    """The points of `exercise` that passing the checks `passed` (node ids) of its inventory `tests` earns."""
    passed = set(passed)
    records = []
    for t in tests:
        ok = t["nodeid"] in passed
        outcome: TestOutcome = "passed" if ok else "failed"
        records.append(
            TestRecord(
                t["nodeid"], t["exercise"], t["suite"], ok, outcome, t["property"], "", t.get("promise", "")
            )
        )
    return sum(score.score for score in score_exercise(exercise, records, SUITES, promises))


def tests_by_exercise(root: Path) -> dict[int, list[dict]]:
    out: dict[int, list[dict]] = {}
    for test in load_inventory(root)["tests"]:
        out.setdefault(test["exercise"], []).append(test)
    return out


def variant_source(reference_source: str, functions: Iterable[str], variant: str) -> str:
    """The reference module's source with `functions` replaced by their `variant` (in-process only: it
    imports this module)."""
    return (
        reference_source.rstrip("\n")
        + "\n\n\nimport grader.authoring.trivial as _optlab_trivial  # noqa: E402\n"
        + f"_optlab_trivial.install(globals(), {list(functions)!r}, {variant!r})\n"
    )


class _Passed:
    """A pytest plugin that records the node ids of the suite tests that passed every stage."""

    def __init__(self) -> None:
        self.passed: set[str] = set()
        self.failed: set[str] = set()
        self.reported: set[str] = set()

    def pytest_runtest_logreport(self, report: Any) -> None:
        self.reported.add(report.nodeid)
        if report.when == "call" and report.passed:
            self.passed.add(report.nodeid)
        elif not report.passed:
            self.failed.add(report.nodeid)


def _run(root: Path, paths: Sequence[str], module: Path) -> tuple[set[str], set[str], int]:
    """(passed, reported, pytest's exit code) of one in-process run of the test files `paths`."""
    import pytest

    recorder = _Passed()
    args = [
        *[str(root / p) for p in paths],
        f"--submission={module}",
        f"--rootdir={root}",
        "--worker=inprocess",
        "-p", "no:cacheprovider", "-p", "no:randomly",
        "-q", "--no-header", "--tb=no", "-o", "addopts=", "--disable-warnings",
    ]  # fmt: skip
    saved = sys.modules.get("optimization_toolkit")
    try:
        code = int(_quietly(lambda: pytest.main(args, plugins=[recorder])))
    finally:
        if saved is not None:
            sys.modules["optimization_toolkit"] = saved
    return recorder.passed - recorder.failed, recorder.reported, code


def _quietly(run: Callable[[], Any]) -> Any:
    """Run with stdout silenced (pytest's own report of a trivial variant is noise here)."""
    import io

    with contextlib.redirect_stdout(io.StringIO()):
        return run()


def report_rows(checks: Sequence[TrivialCheck], header: bool = True) -> list[str]:
    """Per exercise: the largest share a trivial answer earns, which variant, and the checks it passed."""
    rows = [f"{'trivial answers':32} {'best':>6}  {'variant':17} checks passed"] if header else []
    for check in checks:
        best = check.best
        verdict = "ok" if not check.problems else "PROBLEM"
        rows.append(
            f"{check.exercise.label[:32]:32} {100 * best.share:>5.1f}%  {best.variant:17} "
            f"{len(best.passed)}/{best.tests}  {verdict}  ({check.seconds:.1f} s)"
        )
        for nodeid in best.passed:
            rows.append(f"    passes {nodeid}: {check.properties.get(nodeid, '')[:90]}")
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m grader.authoring.trivial [N ...]`: the trivial-answer check alone (all exercises by
    default)."""
    from grader.grading.grade import kit_manifest
    from grader.layout import find_root

    root = find_root(Path.cwd())
    ids = [int(a) for a in (sys.argv[1:] if argv is None else argv)]
    manifest = kit_manifest(root)
    chosen = [e for e in manifest.exercises if not ids or e.id in ids]
    print(report_rows([])[0], flush=True)
    checks = check_trivial(
        root,
        chosen,
        progress=lambda c: print("\n".join(report_rows([c], False)), flush=True),
        jobs=len(os.sched_getaffinity(0)),
    )
    return 1 if any(c.problems for c in checks) else 0


if __name__ == "__main__":
    raise SystemExit(main())
