"""Partial credit of one-bug submissions: the share of an exercise's points that a one-bug version of the
reference keeps (issue 18, item 3). Prints the distribution over a deterministic sample of mutants.

    .venv/bin/python benchmarks/bench_partial_credit.py [--per-exercise 6] [--exercise N ...] [--kit PATH]

A mutant changes one thing in one exercise function of the reference (an arithmetic or comparison
operator, a numeric constant, `and`/`or`, a boolean constant), the kind of slip a student makes; it is
graded in-process (`--worker inprocess`) by that exercise's visible and hidden tests of the kit at
--kit (default: this one), so two kits' suites (before and after a change) can be compared on the same
mutants. Killed mutants (share < 100%) are the interesting ones: how much of the exercise they keep.
"""

from __future__ import annotations

import argparse
import ast
import copy
import json
import signal
import statistics
import sys
import tempfile
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
TEST_SECONDS = 5.0  # CPU seconds per test before a mutant counts as never ending

SWAPS: dict[type, type] = {
    ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
    ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt, ast.Eq: ast.NotEq, ast.NotEq: ast.Eq,
    ast.And: ast.Or, ast.Or: ast.And,
}  # fmt: skip


def sites(fn: ast.FunctionDef) -> list[tuple[int, str]]:
    """(node index in ast.walk order, what changes) for every mutable spot of `fn`'s body."""
    out = []
    for i, node in enumerate(ast.walk(fn)):
        if isinstance(node, ast.BinOp | ast.BoolOp) and type(node.op) in SWAPS:
            out.append((i, f"{type(node.op).__name__} -> {SWAPS[type(node.op)].__name__}"))
        elif isinstance(node, ast.Compare) and type(node.ops[0]) in SWAPS:
            out.append((i, f"{type(node.ops[0]).__name__} -> {SWAPS[type(node.ops[0])].__name__}"))
        elif isinstance(node, ast.Constant) and type(node.value) in (int, float) and i > 0:
            out.append((i, f"{node.value!r} -> {node.value + 1!r}"))
        elif isinstance(node, ast.Constant) and type(node.value) is bool:
            out.append((i, f"{node.value} -> {not node.value}"))
    return out


def mutate(fn: ast.FunctionDef, index: int) -> ast.FunctionDef:
    fn = copy.deepcopy(fn)
    node = list(ast.walk(fn))[index]
    if isinstance(node, ast.BinOp | ast.BoolOp):
        node.op = SWAPS[type(node.op)]()
    elif isinstance(node, ast.Compare):
        node.ops[0] = SWAPS[type(node.ops[0])]()
    elif type(node.value) is bool:
        node.value = not node.value
    else:
        node.value = node.value + 1
    return fn


def mutants(source: str, functions: tuple[str, ...], per_exercise: int) -> list[tuple[str, str]]:
    """(description, module source) for an evenly spread sample of one-change mutants of `functions`."""
    tree = ast.parse(source)
    every = []
    for fn in tree.body:
        if isinstance(fn, ast.FunctionDef) and fn.name in functions:
            body = fn.body[1:] if ast.get_docstring(fn) is not None else fn.body
            docless = ast.FunctionDef(fn.name, fn.args, body, fn.decorator_list, fn.returns, fn.type_comment)
            docless = ast.fix_missing_locations(ast.copy_location(docless, fn))
            every += [(fn.name, docless, i, what) for i, what in sites(docless)]
    step = max(1, len(every) // per_exercise)
    out = []
    for name, fn, index, what in every[::step][:per_exercise]:
        text = ast.unparse(mutate(fn, index))
        out.append((f"{name}: {what}", source.rstrip("\n") + "\n\n\n" + text + "\n"))
    return out


def grade(kit: Path, module: Path, exercise: int) -> float:
    """The share of `exercise`'s checks in `kit`'s inventory that `module` passes (in this process)."""
    import contextlib
    import io

    import pytest

    tests = [
        t
        for t in json.loads((kit / "tests/inventory.json").read_text())["tests"]
        if t["exercise"] == exercise
    ]
    files = sorted({t["nodeid"].split("::")[0] for t in tests}, key=lambda f: "hidden" in f)

    class Passed:
        """Records what passed; a test that runs past TEST_SECONDS of CPU time (a mutant that never ends)
        stops the run: what did not run counts as failed."""

        def __init__(self) -> None:
            self.ok: set[str] = set()
            self.bad: set[str] = set()
            self.stopped = False

        @pytest.hookimpl(wrapper=True)
        def pytest_runtest_call(self, item):
            if self.stopped:
                pytest.exit("a test ran too long: the mutant never ends")

            def stop(*_):
                self.stopped = True
                raise TimeoutError("the mutant never ends")

            previous = signal.signal(signal.SIGVTALRM, stop)
            signal.setitimer(signal.ITIMER_VIRTUAL, TEST_SECONDS)
            try:
                return (yield)
            finally:
                signal.setitimer(signal.ITIMER_VIRTUAL, 0)
                signal.signal(signal.SIGVTALRM, previous)

        def pytest_runtest_logreport(self, report) -> None:
            (
                self.ok
                if report.when == "call" and report.passed
                else self.bad
                if not report.passed
                else set()
            ).add(report.nodeid)

    recorder = Passed()
    args = [
        *[str(kit / f) for f in files], f"--submission={module}", f"--rootdir={kit}", "--worker=inprocess",
        "-p", "no:cacheprovider", "-p", "no:randomly", "-q", "--tb=no", "-o", "addopts=",
        "--disable-warnings",
    ]  # fmt: skip
    with contextlib.redirect_stdout(io.StringIO()):
        pytest.main(args, plugins=[recorder])
    return sum(t["nodeid"] in recorder.ok - recorder.bad for t in tests) / len(tests)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--per-exercise", type=int, default=6)
    parser.add_argument("--exercise", type=int, action="append")
    parser.add_argument(
        "--kit", type=Path, default=KIT, help="the kit whose suites grade (default: this one)"
    )
    parser.add_argument("--json", type=Path, help="write every mutant's share here")
    args = parser.parse_args()
    kit = args.kit.resolve()
    sys.path.insert(0, str(kit))
    import tomllib

    manifest = tomllib.loads((KIT / "grader/exercises.toml").read_text())["exercise"]
    source = (KIT / "solutions/optimization_toolkit.py").read_text()
    rows = []
    with tempfile.TemporaryDirectory(prefix="optlab-partial-") as scratch:
        for exercise in manifest:
            if args.exercise and exercise["id"] not in args.exercise:
                continue
            for n, (what, text) in enumerate(
                mutants(source, tuple(exercise["functions"]), args.per_exercise)
            ):
                module = Path(scratch) / f"ex{exercise['id']}-{n}" / "optimization_toolkit.py"
                module.parent.mkdir()
                module.write_text(text, encoding="utf-8")
                share = grade(kit, module, exercise["id"])
                rows.append({"exercise": exercise["id"], "mutant": what, "share": share})
                print(f"{exercise['id']:>3} {100 * share:6.1f}%  {what}", flush=True)
    killed = [r["share"] for r in rows if r["share"] < 1.0]
    print(f"\n{len(rows)} mutants, {len(killed)} killed; of the killed, the share kept:")
    if killed:
        quartiles = statistics.quantiles(killed, n=4, method="inclusive") if len(killed) > 1 else killed * 3
        print(f"  mean {100 * statistics.fmean(killed):.1f}%, median {100 * statistics.median(killed):.1f}%, "
              f"quartiles {', '.join(f'{100 * q:.1f}%' for q in quartiles)}")  # fmt: skip
        buckets = {"0%": 0, "(0, 25%]": 0, "(25, 50%]": 0, "(50, 75%]": 0, "(75, 100%)": 0}
        for share in killed:
            label = "0%" if share == 0 else list(buckets)[1 + min(3, int((share - 1e-9) * 4))]
            buckets[label] += 1
        for label, count in buckets.items():
            print(f"  {label:>11}: {count}")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
