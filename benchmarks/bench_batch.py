"""Benchmark of `grader batch`: throughput at -j 1 and -j 2, and the cost per submission beyond its tests.
Prints figures; asserts nothing.

    .venv/bin/python benchmarks/bench_batch.py [--count 60] [--jobs 1,2] [--exercise N ...]

The submissions are made in a temporary folder from the reference and the stubs, in a fixed mix: a
quarter correct (the reference), a third partial (the reference with a random third of the exercises'
functions put back to their stubs), a quarter stubs, the rest broken (a syntax error in one exercise,
which intake salvages around, or an import that fails, which costs every exercise). Each -j runs the
same folder into its own output folder, so nothing is skipped. Overhead per submission is its child's
wall time (batch.json) minus the grading's own time (results.json's execution_time): the interpreter,
imports and the CLI around `grade()`.
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from grader.grading.grade import kit_manifest  # noqa: E402

REFERENCE = (KIT / "solutions" / "optimization_toolkit.py").read_text(encoding="utf-8")
STUB = (KIT / "student" / "optimization_toolkit.py").read_text(encoding="utf-8")


def stub_sources(functions: list[str]) -> dict[str, str]:
    """Function name -> its stub's source (decorators included), from the student module."""
    tree = ast.parse(STUB)
    lines = STUB.splitlines(keepends=True)
    out = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name in functions:
            start = min([node.lineno, *(d.lineno for d in node.decorator_list)]) - 1
            out[node.name] = "".join(lines[start : node.end_lineno])
    return out


def make_class(folder: Path, count: int, seed: int = 0) -> dict[str, int]:
    """Write `count` submissions of mixed quality into `folder`; how many of each kind."""
    rng = random.Random(seed)
    functions = list(kit_manifest(KIT).functions)
    stubs = stub_sources(functions)
    kinds = ["correct"] * (count // 4) + ["partial"] * (count // 3) + ["stub"] * (count // 4)
    kinds += ["broken"] * (count - len(kinds))
    rng.shuffle(kinds)
    for index, kind in enumerate(kinds):
        if kind == "correct":
            text = REFERENCE
        elif kind == "partial":  # later definitions replace the reference's
            undone = rng.sample(functions, k=max(1, len(functions) // 3))
            text = REFERENCE + "\n\n" + "\n\n".join(stubs[name] for name in undone)
        elif kind == "stub":
            text = STUB
        elif index % 2:
            name = rng.choice(functions)
            text = REFERENCE.replace(f"def {name}(", f"def {name}((", 1)
        else:
            text = "import numpy\n" + REFERENCE
        (folder / f"student_{index:03d}_{kind}.py").write_text(text, encoding="utf-8")
    return {kind: kinds.count(kind) for kind in sorted(set(kinds))}


def run_batch(source: Path, out: Path, where: list[str], exercises: list[str]) -> float:
    """Wall seconds of one `grader batch` of `source` into `out`, on `where` (-j N or --cluster A)."""
    command = [sys.executable, "-m", "grader", "--root", str(KIT), "batch", str(source), *where]
    command += ["-o", str(out / "grades.csv"), *exercises]
    started = time.perf_counter()
    run = subprocess.run(command, cwd=KIT, capture_output=True, text=True)
    wall = time.perf_counter() - started
    if run.returncode != 0:
        print(run.stdout[-2000:], run.stderr[-2000:], sep="\n")
    return wall


def per_submission(out: Path) -> tuple[list[float], list[float], int]:
    """(child wall seconds, grading execution_time) of the completed ones, and how many did not complete."""
    walls, tests, failed = [], [], 0
    for record in sorted((out / "grades-results").glob("*/batch.json")):
        batch = json.loads(record.read_text())
        results = json.loads((record.parent / "results.json").read_text())
        if batch["status"] != "completed":
            failed += 1
            continue
        walls.append(batch["seconds"])
        tests.append(results["execution_time"])
    return walls, tests, failed


def report(jobs: int, wall: float, rate: float, figures: tuple[list[float], list[float], int]) -> None:
    walls, tests, failed = figures
    overhead = [w - t for w, t in zip(walls, tests, strict=True)]
    own = wall - sum(walls) / jobs
    print(f"-j {jobs}: {wall:7.1f} s wall, {rate:5.1f} submissions/min ({failed} not completed)")
    print(
        f"      per submission: {statistics.fmean(walls):5.2f} s wall,"
        f" {statistics.fmean(tests):5.2f} s grading (execution_time);"
        f" overhead {statistics.fmean(overhead):4.2f} s mean,"
        f" {statistics.median(overhead):4.2f} s median, {max(overhead):4.2f} s max"
    )
    print(f"      the batch's own time beyond its children: {own:5.1f} s; load now: {load()}")


def load() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--count", type=int, default=60)
    parser.add_argument("--jobs", default="1,2", help="comma-separated -j values (default 1,2)")
    parser.add_argument("--exercise", action="append", default=[], help="grade only exercise N")
    args = parser.parse_args()
    exercises = [f"--exercise={n}" for n in args.exercise]
    jobs = [int(j) for j in args.jobs.split(",")]

    print(f"machine: {os.cpu_count()} CPUs; load average (1/5/15 min) at start: {load()}")
    rates = {}
    with tempfile.TemporaryDirectory(prefix="optlab-bench-batch-") as scratch:
        source = Path(scratch) / "class"
        source.mkdir()
        mix = make_class(source, args.count)
        print(f"{args.count} submissions: {', '.join(f'{n} {kind}' for kind, n in mix.items())}")
        print(f"exercises: {', '.join(args.exercise) or 'all'}\n")
        for j in jobs:
            out = Path(scratch) / f"j{j}"
            wall = run_batch(source, out, ["-j", str(j)], exercises)
            walls, tests, failed = per_submission(out)
            rates[j] = 60 * args.count / wall
            report(j, wall, rates[j], per_submission(out))
    if 1 in rates:
        for j in (j for j in jobs if j != 1):
            print(f"\nspeed-up -j {j} over -j 1: {rates[j] / rates[1]:.2f} x")


if __name__ == "__main__":
    main()
