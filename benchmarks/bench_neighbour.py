"""Benchmark of fairness in `grader batch -j 2` (issue 33): a slow but honest submission graded alone, and
beside a neighbour that keeps every CPU it may busy within every per-call bound. Prints figures (each
entry's score, wall and CPU seconds); asserts nothing. The two grades of the victim should be equal:
the budgets that decide points count CPU time, so a neighbour costs the victim wall time only.

    .venv/bin/python benchmarks/bench_neighbour.py [--exercise N ...] [--rounds 1]

The victim is the reference whose exercise 20 spends 40 ms of CPU in every call (about 3.5 s of the
visible suite's 30 s and 11 s of the hidden's, 20 s an exercise): within every budget, so all its points
are honest. The neighbour spends 2.5 s of CPU in the first call of every exercise (its calls' bound is
3 s), in each of its suites' workers at once: before issue 33 the exercise and suite budgets were
wall-clock, and a victim beside it could lose points it kept alone.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
REFERENCE = (KIT / "solutions" / "optimization_toolkit.py").read_text(encoding="utf-8")

VICTIM = """

import time as _time

_honest = {name: globals()[name] for name in ("call_cost", "breakeven_calls", "cheapest")}


def _slowly(name):
    def slow(*args, **kwargs):
        end = _time.process_time() + 0.04  # correct and slow: 40 ms of CPU per call
        while _time.process_time() < end:
            pass
        return _honest[name](*args, **kwargs)

    return slow


call_cost, breakeven_calls, cheapest = (_slowly(name) for name in _honest)
"""

NEIGHBOUR = """

import time as _time

_burnt = set()


def _burn_once(name, function):
    def burning(*args, **kwargs):
        if name not in _burnt:  # each exercise's first call in each worker: 2.5 s of its 3 s
            _burnt.add(name)
            end = _time.process_time() + 2.5
            while _time.process_time() < end:
                pass
        return function(*args, **kwargs)

    return burning


for _name in [n for n, f in list(globals().items()) if callable(f) and not n.startswith("_")]:
    if _name not in ("TabPolicy", "Meter", "Candidate") and not isinstance(globals()[_name], type):
        globals()[_name] = _burn_once(_name, globals()[_name])
"""


def batch(source: Path, out: Path, exercises: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds of every process it ran) of `grader batch -j 2` of `source`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    command = [sys.executable, "-m", "grader", "--root", str(KIT), "batch", str(source), "-j", "2"]
    command += ["-o", str(out / "grades.csv"), "--force", *exercises]
    started = time.perf_counter()
    run = subprocess.run(command, cwd=KIT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if run.returncode != 0:
        print(run.stdout[-2000:], run.stderr[-2000:], sep="\n")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def victims_grade(out: Path) -> tuple[str, dict[str, float]]:
    """The victim's total (grades.csv) and its entries' scores (its results.json)."""
    with open(out / "grades.csv", encoding="utf-8") as handle:
        rows = {row["file"]: row for row in csv.DictReader(handle)}
    total = next((row.get("total_points_earned", "") for key, row in rows.items() if "victim" in key), "")
    found = next((out / "grades-results").glob("*victim*/results.json"), None)
    document = json.loads(found.read_text()) if found else {"tests": []}
    return total, {t["name"]: t["score"] for t in document["tests"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercise", action="append", default=[], help="grade only these (repeatable)")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    exercises = [f"--exercise={e}" for e in args.exercise]
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="optlab-neighbour-") as scratch:
        root = Path(scratch)
        alone, beside = root / "alone", root / "beside"
        alone.mkdir()
        beside.mkdir()
        (alone / "victim.py").write_text(REFERENCE + VICTIM, encoding="utf-8")
        (beside / "victim.py").write_text(REFERENCE + VICTIM, encoding="utf-8")
        (beside / "neighbour.py").write_text(REFERENCE + NEIGHBOUR, encoding="utf-8")
        for round_ in range(args.rounds):
            grades = {}
            for name, source in (("alone", alone), ("beside the neighbour", beside)):
                out = root / f"out-{name.split()[0]}-{round_}"
                wall, cpu = batch(source, out, exercises)
                grades[name] = victims_grade(out)
                print(f"round {round_ + 1}, victim {name}: total {grades[name][0]}, batch {wall:.1f} s wall, "
                      f"{cpu:.1f} s CPU")  # fmt: skip
            (_, first), (_, second) = grades.values()
            changed = {
                k: (first.get(k), second.get(k))
                for k in first.keys() | second.keys()
                if first.get(k) != second.get(k)
            }
            print(
                f"round {round_ + 1}: the victim's entries",
                "are equal" if not changed else f"differ: {changed}",
            )


if __name__ == "__main__":
    main()
