"""Benchmarks of the suites and the grader: prints figures, asserts nothing.

    .venv/bin/python benchmarks/bench_grading.py [--repeat N]

- the visible suite against the reference as a student runs it (`python -m pytest` in the handout);
- visible + hidden against the reference, in-process and through the sandbox (the ratio), run as
  `grader grade` runs them (grader.grading.suites: no assertion rewriting, bytecode kept), interleaved;
- `grader grade` of a submission whose every exercise loops forever (bounded by the call timeout);
- the grader's peak memory (the test process and its children) for a full grading of the reference.
Each figure is the median of --repeat runs (default 3) on this machine (the ratio also from the bests).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))
PY = sys.executable


def run(args: list[str], env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    subprocess.run(args, cwd=KIT, check=False, capture_output=True, env=env)
    return time.perf_counter() - started


def pytest(*extra: str) -> list[str]:
    """The suites' command as `grader grade` runs it (grader.grading.suites), against the reference."""
    submission = f"--submission={KIT / 'solutions' / 'optimization_toolkit.py'}"
    plain = ["-p", "no:cacheprovider", "-p", "no:randomly", "--assert=plain"]
    return [PY, "-m", "pytest", "-q", *plain, submission, *extra]


def median(args: list[str], repeat: int, env: dict[str, str] | None = None) -> float:
    return statistics.median(run(args, env) for _ in range(repeat))


def side_by_side(commands: dict[str, list[str]], repeat: int, env: dict[str, str]) -> dict[str, list[float]]:
    """Each command run `repeat` times, interleaved, so a slower stretch of a shared machine hits all."""
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(repeat):
        for name, args in commands.items():
            times[name].append(run(args, env))
    return times


def endless_submission(folder: Path) -> Path:
    """The stub module with every exercise's stub replaced by an endless loop."""
    text = (KIT / "student" / "optimization_toolkit.py").read_text()
    looping = re.sub(r'raise NotImplementedError\("exercise [^"]*"\)', "while True:\n        pass", text)
    path = folder / "optimization_toolkit.py"
    path.write_text(looping)
    return path


def student_visible_run(repeat: int) -> float:
    """`python -m pytest` in the unpacked handout with the reference as the submission: the student's run
    (bytecode written as on a student's machine, after one run that writes it)."""
    from grader.packaging.handout import FOLDER, HANDOUT_ZIP, write_handout

    with tempfile.TemporaryDirectory() as scratch:
        with zipfile.ZipFile(write_handout(KIT, Path(scratch) / HANDOUT_ZIP)) as handout:
            handout.extractall(scratch)
        folder = Path(scratch) / FOLDER
        shutil.copy(KIT / "solutions" / "optimization_toolkit.py", folder / "optimization_toolkit.py")
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        args = [PY, "-m", "pytest", "-q"]
        subprocess.run(args, cwd=folder, check=False, capture_output=True, env=env)
        times = []
        for _ in range(repeat):
            started = time.perf_counter()
            subprocess.run(args, cwd=folder, check=False, capture_output=True, env=env)
            times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    repeat = parser.parse_args().repeat
    suites = ["tests/visible", "tests/hidden"]

    visible = student_visible_run(repeat)
    print(f"visible suite, reference, as a student runs it: {visible:6.2f} s  (target < 1 s, issue 16)")
    with tempfile.TemporaryDirectory() as cache:  # compiled once, as grader.grading.suites keeps the kit's
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(PYTHONPYCACHEPREFIX=cache, PYTHONHASHSEED="0")
        run(pytest(*suites), env)
        commands = {"in": pytest(*suites, "--worker=inprocess"), "out": pytest(*suites)}
        times = side_by_side(commands, repeat, env)
    inprocess, sandboxed = (statistics.median(times[k]) for k in ("in", "out"))
    best = min(times["out"]) / min(times["in"])
    print(f"visible + hidden, reference, in-process:    {inprocess:6.2f} s  (best {min(times['in']):.2f} s)")
    print(f"visible + hidden, reference, sandbox:       {sandboxed:6.2f} s  (best {min(times['out']):.2f} s)")
    ratios = f"{sandboxed / inprocess:.2f} x medians, {best:.2f} x bests"
    print(f"sandbox / in-process:                       {ratios} (target <= 1.3 x)")

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
