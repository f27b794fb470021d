"""Benchmarks of the suites and the grader: prints figures, asserts nothing.

    .venv/bin/python benchmarks/bench_grading.py [--repeat N]

- the visible suite alone against the reference (what a student runs often), in the sandbox;
- visible + hidden against the reference, in-process and through the sandbox (the ratio);
- `grader grade` of a submission whose every exercise loops forever (bounded by the call timeout);
- the grader's peak memory (the test process and its children) for a full grading of the reference.
Each figure is the median of --repeat runs (default 3) on this machine.
"""

from __future__ import annotations

import argparse
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
PY = sys.executable


def run(args: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(args, cwd=KIT, check=False, capture_output=True)
    return time.perf_counter() - started


def pytest(*extra: str) -> list[str]:
    return [PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]


def median(args: list[str], repeat: int) -> float:
    return statistics.median(run(args) for _ in range(repeat))


def endless_submission(folder: Path) -> Path:
    """The stub module with every exercise's stub replaced by an endless loop."""
    text = (KIT / "student" / "optimization_toolkit.py").read_text()
    looping = re.sub(r'raise NotImplementedError\("exercise [^"]*"\)', "while True:\n        pass", text)
    path = folder / "optimization_toolkit.py"
    path.write_text(looping)
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    suites = ["tests/visible", "tests/hidden"]

    visible = median(pytest("tests/visible"), repeat)
    inprocess = median(pytest(*suites, "--worker=inprocess"), repeat)
    sandboxed = median(pytest(*suites), repeat)
    print(f"visible suite, reference, sandbox:          {visible:6.2f} s  (target < 1 s, issue 16)")
    print(f"visible + hidden, reference, in-process:    {inprocess:6.2f} s")
    print(f"visible + hidden, reference, sandbox:       {sandboxed:6.2f} s  (target < 20 s; < 30 s graded)")
    print(f"sandbox / in-process:                       {sandboxed / inprocess:6.2f} x  (target <= 1.3 x)")

    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "results.json"
        grade_reference = [PY, "-m", "grader", "grade", "solutions/optimization_toolkit.py", "-o", str(out)]
        full = median(grade_reference, repeat)
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        run(grade_reference)
        peak = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
        endless = run([PY, "-m", "grader", "grade", str(endless_submission(Path(scratch))), "-o", str(out)])
    print(f"grader grade, reference (all suites):       {full:6.2f} s")
    print(f"grader grade, every exercise loops forever: {endless:6.2f} s  (target < 120 s)")
    print(f"peak RSS of a grading process:              {peak:6.0f} MB (target <= 300 MB)")


if __name__ == "__main__":
    main()
