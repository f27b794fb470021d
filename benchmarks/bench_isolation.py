"""Benchmarks of the isolation layers and the time budgets: prints figures, asserts nothing.

    .venv/bin/python benchmarks/bench_isolation.py [--repeat N] [--skip-slow]

- a worker's start (sandbox, import of the reference, one call), with every layer this machine has and
  with each switchable layer off (OPTLAB_LAYERS_OFF), median of --repeat (default 15);
- one call of a started worker (the disk quota is checked at each answer: a statvfs of the scratch
  tmpfs with the mount layer, a walk of the scratch folder at most every 50 ms without it);
- `grader grade` of the reference with one exercise whose every call sleeps just under the per-call wall
  bound, then returns the right answer: total time and the points of every other exercise;
- the same with every exercise sleeping (bounded by the per-exercise and per-run budgets).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KIT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(KIT))

from grader.assignment.manifest import load_manifest  # noqa: E402
from grader.assignment.reference import read_reference  # noqa: E402
from grader.runtime.worker import load_module  # noqa: E402
from grader.sandbox import isolation  # noqa: E402
from grader.sandbox.limits import Limits  # noqa: E402
from grader.sandbox.student import sandboxed_student  # noqa: E402

REFERENCE = KIT / "solutions" / "optimization_toolkit.py"
SLEEP = Limits.call_seconds * Limits.wall_factor - 0.5  # just under the per-call wall bound


def worker_start(ref, off: str, repeat: int) -> float:
    os.environ[isolation.LAYERS_OFF] = off
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        student, _ = sandboxed_student(REFERENCE.read_text(), ref, ref, {"softmax": 8})
        student.softmax([0.0, 1.0])
        times.append(time.perf_counter() - started)
        student.close()
    os.environ.pop(isolation.LAYERS_OFF)
    return statistics.median(times) * 1000


def call_time(ref, off: str, calls: int = 2000) -> float:
    """Microseconds per call of a started worker (the disk quota is checked at every answer)."""
    os.environ[isolation.LAYERS_OFF] = off
    student, _ = sandboxed_student(REFERENCE.read_text(), ref, ref, {"softmax": 8})
    student.softmax([0.0, 1.0])
    started = time.perf_counter()
    for _ in range(calls):
        student.softmax([0.0, 1.0])
    elapsed = time.perf_counter() - started
    student.close()
    os.environ.pop(isolation.LAYERS_OFF)
    return elapsed / calls * 1e6


def sleeping(functions: list[str]) -> str:
    """The reference with each of `functions` sleeping SLEEP seconds before it answers, right."""
    source = REFERENCE.read_text() + "\n\nimport time as _bench_time\n"
    for name in functions:
        source += (
            f"\n_slow_{name} = {name}\n"
            f"def {name}(*args, **kwargs):\n"
            f"    _bench_time.sleep({SLEEP})\n"
            f"    return _slow_{name}(*args, **kwargs)\n"
        )
    return source


def grade(source: str) -> tuple[float, dict]:
    with tempfile.TemporaryDirectory() as scratch:
        path, out = Path(scratch) / "optimization_toolkit.py", Path(scratch) / "results.json"
        path.write_text(source)
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "grader", "grade", str(path), "-o", str(out)], cwd=KIT,
                       capture_output=True, check=False)  # fmt: skip
        return time.perf_counter() - started, json.loads(out.read_text())


def exercise_points(document: dict) -> dict[int, tuple[float, float]]:
    return {int(e["id"]): (e["score"], e["points"]) for e in document["extra_data"]["exercises"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--skip-slow", action="store_true", help="only the worker start figures")
    args = parser.parse_args()
    ref = load_module(REFERENCE, "bench_reference")
    print(isolation.machine_layers().summary())
    for label, off in (
        ("every layer", ""),
        ("without Landlock", "landlock"),
        ("without namespaces", "namespaces"),
        ("without the mount layer", "mounts"),
        ("without Landlock and namespaces", "landlock,namespaces"),
        ("without seccomp", "seccomp"),
        ("without the memory cgroup", "cgroup"),
        ("uid and rlimits alone", "landlock,namespaces,mounts,seccomp,cgroup"),
    ):
        print(f"worker start + 1 call, {label:32s} {worker_start(ref, off, args.repeat):7.1f} ms")
    for label, off in (("with the mount layer", ""), ("without (disk walked)", "mounts"),
                       ("uid and rlimits alone", "landlock,namespaces,mounts,seccomp,cgroup")):  # fmt: skip
        print(f"one call of a started worker, {label:25s} {call_time(ref, off):7.1f} us")
    if args.skip_slow:
        return
    manifest = load_manifest(KIT / "grader/exercises.toml", read_reference(REFERENCE, "reference"))
    functions = {e.id: list(e.functions) for e in manifest.exercises}
    seconds, document = grade(sleeping(functions[8]))
    others = {k: v for k, v in exercise_points(document).items() if k != 8}
    kept = sum(s for s, _ in others.values()), sum(m for _, m in others.values())
    print(f"exercise 8 sleeps {SLEEP:g} s per call: {seconds:.0f} s in all; exercise 8 earns "
          f"{exercise_points(document)[8][0]:g} / {exercise_points(document)[8][1]:g}, the others "
          f"{kept[0]:g} / {kept[1]:g}")  # fmt: skip
    everything = [name for names in functions.values() for name in names]
    seconds, document = grade(sleeping(everything))
    print(f"every exercise sleeps {SLEEP:g} s per call: {seconds:.0f} s in all; score {document['score']:g}")
    for exercise, (score, most) in sorted(exercise_points(document).items()):
        print(f"  exercise {exercise:2d}: {score:g} / {most:g}")


if __name__ == "__main__":
    main()
